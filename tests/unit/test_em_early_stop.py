"""EM's opt-in early stop with ``n_features`` (``early_stop=K``, :func:`fsframe.loops.em.top_settled`).

Checks: the rule itself on hand-made norm sequences; its refusals (without ``n_features``, bad
values); on 200 seeded instances (Sonar / Ionosphere / Colon splits when the shared data is
present, generated data otherwise; ``r`` in {2, 5, 10, 20}) that stopping where the rule fires
(``K`` = 1, 2, 3 at the default ratio 5) selects the features of the run to convergence — every
instance's iterates are recorded once and the run is cut where the rule would stop it, which is
exact: the iterates before the stop are the same — and, on the instances where it stops earliest,
that a real run with ``early_stop`` stops there and returns the same features, coefficients,
objective and training hinge loss as the full run (the L2 SVM's intercept need not be unique).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import fsframe
from fsframe.errors import InvalidOptionError
from fsframe.loops.em import top_settled
from fsframe.loops.selection import select_exactly
from fsframe.loops.ties import merged


def _shared() -> Path:
    """The shared data folder as the ``shared_data`` fixture finds it (absent: generated data)."""
    env = os.environ.get("FSFRAME_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared" / "data"


def test_top_settled_rule():
    a = np.array([5.0, 4.0, 0.5, 0.1])
    # the same 2 largest at 2 iterates and the gap 4 / 0.5 = 8 at least 5
    assert top_settled([a, a], 2, 1, 5.0)
    assert not top_settled([a], 2, 1, 5.0)  # fewer than K + 1 iterates
    assert not top_settled([a, a], 2, 2, 5.0)
    assert not top_settled([a, a], 2, 1, 9.0)  # the gap 4 / 0.5 = 8 is below 9
    assert not top_settled([a, a], 2, 0, 5.0)  # K = 0: off
    b = np.array([5.0, 0.4, 4.5, 0.1])  # another pair on top one iterate before
    assert not top_settled([b, a], 2, 1, 5.0)
    assert top_settled([b, a, a], 2, 1, 5.0) and not top_settled([b, a, a], 2, 2, 5.0)
    assert top_settled([a, np.array([4.0, 5.0, 0.5, 0.1])], 2, 1, 5.0)  # order inside the top: free
    assert not top_settled([a[:2], a[:2]], 2, 1, 1.0)  # no (r + 1)-th group
    tie = np.array([3.0, 1.0, 1.0, 0.0])  # ties ordered by index, as select_exactly orders them
    assert top_settled([tie, tie], 2, 1, 1.0) and not top_settled([tie, tie], 2, 1, 1.5)


def _data(rows=60, cols=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, cols))
    y = np.where(X[:, :3] @ np.array([1.0, -1.0, 0.7]) + 0.4 * rng.normal(size=rows) > 0, 1, -1)
    return X, y


def test_refusals():
    X, y = _data()
    with pytest.raises(InvalidOptionError, match="needs n_features"):
        fsframe.fit(X, y, method="em-l0", early_stop=2)
    for bad in ({"early_stop": -1}, {"early_stop": True}, {"early_stop": 1.5}, {"early_stop_ratio": 0.5},
                {"early_stop_ratio": float("inf")}):
        with pytest.raises(InvalidOptionError, match="early_stop"):
            fsframe.fit(X, y, method="em-l0", n_features=3, **bad)


def _instances():
    """200 seeded (X, y, r): stratified 80/20 training parts of Sonar, Ionosphere and Colon,
    standardised (paper 002's protocol), or generated data when the shared data is absent."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    folder = _shared()
    files = {"sonar": "sonar.csv", "ionosphere": "ionosphere.data", "colon": "colon.mat"}
    if all((folder / f).exists() for f in files.values()):
        plan = [("sonar", 20), ("ionosphere", 20), ("colon", 10)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ionosphere's constant column, colon's duplicates
            loaded = {k: fsframe.load_dataset(folder / files[k]) for k, _ in plan}
        for name, splits in plan:
            X0, y0 = np.asarray(loaded[name].X, dtype=float), np.asarray(loaded[name].y)
            X0 = X0[:, X0.std(axis=0) > 0]
            for s in range(splits):
                Xtr, _, ytr, _ = train_test_split(X0, y0, test_size=0.2, random_state=s, stratify=y0)
                Xtr = StandardScaler().fit(Xtr).transform(Xtr)
                for r in (2, 5, 10, 20):
                    yield f"{name}-{s}-r{r}", Xtr, ytr, r
    else:
        for s in range(50):
            rng = np.random.default_rng(1000 + s)
            m, n = int(rng.integers(50, 120)), int(rng.integers(25, 60))
            X = rng.normal(size=(m, n))
            beta = np.zeros(n)
            beta[: 1 + s % 8] = rng.normal(size=1 + s % 8)
            y = np.where(X @ beta + 0.5 * rng.normal(size=m) > 0, 1, -1)
            for r in (2, 5, 10, 20):
                yield f"generated-{s}-r{r}", X, y, r


class _It:
    def __init__(self, t):
        self.t = t


@pytest.fixture(scope="module")
def study():
    """Per instance: the full run's group norms per iterate, its selection, coefficients and objective."""
    out = []
    for name, X, y, r in _instances():
        norms = []
        # n_features counts and ranks the norms with identical columns merged onto their lowest
        # index (fsframe.loops.ties; Colon has copies): rebuild them from each iterate's coefficients
        _, first, inverse = np.unique(X, axis=1, return_index=True, return_inverse=True)
        classes = [np.sort(np.flatnonzero(inverse.ravel() == k)) for k in range(len(first))]
        classes = [c for c in classes if len(c) > 1]
        groups = np.arange(X.shape[1])

        def keep(rec, it, norms=norms, classes=classes, groups=groups):
            norms.append(np.abs(merged(np.asarray(it.coef, dtype=float), groups, classes)) if classes
                         else np.array(it.t, dtype=float))

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fsframe.fit(X, y, method="em-l0", n_features=r, callback=keep)
        mask = np.zeros(X.shape[1], dtype=bool)
        mask[np.asarray(res.selected)] = True
        out.append(dict(name=name, X=X, y=y, r=r, norms=norms, mask=mask, res=res))
    return out


def _stop(norms, r, K, ratio):
    """The iterate at which ``early_stop=K`` ends the run (``None``: it runs to the end)."""
    for k in range(1, len(norms)):
        if top_settled(norms[: k + 1], r, K, ratio):
            return k
    return None


@pytest.mark.slow
@pytest.mark.parametrize("K", [1, 2, 3])
def test_early_stop_selects_the_full_runs_features_on_200_instances(study, K):
    assert len(study) == 200
    early, saved, total = 0, 0, 0
    for inst in study:
        norms, r = inst["norms"], inst["r"]
        total += len(norms)
        assert np.array_equal(select_exactly([_It(t) for t in norms], r, 1e-6).mask, inst["mask"]), inst["name"]
        k = _stop(norms, r, K, 5.0)
        if k is None or k == len(norms) - 1:
            continue
        early += 1
        saved += len(norms) - k - 1
        got = select_exactly([_It(t) for t in norms[: k + 1]], r, 1e-6).mask
        assert np.array_equal(got, inst["mask"]), (inst["name"], K, k, len(norms))
    # not vacuous: the rule does stop runs early on these instances
    assert early >= 10 and saved >= 20, (early, saved, total)


@pytest.mark.slow
def test_a_real_early_stop_returns_the_full_runs_model(study):
    """Where ``early_stop=2`` fires earliest (relative to the full run), a real run stops there
    and returns the full run's features, coefficients and objective."""
    cand = [(len(i["norms"]) - 1 - k, i, k) for i in study
            if (k := _stop(i["norms"], i["r"], 2, 5.0)) is not None and k < len(i["norms"]) - 1]
    cand.sort(key=lambda c: (-c[0], c[1]["name"]))
    assert len(cand) >= 8
    for _, inst, k in cand[:8]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fsframe.fit(inst["X"], inst["y"], method="em-l0", n_features=inst["r"], early_stop=2)
        full = inst["res"]
        assert res.n_iter == k + 1 < full.n_iter, inst["name"]
        assert res.info["stop_reason"].startswith("early_stop")
        assert sorted(res.selected) == sorted(full.selected), inst["name"]
        scale = max(1.0, float(np.abs(full.coef).max()))
        np.testing.assert_allclose(res.coef, full.coef, rtol=0, atol=1e-8 * scale)
        assert res.objective == pytest.approx(full.objective, rel=1e-9)
        # the L2 SVM's intercept is not unique when no multiplier is strictly inside its box (the
        # re-solve starts from another point): both must be optimal, i.e. give the same hinge loss
        X, y = inst["X"], inst["y"]
        ys = np.where(y == full.classes[1], 1.0, -1.0)
        hinge = [float(np.maximum(0.0, 1.0 - ys * f.decision_function(X)).sum()) for f in (res, full)]
        assert hinge[0] == pytest.approx(hinge[1], rel=1e-9, abs=1e-9), inst["name"]
        assert res.certificate["status"] == full.certificate["status"] == "optimal"
        assert res.certificate["certifies_returned"] and full.certificate["certifies_returned"]
