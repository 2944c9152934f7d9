"""Inspect logs of two builds → one tidy DataFrame, refusing inputs the statistics must not trust.

One log file is one run of one suite by one build. The loader reads every header first (cheap),
refuses early on logs that are unfinished, duplicated, malformed or too few, then reads samples and
checks that both builds answered the same questions: same sample ids, same inputs and targets
(hashed), same task version. Problems are collected and reported together, each naming the files
and samples involved, so one fix-and-retry cycle is enough.

Rows of the frame: one per (log, sample, epoch):
  suite, sample_id, epoch, build, run, score (float in [0,1], NaN when errored), errored, error,
  cluster, <TOKEN_METADATA>, output_tokens, working_time (s), <plan bucket fields>, log_path
Errored samples (a sample error, or no score) are kept as rows with NaN scores: the statistics
exclude them pairwise and the gate counts them against `max_error_rate`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from lossgate.plan import Plan
from lossgate.serving.fingerprint import build_key

BUILDS = ("baseline", "candidate")
# Fields no statistic needs; skipping them makes large .eval logs much cheaper to read.
_SKIP_FIELDS = {"messages", "events", "store", "attachments", "timelines", "events_data"}
# Inspect names .json logs with a leading timestamp; other .json files in a log dir are not logs.
_JSON_LOG_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}.*\.json$")
_LETTER_SCORES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_WORD_SCORES = {"yes": 1.0, "true": 1.0, "correct": 1.0, "no": 0.0, "false": 0.0, "incorrect": 0.0}
_MAX_EXAMPLES = 5
# Summaries truncate inputs at 5,120 characters; hash a shorter prefix so both forms agree.
_HASH_PREFIX = 4096
# Samples per log whose complete input is read and hashed as well.
_FULL_HASH_SAMPLES = 8


# Token counts a task records in sample metadata; the report buckets Δ by them.
TOKEN_METADATA = ("length_bucket", "input_tokens", "prefix_tokens")
FRAME_COLUMNS = frozenset({
    "suite", "sample_id", "epoch", "build", "run", "score", "errored", "error", "cluster",
    *TOKEN_METADATA, "output_tokens", "working_time", "log_path",
})


class RunsError(ValueError):
    """Logs that cannot be compared; `problems` lists each reason with files and samples named."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("cannot compare these logs:\n" + "\n".join(f"  - {p}" for p in problems))


class ScoreError(ValueError):
    pass


@dataclass(frozen=True)
class LogRun:
    """What one log file says about itself."""

    path: str
    build: str
    suite: str
    run: str  # "<build>-<k>", k ordered by creation time within suite and build
    task: str
    eval_id: str
    status: str
    created: str
    model: str
    model_base_url: str | None
    task_version: str
    epochs: int
    fingerprint: dict[str, Any] | None  # eval.metadata["lossgate_build"], if the run recorded it
    n_rows: int = 0
    n_errored: int = 0


@dataclass(frozen=True)
class Runs:
    frame: pd.DataFrame
    logs: tuple[LogRun, ...]
    warnings: tuple[str, ...] = ()
    bucket_fields: tuple[str, ...] = field(default=())

    @property
    def suites(self) -> tuple[str, ...]:
        return tuple(sorted({log.suite for log in self.logs}))

    def logs_of(self, suite: str, build: str) -> list[LogRun]:
        return [lg for lg in self.logs if lg.suite == suite and lg.build == build]


def suite_name(task: str) -> str:
    return task.removeprefix("lossgate/")


