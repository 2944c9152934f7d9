"""The verdict rules: FAIL needs Holm significance AND a regression beyond the margin; PASS needs
every gated suite non-inferior; missing or errored data is INCONCLUSIVE, never PASS."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from lossgate.compare_cli import print_result
from lossgate.gate import FAIL, INCONCLUSIVE, PASS, evaluate, suite_verdict
from lossgate.plan import Plan, SuitePlan
from lossgate.report.markdown import render_markdown
from lossgate.runs import LogRun, Runs
from lossgate.stats import compare_builds
from lossgate.stats.arrays import from_arrays


def _rows(suite, build, scores, clusters, errors=None):
    n, runs, epochs = scores.shape
    i, r, e = np.meshgrid(np.arange(n), np.arange(runs), np.arange(epochs), indexing="ij")
    i, r, e = i.ravel(), r.ravel(), e.ravel()
    errored = np.zeros(i.size, bool) if errors is None else errors.ravel()
    return pd.DataFrame({
        "suite": suite,
        "sample_id": [f"{suite}-{k}" for k in i],
        "epoch": e + 1,
        "build": build,
        "run": [f"{build}-{k + 1}" for k in r],
        "score": np.where(errored, np.nan, scores.ravel()),
        "errored": errored,
        "error": np.where(errored, "boom", None),
        "cluster": [f"c{clusters[k]}" for k in i],
        "length_bucket": np.nan,
        "input_tokens": np.nan,
        "output_tokens": 100.0,
        "log_path": [f"/logs/{suite}/{build}-{k + 1}.eval" for k in r],
    })


def _suite(rng, suite, *, n=400, regression=0.0, runs=(3, 2), epochs=1, error_rate=0.0):
    clusters = np.arange(n) // 4
    p = np.clip(rng.uniform(0.2, 0.9, n), 0, 1)
    base = (rng.random((n, runs[0], epochs)) < p[:, None, None]).astype(float)
    cand = (rng.random((n, runs[1], epochs)) < np.clip(p - regression, 0, 1)[:, None, None]).astype(float)
    errors = rng.random(cand.shape) < error_rate
    frame = pd.concat([_rows(suite, "baseline", base, clusters), _rows(suite, "candidate", cand, clusters, errors)])
    logs = [
        LogRun(path=f"/logs/{suite}/{b}-{k + 1}.eval", build=b, suite=suite, run=f"{b}-{k + 1}",
               task=f"lossgate/{suite}", eval_id=f"{suite}{b}{k}", status="success", created="",
               model="m", model_base_url=None, task_version="1", epochs=epochs, fingerprint={"build": b})
        for b, count in (("baseline", runs[0]), ("candidate", runs[1])) for k in range(count)
    ]
    return frame, logs


def _runs(*suites):
    frames, logs = zip(*suites, strict=True)
    return Runs(frame=pd.concat(frames, ignore_index=True), logs=tuple(x for lg in logs for x in lg))


def _plan(**margins):
    return Plan(permutations=199, suites=tuple(SuitePlan(name=k, margin=v) for k, v in margins.items()))


def test_clear_regression_fails_with_exit_code_1():
    rng = np.random.default_rng(0)
    result = evaluate(_runs(_suite(rng, "code", regression=0.25)), _plan(code=0.03))
    assert result.verdict == FAIL and result.exit_code == 1
    assert result.suites[0].comparison.statistic < -0.2


def test_same_build_on_both_sides_passes_with_exit_code_0():
    rng = np.random.default_rng(1)
    result = evaluate(_runs(_suite(rng, "code", n=3000)), _plan(code=0.05))
    assert result.verdict == PASS and result.exit_code == 0, result.reasons


def test_small_sample_is_inconclusive_with_a_plan_to_decide():
    rng = np.random.default_rng(2)
    result = evaluate(_runs(_suite(rng, "code", n=40)), _plan(code=0.02))
    suite = result.suites[0]
    assert result.verdict == INCONCLUSIVE and result.exit_code == 2
    assert suite.power.mde > 0.02 and not suite.power.adequate
    assert suite.power.items_needed is None or suite.power.items_needed > 40
    assert any("MDE" in r for r in suite.reasons)


def test_holm_pvalues_are_statsmodels_holm_over_gated_suites():
    rng = np.random.default_rng(3)
    runs = _runs(_suite(rng, "a", regression=0.08), _suite(rng, "b", regression=0.04), _suite(rng, "c"),
                 _suite(rng, "diag", regression=0.3))
    plan = dataclasses.replace(_plan(a=0.03, b=0.03, c=0.03), suites=_plan(a=0.03, b=0.03, c=0.03).suites
                               + (SuitePlan(name="diag", gate=False),))
    result = evaluate(runs, plan)
    by = {s.suite: s for s in result.suites}
    raw = [by[k].comparison.pvalue for k in "abc"]
    np.testing.assert_allclose([by[k].holm_pvalue for k in "abc"], multipletests(raw, method="holm")[1])
    for k in "abc":
        assert by[k].verdict == suite_verdict(by[k].comparison, by[k].holm_pvalue, plan.alpha)


def test_holm_adjustment_can_turn_a_fail_into_inconclusive():
    rng = np.random.default_rng(4)
    arrays = from_arrays((rng.random((300, 2, 1)) < 0.7).astype(float), (rng.random((300, 1, 1)) < 0.6).astype(float))
    c = dataclasses.replace(compare_builds(arrays, margin=0.03), statistic=-0.05, pvalue=0.03, noninferior=False)
    assert suite_verdict(c, 0.03, 0.05) == FAIL  # alone it would fail
    assert suite_verdict(c, 0.03 * 3, 0.05) == INCONCLUSIVE  # one of three suites: Holm says not yet


def test_significant_regression_inside_the_margin_is_not_a_fail():
    rng = np.random.default_rng(5)
    arrays = from_arrays((rng.random((300, 2, 1)) < 0.7).astype(float), (rng.random((300, 1, 1)) < 0.6).astype(float))
    c = dataclasses.replace(compare_builds(arrays, margin=0.03), statistic=-0.02, pvalue=1e-6, noninferior=False)
    assert suite_verdict(c, 1e-6, 0.05) == INCONCLUSIVE


def test_diagnostic_suite_never_decides_the_verdict(capsys):
    rng = np.random.default_rng(6)
    runs = _runs(_suite(rng, "code", n=3000), _suite(rng, "fidelity", regression=0.4))
    plan = dataclasses.replace(_plan(code=0.05), suites=(SuitePlan(name="code", margin=0.05), SuitePlan(name="fidelity", gate=False)))
    result = evaluate(runs, plan)
    by = {s.suite: s for s in result.suites}
    assert by["fidelity"].comparison.statistic < -0.3 and not by["fidelity"].gated
    assert result.verdict == PASS
    # outside the Holm family: no adjusted p-value, and the report's row carries no verdict badge
    assert np.isnan(by["fidelity"].holm_pvalue) and by["code"].holm_pvalue <= 1
    rows = {line.split("|")[1].strip(): line for line in render_markdown(result).splitlines()
            if line.startswith("| code") or line.startswith("| fidelity")}
    assert rows["fidelity (not gated)"].rstrip(" |").endswith("diagnostic"), rows
    assert "FAIL" not in rows["fidelity (not gated)"] and "PASS" in rows["code"], rows
    print_result(result)
    printed = {line.split(":")[0].strip(): line for line in capsys.readouterr().out.splitlines()}
    assert printed["fidelity (diagnostic, not gated)"].split(":", 1)[1].strip().startswith("Δ -")
    assert "PASS" in printed["code"]


def test_error_rate_above_the_maximum_is_inconclusive_never_pass():
    rng = np.random.default_rng(7)
    runs = _runs(_suite(rng, "code", n=3000, error_rate=0.10))
    result = evaluate(runs, dataclasses.replace(_plan(code=0.05), max_error_rate=0.05))
    suite = result.suites[0]
    assert suite.errors.candidate_errored > 0 and suite.errors.baseline_errored == 0
    assert result.verdict == INCONCLUSIVE and "error rate" in " ".join(suite.reasons)
    # the same data under a tolerant plan passes: it was the error rate that held it back
    assert evaluate(runs, dataclasses.replace(_plan(code=0.05), max_error_rate=0.2)).verdict == PASS


def test_suite_in_plan_without_logs_is_inconclusive():
    rng = np.random.default_rng(8)
    result = evaluate(_runs(_suite(rng, "code", n=3000)), _plan(code=0.05, safety=0.02))
    by = {s.suite: s for s in result.suites}
    assert by["code"].verdict == PASS
    assert by["safety"].verdict == INCONCLUSIVE and by["safety"].comparison is None
    assert result.verdict == INCONCLUSIVE


@pytest.mark.parametrize("fail_suite", [True, False])
def test_overall_fail_dominates_and_pass_needs_all(fail_suite):
    rng = np.random.default_rng(9)
    second = _suite(rng, "b", regression=0.3 if fail_suite else 0.0, n=40)
    result = evaluate(_runs(_suite(rng, "a", n=3000), second), _plan(a=0.05, b=0.01))
    assert result.verdict == (FAIL if fail_suite else INCONCLUSIVE)
