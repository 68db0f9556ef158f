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


def _write_sonar(folder: Path, rng) -> np.ndarray:
    """A small file in Sonar's layout (60 numbers, then the label M or R); returns its numbers."""
    folder.mkdir(parents=True)
    X = rng.random((6, 60)).round(4)
    labels = ["M", "R", "M", "R", "M", "R"]
    (folder / "sonar.csv").write_text("".join(",".join(f"{v:.4f}" for v in row) + f",{c}\n"
                                              for row, c in zip(X, labels)))
    return X


@pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning")  # six rows: a small class
def test_sonar_is_read_from_the_data_dir_else_fsframe_data(gap3, tmp_path, monkeypatch):
    """The data-folder rule of the studies (docs/papers.md): --data-dir, else $FSFRAME_DATA; the
    file's numbers and labels as written (checked against the rows written, not fsframe's reader)."""
    rng = np.random.default_rng(0)
    mine, other = _write_sonar(tmp_path / "mine", rng), _write_sonar(tmp_path / "other", rng)
    monkeypatch.setenv("FSFRAME_DATA", str(tmp_path / "other"))
    data = gap3.sonar(str(tmp_path / "mine"))  # --data-dir wins
    assert np.array_equal(np.asarray(data.X, dtype=float), mine) and list(data.y) == ["M", "R"] * 3
    assert np.array_equal(np.asarray(gap3.sonar(None).X, dtype=float), other)  # else $FSFRAME_DATA


def test_missing_sonar_stops_with_the_studies_message(gap3, tmp_path, monkeypatch, capsys):
    """No folder set, or a folder without sonar.csv: exit status 2 and one message that says which
    (and where the folder came from, and where to download the file), never a traceback or a path
    outside the repository tried by default."""
    monkeypatch.delenv("FSFRAME_DATA", raising=False)
    with pytest.raises(SystemExit) as exc:
        gap3.main([])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "no data folder is set: give one with --data-dir" in err and "FSFRAME_DATA" in err
    monkeypatch.setenv("FSFRAME_DATA", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        gap3.main([])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"not in the data folder {tmp_path} (from $FSFRAME_DATA)" in err
    assert "archive.ics.uci.edu" in err
    with pytest.raises(SystemExit) as exc:
        gap3.main(["--data-dir", str(tmp_path / "none")])
    assert exc.value.code == 2 and f"{tmp_path / 'none'} (from --data-dir)" in capsys.readouterr().err
