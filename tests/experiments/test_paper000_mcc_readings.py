"""Paper 000's MCC against its TSA under both readings (docs/paper000-table3.md, "Gap 3"): one
confusion matrix of the whole set (pooled) or the mean of per-fold MCCs (fsframe's ``mcc100``).
``benchmarks/paper000_gap3.py`` bounds the second by Lagrangian relaxation; the bound is checked
against the exact programme over the folds, and the Ionosphere witness against its fold sizes."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gap3():
    spec = importlib.util.spec_from_file_location("bench_paper000_gap3", ROOT / "benchmarks" / "paper000_gap3.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_lagrangian_bound_is_an_upper_bound_of_the_exact_fold_mean_and_close_to_it(gap3):
    """On small folds the exact programme is cheap: the bound must be at least its largest mean MCC
    at a mean accuracy below the threshold, at every threshold tried, and not far above it."""
    folds = [(3, 2), (3, 2), (2, 3), (2, 2)]
    exact = gap3.fold_mean_limits(folds)
    for tsa in (40.0, 55.0, 62.5, 70.0, 85.0):
        best = 100 * max(v for a, v in exact.items() if float(a) < (tsa + 0.005) / 100)
        bound = gap3.fold_mean_bound(folds, tsa)
        assert best - 1e-9 <= bound <= best + 15.0, (tsa, best, bound)


def test_both_readings_of_the_seven_pairs(gap3):
    """Pooled: all seven pairs out of reach. Fold mean: Sonar's three, Ionosphere's and WDBC's L0-MPM
    out of reach; Ionosphere's MPM reachable (a witness on the stratified fold sizes) and WDBC's
    L1-MPM not ruled out."""
    r = gap3.mcc_readings()
    assert all(v["out_of_reach"]["pooled"] for v in r.values()) and len(r) == 7
    assert {k for k, v in r.items() if not v["out_of_reach"]["fold_mean"]} == {"ionosphere MPM", "wdbc L1-MPM"}
    assert r["sonar L0-MPM"]["pooled_max_mcc"] == pytest.approx(65.86, abs=0.005)
    w = r["ionosphere MPM"]["fold_mean_witness"]
    assert sorted((p, n) for _, _, p, n in w["folds"]) == sorted(gap3.stratified_folds(225, 126))
    assert w["mean_accuracy"] < 85.405 and w["mean_mcc"] >= 79.10
    # the witness's MCC by the script's own eq. 60 agrees with scikit-learn's
    assert w["mean_mcc"] == pytest.approx(100 * np.mean([gap3.mcc(*f) for f in w["folds"]]))
