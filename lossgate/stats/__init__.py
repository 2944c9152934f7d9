"""Pure statistics over one suite's scores: no I/O, numpy/scipy/pandas in, frozen dataclasses out.

Each module holds one idea:
  arrays          the tidy rows of one suite shaped into item × run × epoch score arrays
  clustered       means and regression slopes with cluster-robust standard errors
  multiple        Holm (family-wise) and Benjamini–Hochberg (false discovery) adjustments
  nondeterminism  the A/A floor: flip rate, run-to-run spread, run-level variance τ²
  comparison      candidate − baseline Δ, its SE with τ², the regression p-value, the margin bound
  power           minimum detectable effect and the items or runs needed at the margin
  flips           correct→wrong / wrong→correct against the A/A flip rate
  buckets         Δ per bucket, per cluster, and the trend of Δ with log length
  speed           the candidate's working time per item against the baseline's, and the A/A floor
"""

from lossgate.stats.arrays import SuiteArrays, suite_arrays
from lossgate.stats.buckets import (
    BucketDelta,
    BucketTable,
    LengthTrend,
    bucket_deltas,
    length_trend,
)
from lossgate.stats.clustered import MeanEstimate, SlopeEstimate, clustered_mean, clustered_slope
from lossgate.stats.comparison import Comparison, compare_builds, mcnemar_exact_regression
from lossgate.stats.flips import FlipSummary, flip_summary
from lossgate.stats.multiple import benjamini_hochberg, holm
from lossgate.stats.nondeterminism import Nondeterminism, RunVariance, nondeterminism, run_variance
from lossgate.stats.power import PowerPlan, power_plan

__all__ = [
    "BucketDelta",
    "BucketTable",
    "Comparison",
    "FlipSummary",
    "LengthTrend",
    "MeanEstimate",
    "Nondeterminism",
    "PowerPlan",
    "RunVariance",
    "SlopeEstimate",
    "SuiteArrays",
    "benjamini_hochberg",
    "bucket_deltas",
    "clustered_mean",
    "clustered_slope",
    "compare_builds",
    "flip_summary",
    "holm",
    "length_trend",
    "mcnemar_exact_regression",
    "nondeterminism",
    "power_plan",
    "run_variance",
    "suite_arrays",
]
