"""Gate plans: which suites to run and gate, with what margin, at what α — read from YAML.

A plan is the reviewable contract of a gate: `evals/default.yaml` documents every key. Both
`lossgate compare` (statistics only) and `lossgate run` (which also executes the suites) read it.
Margins are in absolute points on the 0–100 scale (score 1.0 = 100 points); internally they are
kept in score units (points / 100).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml


class PlanError(ValueError):
    """A gate plan that cannot be used, with the file and key named."""


SUITE_KEYS = {
    "margin", "gate", "score_key", "scorer", "task_args", "limit", "epochs", "bucket_fields", "generate",
}
TOP_KEYS = {
    "alpha", "power", "max_error_rate", "bucket_fields", "permutations", "seed", "runs",
    "max_connections", "defaults", "suites", "description", "generate", "retry_attempts",
    "max_retries", "request_timeout",
}


@dataclass(frozen=True)
class SuitePlan:
    name: str
    margin: float = 0.03  # δ in score units (3 points)
    gate: bool = True  # False: reported as a diagnostic, never decides the verdict
    score_key: str | None = None  # key of a dict-valued score (e.g. "resolved")
    scorer: str | None = None  # which scorer's value is gated (default: the log's first)
    task_args: dict[str, Any] = field(default_factory=dict)
    limit: int | None = None
    epochs: int = 1
    bucket_fields: tuple[str, ...] = ()
    generate: dict[str, Any] = field(default_factory=dict)  # overrides the plan's `generate`

    @property
    def margin_points(self) -> float:
        return self.margin * 100


@dataclass(frozen=True)
class Plan:
    alpha: float = 0.05
    power: float = 0.8
    max_error_rate: float = 0.05
    bucket_fields: tuple[str, ...] = ()
    permutations: int = 2000
    seed: int = 0
    runs_baseline: int = 2
    runs_candidate: int = 2
    max_connections: int = 4
    # Generation settings for every request (Inspect GenerateConfig fields); a run's seed is
    # `seed + k` so runs of one build differ as real runs do.
    generate: dict[str, Any] = field(default_factory=dict)
    retry_attempts: int = 2  # eval-set retries of an unfinished log within one `lossgate run`
    max_retries: int = 3  # retries of one request (a dead server fails fast, then resumes on re-run)
    request_timeout: int = 900  # seconds per request: long prompts prefill slowly on a CPU
    defaults: SuitePlan = field(default_factory=lambda: SuitePlan(name="*"))
    suites: tuple[SuitePlan, ...] = ()  # empty: gate every suite found in the logs
    source: str = "built-in defaults"

    def suite(self, name: str) -> SuitePlan:
        for s in self.suites:
            if s.name == name:
                return s
        return replace(self.defaults, name=name)

    def generate_for(self, suite: SuitePlan) -> dict[str, Any]:
        """The generate settings of one suite's runs: the plan's, overridden by the suite's."""
        return {**self.generate, **suite.generate}

    @property
    def suite_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.suites)

    def restricted(self, names: list[str]) -> Plan:
        """The plan limited to `names` (suites not listed keep the defaults)."""
        wanted = set(names)
        kept = tuple(s for s in self.suites if s.name in wanted)
        extra = tuple(replace(self.defaults, name=n) for n in names if n not in {s.name for s in kept})
        return replace(self, suites=kept + extra)


def _check_keys(where: str, data: dict, allowed: set[str]) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise PlanError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")


def _number(where: str, value: Any, low: float, high: float, *, integer: bool = False) -> Any:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not low <= value <= high:
        raise PlanError(f"{where} must be {'an integer' if integer else 'a number'} in [{low}, {high}], got {value!r}")
    return value


