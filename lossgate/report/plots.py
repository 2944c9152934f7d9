"""PNG plots: Δ with its CI per suite against ±margin, Δ per length bucket, Δ per cluster."""

from __future__ import annotations

import math
from pathlib import Path

from lossgate.gate import FAIL, PASS, GateResult

_COLOURS = {PASS: "#2e7d32", FAIL: "#c62828"}
_OTHER = "#ef6c00"


def write_plots(result: GateResult, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    suites = [s for s in result.suites if s.comparison is not None and math.isfinite(s.comparison.statistic)]
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.6 * max(len(result.suites), 1)))
    for row, s in enumerate(result.suites):
        ax.plot([-s.margin * 100, s.margin * 100], [row, row], "|", color="grey", markersize=18, mew=2)
        c = s.comparison
        if c is None or not math.isfinite(c.statistic):
            ax.text(0, row, "no data", ha="center", va="center", color=_OTHER)
            continue
        lo, hi = c.confidence_interval
        colour = _COLOURS.get(s.verdict, _OTHER)
        if math.isfinite(lo) and math.isfinite(hi):
            ax.errorbar(c.statistic * 100, row, xerr=[[(c.statistic - lo) * 100], [(hi - c.statistic) * 100]],
                        fmt="o", color=colour, capsize=4)
        else:
            ax.plot(c.statistic * 100, row, "o", color=colour)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(result.suites)))
    ax.set_yticklabels([f"{s.suite}\n{s.verdict}" + ("" if s.gated else " (diag.)") for s in result.suites], fontsize=8)
    ax.invert_yaxis()
    level = suites[0].comparison.confidence_level if suites else 0.9
    ax.set_xlabel(f"Δ candidate − baseline (points), {level:.0%} CI; grey bars: ±margin")
    ax.set_title(f"lossgate: {result.verdict}")
    fig.tight_layout()
    path = out / "delta_by_suite.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)

    fig, ax = plt.subplots(figsize=(7, 4))
    drawn = False
    for s in result.suites:
        table = next((t for t in s.buckets if t.field == "length_bucket"), None)
        if table is None or not table.rows:
            continue
        xs = [float(b.value) for b in table.rows]
        ys = [b.statistic * 100 for b in table.rows]
        lo = [(b.statistic - b.confidence_interval[0]) * 100 for b in table.rows]
        hi = [(b.confidence_interval[1] - b.statistic) * 100 for b in table.rows]
        lo = [v if math.isfinite(v) else 0 for v in lo]
        hi = [v if math.isfinite(v) else 0 for v in hi]
        line = ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o-", capsize=3, label=s.suite)
        ax.axhline(-s.margin * 100, ls="--", lw=0.8, color=line[0].get_color())
        drawn = True
    ax.axhline(0, color="black", lw=0.8)
    if drawn:
        ax.set_xscale("log", base=2)
        ticks = sorted({float(b.value) for s in result.suites for t in s.buckets if t.field == "length_bucket" for b in t.rows})
        ax.set_xticks(ticks, [f"{int(t):,}" for t in ticks])
        ax.minorticks_off()
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no length-graded items (metadata length_bucket > 0)", ha="center",
                va="center", transform=ax.transAxes)
    ax.set_xlabel("input length bucket (tokens)")
    ax.set_ylabel("Δ (points); dashed: −margin")
    ax.set_title("Δ per length bucket")
    fig.tight_layout()
    path = out / "delta_by_length.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)
    paths.append(_cluster_forest(result, out, plt))
    return paths


FOREST_ROWS = 15


def _cluster_forest(result: GateResult, out: Path, plt) -> Path:
    """Per suite, the clusters with the largest drops against the suite's Δ and −margin."""
    suites = [s for s in result.suites if len(s.clusters) >= 2 and s.comparison is not None]
    heights = [min(len(s.clusters), FOREST_ROWS) + 1.5 for s in suites] or [2]
    fig, axes = plt.subplots(len(heights), 1, figsize=(7, 0.25 * sum(heights) + 1.0),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    if not suites:
        axes[0][0].text(0.5, 0.5, "no suite has two or more clusters", ha="center", va="center")
        axes[0][0].set_axis_off()
    for ax, s in zip((row[0] for row in axes), suites, strict=False):
        shown = s.clusters[:FOREST_ROWS]
        for row, c in enumerate(shown):
            lo, hi = c.confidence_interval
            if math.isfinite(lo) and math.isfinite(hi):
                ax.errorbar(c.statistic * 100, row, xerr=[[(c.statistic - lo) * 100], [(hi - c.statistic) * 100]],
                            fmt="o", color=_OTHER, capsize=3, ms=4)
            else:
                ax.plot(c.statistic * 100, row, "o", color=_OTHER, ms=4)
        ax.axvline(0, color="black", lw=0.8)
        ax.axvline(s.comparison.statistic * 100, color="grey", ls="--", lw=1)
        ax.axvline(-s.margin * 100, color=_COLOURS[FAIL], ls=":", lw=1)
        ax.set_yticks(range(len(shown)), [f"{c.cluster} ({c.n_items})" for c in shown], fontsize=7)
        ax.invert_yaxis()
        ax.set_title(f"{s.suite}: {len(shown)} of {len(s.clusters)} clusters, largest drops first",
                     fontsize=9)
    axes[-1][0].set_xlabel("Δ per cluster (points; items in brackets). Dashed: suite Δ; dotted: −margin", fontsize=8)
    fig.tight_layout()
    path = out / "delta_by_cluster.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