def score_to_float(value: Any, score_key: str | None) -> float:
    """Map an Inspect Score.value to [0, 1]: numbers, booleans, C/I/P/N, yes/no, or a dict's key."""
    if isinstance(value, dict):
        if score_key is None:
            if len(value) != 1:
                raise ScoreError(f"dict score with keys {sorted(value)}: set score_key for this suite in the plan")
            value = next(iter(value.values()))
        elif score_key not in value:
            raise ScoreError(f"score has no key {score_key!r} (keys: {sorted(value)})")
        else:
            value = value[score_key]
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        x = float(value)
        if not math.isfinite(x) or not 0.0 <= x <= 1.0:
            raise ScoreError(f"score {value!r} is outside [0, 1]")
        return x
    if isinstance(value, str):
        if value in _LETTER_SCORES:
            return _LETTER_SCORES[value]
        if value.strip().lower() in _WORD_SCORES:
            return _WORD_SCORES[value.strip().lower()]
        raise ScoreError(f"score {value!r} is not a number, boolean, or C/I/P/N")
    raise ScoreError(f"score {value!r} of type {type(value).__name__} cannot be gated")


def _input_text(value: Any, prefix: int | None = None) -> str:
    """The sample's input as text without volatile ids (ChatMessage ids are random per run).

    With `prefix`, each message is cut to its first `prefix` characters: sample summaries carry
    inputs truncated by Inspect (at 5,120 characters), and a shorter cut makes a full sample and
    its summary hash alike."""
    if isinstance(value, str):
        return value[:prefix]
    return json.dumps([[m.role, m.text[:prefix]] for m in value], ensure_ascii=False)


def sample_hash(input_value: Any, target: Any, prefix: int | None = None) -> str:
    """Hash of a sample's input and target (of their first `prefix` characters, if given)."""
    h = hashlib.sha256(_input_text(input_value, prefix).encode())
    h.update(b"\x00")
    if isinstance(target, list):
        target = [t[:prefix] for t in target]
    elif isinstance(target, str):
        target = target[:prefix]
    h.update(json.dumps(target, ensure_ascii=False).encode())
    return h.hexdigest()[:16]