def _suite(where: str, name: str, data: dict, base: SuitePlan) -> SuitePlan:
    if not isinstance(data, dict):
        raise PlanError(f"{where}: expected a mapping of suite keys, got {type(data).__name__}")
    _check_keys(where, data, SUITE_KEYS)
    out = replace(base, name=name)
    if "margin" in data:
        out = replace(out, margin=_number(f"{where}.margin (points)", data["margin"], 0.0, 100.0) / 100)
        if out.margin <= 0:
            raise PlanError(f"{where}.margin must be > 0 points")
    if "gate" in data:
        if not isinstance(data["gate"], bool):
            raise PlanError(f"{where}.gate must be true or false")
        out = replace(out, gate=data["gate"])
    for key in ("score_key", "scorer"):
        if key in data:
            if data[key] is not None and not isinstance(data[key], str):
                raise PlanError(f"{where}.{key} must be a string")
            out = replace(out, **{key: data[key]})
    if "task_args" in data:
        if not isinstance(data["task_args"], dict):
            raise PlanError(f"{where}.task_args must be a mapping")
        out = replace(out, task_args=dict(data["task_args"]))
    if "limit" in data:
        limit = data["limit"]
        out = replace(out, limit=None if limit is None else _number(f"{where}.limit", limit, 1, 10**9, integer=True))
    if "epochs" in data:
        out = replace(out, epochs=_number(f"{where}.epochs", data["epochs"], 1, 1000, integer=True))
    if "bucket_fields" in data:
        out = replace(out, bucket_fields=_names(f"{where}.bucket_fields", data["bucket_fields"]))
    if "generate" in data:
        out = replace(out, generate=_generate(f"{where}.generate", data["generate"]))
    return out


GENERATE_KEYS = {
    "temperature", "top_p", "top_k", "max_tokens", "seed", "frequency_penalty", "presence_penalty",
    "stop_seqs",
}


def _generate(where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PlanError(f"{where} must be a mapping of generation settings")
    _check_keys(where, value, GENERATE_KEYS)
    return dict(value)


def _names(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PlanError(f"{where} must be a list of metadata field names")
    return tuple(value)


def parse_plan(data: dict, source: str = "<plan>") -> Plan:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PlanError(f"{source}: a plan is a YAML mapping")
    _check_keys(source, data, TOP_KEYS)
    plan = Plan(source=source)
    if "alpha" in data:
        plan = replace(plan, alpha=_number(f"{source}: alpha", data["alpha"], 1e-6, 0.5))
    if "power" in data:
        plan = replace(plan, power=_number(f"{source}: power", data["power"], 0.5, 0.999))
    if "max_error_rate" in data:
        plan = replace(plan, max_error_rate=_number(f"{source}: max_error_rate", data["max_error_rate"], 0.0, 1.0))
    if "bucket_fields" in data:
        plan = replace(plan, bucket_fields=_names(f"{source}: bucket_fields", data["bucket_fields"]))
    if "permutations" in data:
        plan = replace(plan, permutations=_number(f"{source}: permutations", data["permutations"], 0, 10**6, integer=True))
    if "seed" in data:
        plan = replace(plan, seed=_number(f"{source}: seed", data["seed"], 0, 2**32 - 1, integer=True))
    if "max_connections" in data:
        plan = replace(plan, max_connections=_number(f"{source}: max_connections", data["max_connections"], 1, 10**4, integer=True))
    if "generate" in data:
        plan = replace(plan, generate=_generate(f"{source}: generate", data["generate"]))
    for key, high in (("retry_attempts", 100), ("max_retries", 100), ("request_timeout", 86400)):
        if key in data:
            plan = replace(plan, **{key: _number(f"{source}: {key}", data[key], 0, high, integer=True)})
    if "runs" in data:
        runs = data["runs"]
        if not isinstance(runs, dict):
            raise PlanError(f"{source}: runs must be a mapping {{baseline: R, candidate: R}}")
        _check_keys(f"{source}: runs", runs, {"baseline", "candidate"})
        plan = replace(
            plan,
            runs_baseline=_number(f"{source}: runs.baseline (an A/A pair at least)", runs.get("baseline", 2), 2, 1000, integer=True),
            runs_candidate=_number(f"{source}: runs.candidate", runs.get("candidate", 2), 1, 1000, integer=True),
        )
    if "defaults" in data:
        plan = replace(plan, defaults=_suite(f"{source}: defaults", "*", data["defaults"], plan.defaults))
    suites = data.get("suites") or {}
    if not isinstance(suites, dict):
        raise PlanError(f"{source}: suites must be a mapping of suite name -> settings")
    plan = replace(
        plan,
        suites=tuple(
            _suite(f"{source}: suites.{name}", str(name).removeprefix("lossgate/"), body or {}, plan.defaults)
            for name, body in suites.items()
        ),
    )
    return plan


def load_plan(path: str | Path | None) -> Plan:
    """Read a plan file; None gives the built-in defaults (gate every suite found)."""
    if path is None:
        return Plan()
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise PlanError(f"cannot read gate plan {path}: {err.strerror}") from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise PlanError(f"{path}: not valid YAML: {err}") from err
    return parse_plan(data, source=str(path))
