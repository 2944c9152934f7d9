"""Δ per cluster (the forest plot's rows) against a direct computation with scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lossgate.stats.arrays import from_arrays
from lossgate.stats.buckets import cluster_deltas


def test_cluster_means_and_t_intervals_largest_drop_first():
    # items 0–2 in cluster "a", 3–4 in "b", 5 alone in "c"; one run per build
    baseline = np.array([1, 1, 1, 1, 0, 1], float).reshape(-1, 1, 1)
    candidate = np.array([0, 1, 0, 1, 1, 1], float).reshape(-1, 1, 1)
    arrays = from_arrays(baseline, candidate, clusters=["a", "a", "a", "b", "b", "c"])
    rows = cluster_deltas(arrays, alpha=0.05)
    assert [r.cluster for r in rows] == ["a", "c", "b"]  # Δ −2/3, 0, +1/2
    a = rows[0]
    d = np.array([-1.0, 0.0, -1.0])
    expected = stats.t.interval(0.90, df=2, loc=d.mean(), scale=d.std(ddof=1) / math.sqrt(3))
    assert a.statistic == pytest.approx(-2 / 3) and a.n_items == 3
    assert a.confidence_interval == pytest.approx(expected)
    # a one-item cluster has a Δ but no interval
    assert rows[1].n_items == 1 and all(math.isnan(x) for x in rows[1].confidence_interval)


def test_run_variance_widens_every_cluster():
    rng = np.random.default_rng(0)
    baseline = (rng.random((40, 2, 1)) < 0.6).astype(float)
    candidate = (rng.random((40, 1, 1)) < 0.5).astype(float)
    arrays = from_arrays(baseline, candidate, clusters=np.arange(40) // 8)
    plain = {r.cluster: r for r in cluster_deltas(arrays)}
    drift = {r.cluster: r for r in cluster_deltas(arrays, run_variance=0.01, run_df=1)}
    for name, r in plain.items():
        assert drift[name].statistic == r.statistic
        lo, hi = r.confidence_interval
        dlo, dhi = drift[name].confidence_interval
        assert dlo < lo and dhi > hi
