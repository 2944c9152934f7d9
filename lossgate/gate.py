"""The gate: per-suite statistics → PASS / FAIL / INCONCLUSIVE, and the overall verdict.

Rules (for the suites the plan gates; `gate: false` suites are reported, never decide):
  FAIL          a regression significant at α after Holm's correction across the gated suites
                (one-sided p for H0: Δ ≥ 0), AND the estimated regression is beyond the margin
                (Δ̂ < −δ). A significant but smaller regression is not a FAIL: that is what the
                margin is for.
  PASS          the one-sided (1−α) lower confidence bound of Δ is above −δ. Overall PASS needs
                every gated suite to PASS: an intersection–union test, which needs no correction.
  INCONCLUSIVE  anything else — including a suite with no logs, too few items or clusters, or an
                error rate above `max_error_rate` in either build. Never PASS on missing data.
Overall: FAIL if any gated suite FAILs, PASS if all PASS, else INCONCLUSIVE.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from lossgate.plan import Plan, SuitePlan
from lossgate.runs import TOKEN_METADATA, LogRun, Runs
from lossgate.serving.fingerprint import build_key
from lossgate.stats import (
    BucketTable,
    Comparison,
    FlipSummary,
    LengthTrend,
    MeanEstimate,
    Nondeterminism,
    PowerPlan,
    bucket_deltas,
    clustered_mean,
    compare_builds,
    flip_summary,
    holm,
    length_trend,
    nondeterminism,
    power_plan,
    suite_arrays,
)
from lossgate.stats.buckets import (
    ClusterDelta,
    cluster_deltas,
    power_of_two_bucket,
    prefix_reuse_bucket,
)
from lossgate.stats.speed import TimeRatio, time_ratio

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
EXIT_CODES = {PASS: 0, FAIL: 1, INCONCLUSIVE: 2}
EXIT_ERROR = 3
WORST_ITEMS = 10


@dataclass(frozen=True)
class ErrorSummary:
    baseline_errored: int
    baseline_total: int
    candidate_errored: int
    candidate_total: int
    examples: tuple[str, ...] = ()

    @property
    def baseline_rate(self) -> float:
        return self.baseline_errored / self.baseline_total if self.baseline_total else float("nan")

    @property
    def candidate_rate(self) -> float:
        return self.candidate_errored / self.candidate_total if self.candidate_total else float("nan")


@dataclass(frozen=True)
class WorstItem:
    sample_id: str
    cluster: str
    baseline_mean: float
    candidate_mean: float
    delta: float
    log_path: str  # a candidate log where the item scored its lowest
    epoch: int


@dataclass(frozen=True)
class SuiteResult:
    suite: str
    gated: bool
    verdict: str
    reasons: tuple[str, ...]
    margin: float  # δ in score units
    baseline: MeanEstimate | None = None
    candidate: MeanEstimate | None = None
    comparison: Comparison | None = None
    holm_pvalue: float = float("nan")
    power: PowerPlan | None = None
    nondeterminism: Nondeterminism | None = None
    flips: FlipSummary | None = None
    buckets: tuple[BucketTable, ...] = ()
    clusters: tuple[ClusterDelta, ...] = ()
    speed: TimeRatio | None = None
    trend: LengthTrend | None = None
    errors: ErrorSummary | None = None
    worst_items: tuple[WorstItem, ...] = ()
    logs: tuple[LogRun, ...] = ()


@dataclass(frozen=True)
class BuildInfo:
    build: str
    models: tuple[str, ...]
    base_urls: tuple[str, ...]
    fingerprints: tuple[dict, ...]  # distinct lossgate_build fingerprints found in the logs
    n_logs: int


@dataclass(frozen=True)
class GateResult:
    verdict: str
    reasons: tuple[str, ...]
    suites: tuple[SuiteResult, ...]
    builds: tuple[BuildInfo, ...]
    alpha: float
    power: float
    max_error_rate: float
    plan_source: str
    warnings: tuple[str, ...] = ()
    report_dir: str | None = field(default=None, compare=False)
    # The logprob divergence probe (lossgate.fidelity.FidelitySummary), shown beside the verdict;
    # it never gates.
    fidelity: Any = None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]


def _errors(frame: pd.DataFrame) -> ErrorSummary:
    counts = {}
    for build in ("baseline", "candidate"):
        rows = frame[frame["build"] == build]
        counts[build] = (int(rows["errored"].sum()), len(rows))
    bad = frame[frame["errored"]]
    examples = tuple(
        f"{r.build} {r.run} sample {r.sample_id} epoch {r.epoch}: {r.error} ({r.log_path})"
        for r in bad.head(5).itertuples()
    )
    return ErrorSummary(*counts["baseline"], *counts["candidate"], examples=examples)


def _worst_items(frame: pd.DataFrame, arrays, deltas: np.ndarray) -> tuple[WorstItem, ...]:
    order = [i for i in np.argsort(deltas, kind="stable") if np.isfinite(deltas[i]) and deltas[i] < 0]
    base, cand = arrays.item_means("baseline"), arrays.item_means("candidate")
    cand_rows = frame[(frame["build"] == "candidate") & frame["score"].notna()]
    out = []
    for i in order[:WORST_ITEMS]:
        sid = arrays.items["sample_id"].iloc[i]
        rows = cand_rows[cand_rows["sample_id"] == sid].sort_values(["score", "run", "epoch"])
        first = rows.iloc[0] if len(rows) else None
        out.append(
            WorstItem(
                sample_id=str(sid),
                cluster=str(arrays.items["cluster"].iloc[i]),
                baseline_mean=float(base[i]),
                candidate_mean=float(cand[i]),
                delta=float(deltas[i]),
                log_path=str(first["log_path"]) if first is not None else "",
                epoch=int(first["epoch"]) if first is not None else 0,
            )
        )
    return tuple(out)


def _bucket_variance(comparison: Comparison, plan: Plan) -> dict[str, float]:
    """Whole-run drift moves every bucket and cluster alike: each carries the run-level variance."""
    return dict(run_variance=comparison.se_runs**2, run_df=comparison.run_variance.df or np.inf,
                alpha=plan.alpha)


def _bucket_tables(arrays, splan: SuitePlan, plan: Plan, comparison: Comparison) -> tuple[BucketTable, ...]:
    items = arrays.items
    kwargs = _bucket_variance(comparison, plan)
    tables = []
    length = items.get("length_bucket")
    if length is not None and (length.fillna(0) > 0).any():
        values = length.where(length > 0).map(lambda v: None if pd.isna(v) else int(v))
        tables.append(bucket_deltas(arrays, "length_bucket", values, **kwargs))
    if "output_tokens_baseline" in items and items["output_tokens_baseline"].notna().any():
        edges = power_of_two_bucket(items["output_tokens_baseline"])
        values = [None if not np.isfinite(e) else f"≤{int(e)}" for e in edges]
        tables.append(bucket_deltas(arrays, "output_tokens (baseline)", values, **kwargs))
    if "prefix_tokens" in items and "input_tokens" in items:
        values = prefix_reuse_bucket(items["prefix_tokens"], items["input_tokens"])
        # one bucket (a suite without multi-turn or repeated requests) would only repeat Δ
        if len({v for v in values if v is not None}) >= 2:
            tables.append(bucket_deltas(arrays, "prefix_reuse", values, **kwargs))
    for name in dict.fromkeys((*plan.bucket_fields, *splan.bucket_fields)):
        if name in items and items[name].notna().any():
            values = items[name].map(lambda v: None if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
            tables.append(bucket_deltas(arrays, name, values, **kwargs))
    return tuple(tables)


def _trend(arrays) -> LengthTrend | None:
    items = arrays.items
    for name in ("length_bucket", "input_tokens"):
        if name in items:
            values = pd.to_numeric(items[name], errors="coerce")
            if values[values > 0].nunique() >= 2:
                return length_trend(arrays, name, values.to_numpy(dtype=float))
    return None


def _suite_statistics(frame: pd.DataFrame, splan: SuitePlan, plan: Plan, logs: tuple[LogRun, ...]) -> SuiteResult:
    attributes = (*TOKEN_METADATA, *plan.bucket_fields, *splan.bucket_fields)
    arrays = suite_arrays(frame, attributes=tuple(dict.fromkeys(attributes)))
    errors = _errors(frame)
    comparison = compare_builds(
        arrays, margin=splan.margin, alpha=plan.alpha, permutations=plan.permutations, seed=plan.seed
    )
    rv = comparison.run_variance
    mean_kwargs = dict(confidence_level=1 - plan.alpha, extra_df=rv.df or np.inf)
    baseline = clustered_mean(arrays.item_means("baseline"), arrays.cluster_codes,
                              extra_variance=rv.tau2 / len(arrays.baseline_runs), **mean_kwargs)
    candidate = clustered_mean(arrays.item_means("candidate"), arrays.cluster_codes,
                               extra_variance=rv.tau2 / len(arrays.candidate_runs), **mean_kwargs)
    deltas = arrays.item_deltas()
    return SuiteResult(
        suite=splan.name,
        gated=splan.gate,
        verdict=INCONCLUSIVE,  # decided in evaluate(), after Holm across suites
        reasons=(),
        margin=splan.margin,
        baseline=baseline,
        candidate=candidate,
        comparison=comparison,
        power=power_plan(comparison, alpha=plan.alpha, power=plan.power),
        nondeterminism=nondeterminism(arrays, confidence_level=1 - plan.alpha),
        flips=flip_summary(arrays, confidence_level=1 - plan.alpha) if arrays.binary else None,
        buckets=_bucket_tables(arrays, splan, plan, comparison),
        clusters=cluster_deltas(arrays, **_bucket_variance(comparison, plan)),
        speed=time_ratio(frame, confidence_level=1 - 2 * plan.alpha),
        trend=_trend(arrays),
        errors=errors,
        worst_items=_worst_items(frame, arrays, deltas),
        logs=logs,
    )


def _pts(x: float) -> str:
    return f"{x * 100:+.1f} pts"


def suite_verdict(comparison: Comparison, holm_pvalue: float, alpha: float) -> str:
    """The rule for one suite with usable data (error rates and missing data are checked apart)."""
    if holm_pvalue <= alpha and comparison.statistic < -comparison.margin:
        return FAIL
    if comparison.noninferior:
        return PASS
    return INCONCLUSIVE


def _decide(result: SuiteResult, holm_p: float, plan: Plan) -> SuiteResult:
    reasons: list[str] = []
    c, e = result.comparison, result.errors
    if c is None:
        return replace(result, verdict=INCONCLUSIVE, reasons=("no logs for this suite",))
    if e is not None:
        for build, rate in (("baseline", e.baseline_rate), ("candidate", e.candidate_rate)):
            if rate > plan.max_error_rate:
                reasons.append(f"{build} error rate {rate:.1%} exceeds max_error_rate {plan.max_error_rate:.1%}")
    if c.n_items == 0:
        reasons.append("no item has a valid score in both builds")
    elif not np.isfinite(c.standard_error):
        reasons.append(f"too few clusters ({c.n_clusters}) to estimate the standard error")
    if reasons:
        return replace(result, verdict=INCONCLUSIVE, reasons=tuple(reasons), holm_pvalue=holm_p)
    delta, margin = c.statistic, c.margin
    verdict = suite_verdict(c, holm_p, plan.alpha)
    if verdict == FAIL:
        reasons.append(
            f"regression {_pts(delta)} is significant (Holm-adjusted p = {holm_p:.3g} ≤ α = {plan.alpha:g}) "
            f"and beyond the margin of {margin * 100:.1f} pts"
        )
    elif verdict == PASS:
        reasons.append(
            f"lower {1 - plan.alpha:.0%} bound {_pts(c.lower_bound)} is above −{margin * 100:.1f} pts"
        )
    else:
        if holm_p <= plan.alpha:
            reasons.append(
                f"significant regression {_pts(delta)} (Holm p = {holm_p:.3g}) but within the margin of "
                f"{margin * 100:.1f} pts, and its bound {_pts(c.lower_bound)} does not clear −{margin * 100:.1f} pts"
            )
        else:
            reasons.append(
                f"lower {1 - plan.alpha:.0%} bound {_pts(c.lower_bound)} does not clear −{margin * 100:.1f} pts"
            )
        p = result.power
        if p is not None:
            need = []
            if p.items_needed is not None:
                need.append(f"≈{p.items_needed} items at the current runs")
            if p.runs_needed is not None:
                need.append(f"≈{p.runs_needed} runs per build at the current items")
            reasons.append(
                f"MDE {p.mde * 100:.1f} pts vs margin {margin * 100:.1f} pts; to decide at the margin with "
                f"power {p.power:.0%}: " + (" or ".join(need) if need else "more items AND more runs")
            )
    return replace(result, verdict=verdict, reasons=tuple(reasons), holm_pvalue=holm_p)


def evaluate(runs: Runs, plan: Plan) -> GateResult:
    """All statistics for every suite, then the verdicts."""
    names = list(dict.fromkeys([*plan.suite_names, *runs.suites]))
    raw: list[SuiteResult] = []
    for name in names:
        splan = plan.suite(name)
        if name not in runs.suites:
            raw.append(SuiteResult(suite=name, gated=splan.gate, verdict=INCONCLUSIVE,
                                   reasons=("no logs for this suite",), margin=splan.margin))
            continue
        frame = runs.frame[runs.frame["suite"] == name]
        logs = tuple(lg for lg in runs.logs if lg.suite == name)
        raw.append(_suite_statistics(frame, splan, plan, logs))

    # Holm across the gated suites; a gated suite without a p-value still counts in the family
    gated = [r for r in raw if r.gated]
    pvals = [r.comparison.pvalue if r.comparison is not None and np.isfinite(r.comparison.pvalue) else 1.0 for r in gated]
    adjusted = dict(zip([r.suite for r in gated], holm(pvals), strict=True))
    decided = []
    for r in raw:
        if r.gated:
            decided.append(_decide(r, float(adjusted[r.suite]), plan))
            continue
        # A diagnostic suite is outside the Holm family: its would-be verdict uses its own p-value,
        # and it records no Holm p-value that a reader could take for part of the gate.
        p = r.comparison.pvalue if r.comparison is not None else float("nan")
        decided.append(replace(_decide(r, float(p), plan), holm_pvalue=float("nan")))

    gated = [r for r in decided if r.gated]
    reasons: list[str] = []
    if not gated:
        verdict = INCONCLUSIVE
        reasons.append("the plan gates no suite that has logs")
    elif any(r.verdict == FAIL for r in gated):
        verdict = FAIL
        reasons += [f"{r.suite}: FAIL" for r in gated if r.verdict == FAIL]
    elif all(r.verdict == PASS for r in gated):
        verdict = PASS
        reasons.append(f"all {len(gated)} gated suite(s) are non-inferior at their margins")
    else:
        verdict = INCONCLUSIVE
        reasons += [f"{r.suite}: {'; '.join(r.reasons)}" for r in gated if r.verdict == INCONCLUSIVE]

    builds = []
    for build in ("baseline", "candidate"):
        logs = [lg for lg in runs.logs if lg.build == build]
        prints: dict[str, dict] = {}
        for lg in logs:
            if lg.fingerprint is not None:
                prints.setdefault(build_key(lg.fingerprint), lg.fingerprint)
        builds.append(BuildInfo(
            build=build,
            models=tuple(sorted({lg.model for lg in logs})),
            base_urls=tuple(sorted({lg.model_base_url for lg in logs if lg.model_base_url})),
            fingerprints=tuple(prints.values()),
            n_logs=len(logs),
        ))
    return GateResult(
        verdict=verdict,
        reasons=tuple(reasons),
        suites=tuple(decided),
        builds=tuple(builds),
        alpha=plan.alpha,
        power=plan.power,
        max_error_rate=plan.max_error_rate,
        plan_source=plan.source,
        warnings=runs.warnings,
    )