def expand_paths(paths: Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """Files as given; directories searched recursively for Inspect logs."""
    files, problems = [], []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(
                f for f in p.rglob("*")
                if f.is_file() and (f.suffix == ".eval" or _JSON_LOG_NAME.match(f.name))
            )
            if not found:
                problems.append(f"{p}: directory holds no Inspect logs (*.eval, or timestamped *.json)")
            files.extend(found)
        elif p.is_file():
            if p.suffix not in (".eval", ".json"):
                problems.append(f"{p}: not an Inspect log (expected .eval or .json)")
            else:
                files.append(p)
        else:
            problems.append(f"{p}: no such file or directory")
    unique: dict[Path, Path] = {}
    for f in files:
        unique.setdefault(f.resolve(), f)
    return list(unique.values()), problems


def _read_headers(files_by_build: dict[str, list[Path]], problems: list[str]) -> list[tuple[str, Path, Any]]:
    from inspect_ai.log import read_eval_log

    headers = []
    for build, files in files_by_build.items():
        for path in files:
            try:
                header = read_eval_log(str(path), header_only=True)
            except Exception as err:  # any unreadable file is the same problem to the user
                problems.append(f"{path}: not a readable Inspect log ({type(err).__name__}: {err})")
                continue
            if header.status == "started":
                problems.append(f"{path}: log status 'started' — the run is still going or died; wait for it, or finish it with `inspect eval-retry`")
            elif header.status == "cancelled":
                problems.append(f"{path}: log status 'cancelled' — re-run or `inspect eval-retry` it")
            if header.invalidated:
                problems.append(f"{path}: log is marked invalidated")
            headers.append((build, path, header))
    return headers


def _check_headers(headers: list[tuple[str, Path, Any]], problems: list[str]) -> None:
    by_eval_id: dict[str, list[str]] = defaultdict(list)
    for build, path, h in headers:
        by_eval_id[h.eval.eval_id].append(f"{path} ({build})")
    for eval_id, where in by_eval_id.items():
        if len(where) > 1:
            problems.append(f"duplicated run: eval id {eval_id} appears in {', '.join(where)}")
    by_suite: dict[str, list[tuple[str, Path, Any]]] = defaultdict(list)
    for item in headers:
        by_suite[suite_name(item[2].eval.task)].append(item)
    for suite, items in sorted(by_suite.items()):
        counts = {b: sum(1 for build, _, _ in items if build == b) for b in BUILDS}
        if counts["baseline"] < 2:
            problems.append(f"suite {suite}: baseline has {counts['baseline']} run(s); at least 2 are needed (an A/A pair measures the nondeterminism floor)")
        if counts["candidate"] < 1:
            problems.append(f"suite {suite}: candidate has no run")
        versions = {(str(h.eval.task_version)) for _, _, h in items}
        if len(versions) > 1:
            listing = "; ".join(f"{p} ({b}): version {h.eval.task_version}" for b, p, h in items)
            problems.append(f"suite {suite}: different task versions: {listing}")
        id_sets = {}
        for build, path, h in items:
            ids = h.eval.dataset.sample_ids
            if ids is not None:
                id_sets[(build, path)] = {str(i) for i in ids}
        if len(id_sets) > 1:
            union = set().union(*id_sets.values())
            for (build, path), ids in id_sets.items():
                missing = sorted(union - ids)
                if missing:
                    problems.append(
                        f"suite {suite}: different sample sets: {path} ({build}) lacks "
                        f"{len(missing)} sample(s) other logs have, e.g. {missing[:_MAX_EXAMPLES]} "
                        "(same --limit / task args / dataset on every run?)"
                    )


def _full_samples(path: str, original_ids: dict[str, Any]) -> list[tuple[str, Any]]:
    """Epoch 1 of the first few samples (by id), read in full — one zip directory parse per log."""
    from inspect_ai.log import read_eval_log_sample, read_eval_log_samples_by_id

    chosen = sorted(original_ids)[:_FULL_HASH_SAMPLES]
    try:
        found = read_eval_log_samples_by_id(path, [(original_ids[s], 1) for s in chosen], exclude_fields=_SKIP_FIELDS)
        return list(zip(chosen, found, strict=True))
    except Exception:  # a partial log may lack some epoch-1 copies: take those it has
        out = []
        for sid in chosen:
            try:
                out.append((sid, read_eval_log_sample(path, id=original_ids[sid], epoch=1, exclude_fields=_SKIP_FIELDS)))
            except Exception:
                continue
        return out


def _usage_output_tokens(sample: Any, model: str) -> float:
    usage = sample.model_usage or {}
    if not usage:
        return math.nan
    if model in usage:
        return float(usage[model].output_tokens)
    return float(sum(u.output_tokens for u in usage.values()))


def load_runs(
    baseline: Iterable[str | Path],
    candidate: Iterable[str | Path],
    plan: Plan | None = None,
    suites: Iterable[str] | None = None,
) -> Runs:
    """Read baseline and candidate logs (files or directories) into a `Runs`; raise RunsError."""
    from inspect_ai.log import read_eval_log_sample_summaries

    plan = plan or Plan()
    wanted = {suite_name(s) for s in suites} if suites else None
    problems: list[str] = []
    files_by_build: dict[str, list[Path]] = {}
    for build, paths in (("baseline", baseline), ("candidate", candidate)):
        files, found_problems = expand_paths(paths)
        problems += [f"{build}: {p}" for p in found_problems]
        files_by_build[build] = files
    both = {f.resolve() for f in files_by_build["baseline"]} & {f.resolve() for f in files_by_build["candidate"]}
    for f in sorted(both):
        problems.append(f"{f}: given as both baseline and candidate")
    for build in BUILDS:
        if not files_by_build[build] and not any(p.startswith(build) for p in problems):
            problems.append(f"{build}: no logs given")
    if problems:
        raise RunsError(problems)

    headers = _read_headers(files_by_build, problems)
    if wanted is not None:
        headers = [h for h in headers if suite_name(h[2].eval.task) in wanted]
        for suite in sorted(wanted - {suite_name(h[2].eval.task) for h in headers}):
            problems.append(f"suite {suite}: no logs of this suite among the given files")
    _check_headers(headers, problems)
    if problems:
        raise RunsError(problems)

    # run labels: <build>-<k> in order of creation within (suite, build)
    ordered = sorted(headers, key=lambda h: (suite_name(h[2].eval.task), h[0], h[2].eval.created, str(h[1])))
    counter: dict[tuple[str, str], int] = defaultdict(int)
    labels = {}
    for build, path, h in ordered:
        key = (suite_name(h.eval.task), build)
        counter[key] += 1
        labels[str(path)] = f"{build}-{counter[key]}"

    global_fields = plan.bucket_fields
    # a plan may name a column that is always loaded (e.g. input_tokens); load it once
    all_fields = sorted({*global_fields, *(f for s in plan.suites for f in s.bucket_fields)} - FRAME_COLUMNS)
    columns: dict[str, list] = defaultdict(list)
    # suite -> sample id -> (hash, file): prefix hashes for every sample, full hashes for a few
    hashes: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
    full_hashes: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
    logs: list[LogRun] = []
    warnings: list[str] = []
    for build, path, header in ordered:
        suite = suite_name(header.eval.task)
        splan = plan.suite(suite)
        try:
            # summaries carry everything the statistics need and read ~50x faster than samples
            summaries = read_eval_log_sample_summaries(str(path))
        except Exception as err:
            problems.append(f"{path}: samples could not be read ({type(err).__name__}: {err})")
            continue
        n_rows = n_err = 0
        score_problems: list[str] = []
        hash_problems: list[str] = []
        seen: set[tuple[str, int]] = set()
        original_ids: dict[str, Any] = {}
        model = header.eval.model
        for sample in summaries:
            sid = str(sample.id)
            original_ids[sid] = sample.id
            seen.add((sid, sample.epoch))
            digest = sample_hash(sample.input, sample.target, prefix=_HASH_PREFIX)
            known = hashes[suite].get(sid)
            if known is None:
                hashes[suite][sid] = (digest, str(path))
            elif known[0] != digest:
                hash_problems.append(sid)
            error = None
            score = math.nan
            if sample.error:
                error = str(sample.error).splitlines()[0][:200]
            elif not sample.scores:
                error = "not scored"
            else:
                scorer = splan.scorer or next(iter(sample.scores))
                if scorer not in sample.scores:
                    score_problems.append(f"sample {sid} epoch {sample.epoch}: no scorer {scorer!r} (has {sorted(sample.scores)})")
                else:
                    try:
                        score = score_to_float(sample.scores[scorer].value, splan.score_key)
                    except ScoreError as err:
                        score_problems.append(f"sample {sid} epoch {sample.epoch}: {err}")
            meta = sample.metadata or {}
            columns["suite"].append(suite)
            columns["sample_id"].append(sid)
            columns["epoch"].append(int(sample.epoch))
            columns["build"].append(build)
            columns["run"].append(labels[str(path)])
            columns["score"].append(score)
            columns["errored"].append(error is not None)
            columns["error"].append(error)
            columns["cluster"].append(str(meta.get("cluster", sid)))
            for name in TOKEN_METADATA:
                columns[name].append(_number_or_nan(meta.get(name)))
            columns["output_tokens"].append(_usage_output_tokens(sample, model))
            columns["working_time"].append(_number_or_nan(getattr(sample, "working_time", None)))
            for f in all_fields:
                columns[f].append(meta.get(f))
            columns["log_path"].append(str(path))
            n_rows += 1
            n_err += error is not None
        # full inputs (not truncated) of a few samples: a dataset that differs only deep inside
        # long inputs still differs there on every sample
        for sid, full in _full_samples(str(path), original_ids):
            digest = sample_hash(full.input, full.target)
            known = full_hashes[suite].get(sid)
            if known is None:
                full_hashes[suite][sid] = (digest, str(path))
            elif known[0] != digest:
                hash_problems.append(sid)
        # samples the header promises but the log lacks (e.g. a run stopped by an error)
        expected_ids = header.eval.dataset.sample_ids or sorted({sid for sid, _ in seen})
        epochs = header.eval.config.epochs or 1
        missing = [(str(i), e) for i in expected_ids for e in range(1, epochs + 1) if (str(i), e) not in seen]
        for sid, epoch in missing:
            columns["suite"].append(suite)
            columns["sample_id"].append(sid)
            columns["epoch"].append(epoch)
            columns["build"].append(build)
            columns["run"].append(labels[str(path)])
            columns["score"].append(math.nan)
            columns["errored"].append(True)
            columns["error"].append(f"missing from log (status {header.status})")
            columns["cluster"].append(None)  # filled from other runs below
            for name in TOKEN_METADATA:
                columns[name].append(math.nan)
            columns["output_tokens"].append(math.nan)
            columns["working_time"].append(math.nan)
            for f in all_fields:
                columns[f].append(None)
            columns["log_path"].append(str(path))
            n_rows += 1
            n_err += 1
        if missing:
            warnings.append(f"{path}: {len(missing)} sample-epoch(s) missing (log status {header.status}); counted as errored")
        if score_problems:
            problems.append(f"{path}: {len(score_problems)} unusable score(s), e.g. " + "; ".join(score_problems[:_MAX_EXAMPLES]))
        if hash_problems:
            ids = sorted(set(hash_problems))
            first_file = (hashes[suite].get(ids[0]) or full_hashes[suite][ids[0]])[1]
            problems.append(
                f"suite {suite}: {path} ({build}) has different input or target than {first_file} "
                f"for {len(ids)} sample(s), e.g. {ids[:_MAX_EXAMPLES]} — a different task version or dataset"
            )
        logs.append(
            LogRun(
                path=str(path), build=build, suite=suite, run=labels[str(path)], task=header.eval.task,
                eval_id=header.eval.eval_id, status=header.status, created=header.eval.created,
                model=model, model_base_url=header.eval.model_base_url,
                task_version=str(header.eval.task_version), epochs=epochs,
                fingerprint=(header.eval.metadata or {}).get("lossgate_build"),
                n_rows=n_rows, n_errored=n_err,
            )
        )
    if problems:
        raise RunsError(problems)

    frame = pd.DataFrame(columns)
    if frame.empty:
        raise RunsError(["the logs hold no samples"])
    # rows for missing samples take cluster and buckets from the runs that have them
    if frame["cluster"].isna().any():
        known = frame.dropna(subset=["cluster"]).drop_duplicates(["suite", "sample_id"]).set_index(["suite", "sample_id"])
        idx = pd.MultiIndex.from_frame(frame[["suite", "sample_id"]])
        for col in ["cluster", *TOKEN_METADATA, *all_fields]:
            filled = known[col].reindex(idx).to_numpy()
            frame[col] = frame[col].where(frame[col].notna(), filled)
        frame["cluster"] = frame["cluster"].fillna(frame["sample_id"])
    for col in ("suite", "build", "run", "log_path"):
        frame[col] = frame[col].astype("category")
    for build in BUILDS:
        prints = {build_key(lg.fingerprint) for lg in logs if lg.build == build and lg.fingerprint}
        if len(prints) > 1:
            warnings.append(f"{build} logs carry {len(prints)} different build fingerprints")
        models = {lg.model for lg in logs if lg.build == build}
        if len(models) > 1:
            warnings.append(f"{build} logs name {len(models)} different models: {sorted(models)}")
    return Runs(frame=frame, logs=tuple(logs), warnings=tuple(warnings), bucket_fields=tuple(all_fields))


def _number_or_nan(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
