"""What the change bought: the candidate's time per item against the baseline's, on the same items.

A lossy change is made for speed or memory, so the report puts its price in time beside its price
in quality. Each item's working time (Inspect's `working_time`: the sample's own time, without
waits for a connection slot) is averaged over runs and epochs per build; the statistic is the
geometric mean of the per-item ratios candidate / baseline, with a cluster-robust interval on the
log scale. The same ratio between two baseline runs is the noise floor: on a shared machine a
ratio inside the A/A spread means nothing. Errored samples are left out (their time is the error's,
not the answer's). Diagnostic only: it never decides the verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lossgate.stats.clustered import clustered_mean


@dataclass(frozen=True)
class TimeRatio:
    statistic: float  # geometric mean of per-item working-time ratios, candidate / baseline
    confidence_interval: tuple[float, float]
    confidence_level: float
    n_items: int
    n_clusters: int
    aa_statistic: float  # the same ratio, second baseline run / first (NaN with one run)
    baseline_median: float  # seconds per item
    candidate_median: float


def _item_times(rows: pd.DataFrame) -> pd.Series:
    ok = rows[~rows["errored"] & (rows["working_time"] > 0)]
    return ok.groupby("sample_id", observed=True)["working_time"].mean()


def _log_ratios(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    """log(numerator / denominator) per item, over the items both have."""
    both = pd.concat([numerator.rename("n"), denominator.rename("d")], axis=1, join="inner")
    return np.log(both["n"] / both["d"])


def time_ratio(frame: pd.DataFrame, confidence_level: float = 0.9) -> TimeRatio | None:
    """Candidate / baseline working time per item; None when the logs recorded no times.

    `frame` holds one suite's rows with sample_id, cluster, build, run, errored, working_time."""
    if "working_time" not in frame or not (frame["working_time"] > 0).any():
        return None
    base_rows = frame[frame["build"] == "baseline"]
    base = _item_times(base_rows)
    cand = _item_times(frame[frame["build"] == "candidate"])
    log_ratio = _log_ratios(cand, base)
    if log_ratio.empty:
        return None
    clusters = frame.drop_duplicates("sample_id").set_index("sample_id")["cluster"]
    est = clustered_mean(log_ratio.to_numpy(), clusters.reindex(log_ratio.index).astype(str).to_numpy(),
                         confidence_level=confidence_level)
    runs = sorted(base_rows["run"].dropna().astype(str).unique(), key=lambda r: (len(r), r))
    aa = math.nan
    if len(runs) >= 2:
        aa_log = _log_ratios(_item_times(base_rows[base_rows["run"] == runs[1]]),
                             _item_times(base_rows[base_rows["run"] == runs[0]]))
        aa = float(np.exp(aa_log.mean())) if len(aa_log) else math.nan
    lo, hi = est.confidence_interval
    return TimeRatio(
        statistic=float(np.exp(est.statistic)),
        confidence_interval=(float(np.exp(lo)), float(np.exp(hi))),
        confidence_level=confidence_level,
        n_items=est.n_items,
        n_clusters=est.n_clusters,
        aa_statistic=aa,
        baseline_median=float(base.reindex(log_ratio.index).median()),
        candidate_median=float(cand.reindex(log_ratio.index).median()),
    )
