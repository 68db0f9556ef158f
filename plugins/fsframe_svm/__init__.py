"""Reference method plugin: the binary soft-margin hinge formulation and the SVM family
(``l1-svm``, ``fsv``, ``em-l0``, ``arom``, ``svm-weights``).

Discovered like any third-party plugin, through the entry point ``svm = "fsframe_svm"`` in the
group ``fsframe`` of fsframe's own ``pyproject.toml``.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from fsframe import BuiltModel, Formulation, MethodSpec, ProblemClass, hookimpl
from fsframe.formulation import FromDataSolution
from fsframe.validators import real, to_float
from fsframe.pyomo_ext import LinearMap, add_linear_constraints, add_named_expressions, add_sparsity_slot, var_list

__all__ = ["HingeFormulation"]


def _margin_matrix(X, y) -> "sp.csr_matrix":
    """``[diag(y) X, y, I]``, the margin rows ``y_i (x_i . w + b) + xi_i`` over ``(w, b, xi)``, in
    CSR without zeros, built straight into its three arrays: no dense ``diag(y) X`` and no
    ``hstack`` copies beside them (at 2000 x 20000 those were 1.5 GB of temporaries)."""
    import scipy.sparse as sp

    m, n = X.shape
    width = n + 1 + m
    if sp.issparse(X):
        return _margin_matrix_sparse(X, y)
    itype = np.int32 if max(width, m * (n + 2)) < np.iinfo(np.int32).max else np.int64
    vals = np.empty((m, n + 2))
    np.multiply(X, y[:, None], out=vals[:, :n])
    vals[:, n] = y
    vals[:, n + 1] = 1.0
    cols = np.empty((m, n + 2), dtype=itype)
    cols[:] = np.arange(n + 2, dtype=itype)
    cols[:, n + 1] = n + 1 + np.arange(m, dtype=itype)
    nonzero = vals != 0.0
    if nonzero.all():
        data, indices = vals.reshape(-1), cols.reshape(-1)
        counts = np.full(m, n + 2)
    else:
        data, indices = vals[nonzero], cols[nonzero]
        counts = nonzero.sum(axis=1)
    indptr = np.zeros(m + 1, dtype=itype)
    np.cumsum(counts, out=indptr[1:])
    return sp.csr_matrix((data, indices, indptr), shape=(m, width))


def _margin_matrix_sparse(X, y) -> "sp.csr_matrix":
    """:func:`_margin_matrix` of a CSR ``X`` (canonical: sorted, no explicit zeros): row ``i``
    holds ``y_i`` times its stored entries, then ``y_i`` (the intercept) and 1 (its slack), so
    memory is proportional to the stored entries of ``X``, never to ``m x n``."""
    import scipy.sparse as sp

    m, n = X.shape
    width = n + 1 + m
    counts = np.diff(X.indptr).astype(np.int64) + 2
    itype = np.int32 if max(width, int(counts.sum())) < np.iinfo(np.int32).max else np.int64
    indptr = np.zeros(m + 1, dtype=itype)
    np.cumsum(counts, out=indptr[1:])
    ends = indptr[1:]
    own = np.ones(int(indptr[-1]), dtype=bool)
    own[ends - 1] = False
    own[ends - 2] = False  # the two extra entries of each row
    rows = np.repeat(np.arange(m), counts - 2)
    data = np.empty(int(indptr[-1]))
    indices = np.empty(int(indptr[-1]), dtype=itype)
    data[own] = X.data * y[rows]
    indices[own] = X.indices
    data[ends - 2], indices[ends - 2] = y, n
    data[ends - 1], indices[ends - 1] = 1.0, n + 1 + np.arange(m)
    return sp.csr_matrix((data, indices, indptr), shape=(m, width))


def _majority_dual_norm(X, major, sign: float, small: int, solver) -> float:
    """``min ||sign X_major' mu - sign X_minor' 1||_inf`` over ``0 <= mu <= 1``, ``sum mu = small``:
    the LP ``min tau`` s.t. ``-tau <= B mu + c <= tau`` (see :meth:`HingeFormulation.empty_model_threshold`)."""
    import scipy.sparse as sp

    from fsframe.canonical import ProblemData
    from fsframe.errors import SolverFailedError

    B = sp.csr_matrix((sign * X[major]).T)  # n x k
    c = -sign * np.asarray(X[~major].sum(axis=0), dtype=float).ravel()
    n, k = B.shape
    tau = np.ones((n, 1))
    G = sp.vstack([sp.hstack([B, -tau]), sp.hstack([-B, -tau])], format="csr")
    data = ProblemData(c=np.r_[np.zeros(k), 1.0], A=sp.csr_matrix(np.r_[np.ones(k), 0.0][None, :]),
                       b=np.array([float(small)]), G=G, h=np.r_[-c, c], lb=np.zeros(k + 1),
                       ub=np.r_[np.ones(k), np.inf], l=2 * n)
    res = solver.solve(data)
    solver.record("empty_model_threshold", (res.status,))
    if not res.ok or res.objective is None:
        raise SolverFailedError(f"hinge: the LP of the empty model's multipliers ended {res.status.value} "
                                f"({res.message}); no automatic grid start", result=res)
    return float(res.objective)


@attrs.frozen
class HingeFormulation(Formulation):
    r"""Binary soft-margin hinge loss (002 eqs. 1-2; 001 eq. 2)::

        min  penalty(w) + C * sum_i xi_i
        s.t. y_i (w . x_i + b) >= 1 - xi_i,   xi_i >= 0

    With a linear slot term (``lin``, ``lin_w``) ``w = u - v`` with ``u, v >= 0`` and the group
    norm's epigraph is ``s_j = u_j + v_j`` — an LP with ``2n + m + 1`` columns and ``m`` rows
    (measured 3.6x faster than a free ``w`` with ``2n`` rows ``|w_j| <= s_j`` at n = 1000, m = 200;
    docs/performance.md). With only
    the quadratic term ``w`` is free (the EM QP, 002 eq. 7). Paper 001 eq. 2 scales the slack sum
    by ``1/(N_+ + N_-)``: its ``C`` equals ours times the number of samples.

    Parameters
    ----------
    C : float > 0
        Weight of the hinge loss.
    """

    name = "hinge"
    reference = "paper 002 eqs. 1-2 and 7-8; paper 001 eq. 2 (L1-SVM)"
    sparse_input = True  # the margin rows are diag(y) X: a CSR X gives CSR rows
    traits = frozenset({"large_margin"})
    C: float = attrs.field(default=1.0, converter=to_float, validator=real(0))

    def problem_class(self, terms):
        return ProblemClass.QP if "quad" in terms else ProblemClass.LP

    def build(self, X, y, terms):
        import scipy.sparse as sp

        import pyomo.environ as pyo
        from pyomo.common.gc_manager import PauseGC
        from pyomo.core.expr.numeric_expr import LinearExpression

        m, n = X.shape
        split = bool(terms & {"lin", "lin_w"})
        model = pyo.ConcreteModel(name=f"hinge(C={self.C})")
        with PauseGC():
            if split:
                model.u = pyo.Var(range(n), bounds=(0, None))
                model.v = pyo.Var(range(n), bounds=(0, None))
                uv = var_list(model.u, model.v)
                coef = LinearMap(sp.hstack([sp.identity(n), -sp.identity(n)]), uv)
                magnitude = LinearMap(sp.hstack([sp.identity(n), sp.identity(n)]), uv)
                # the margin rows are written over the named w_j = u_j - v_j: one term per feature;
                # both are created in Pyomo when the model is asked for
                wvars = add_named_expressions(model, "w", coef, defer=True)
            else:
                model.w = pyo.Var(range(n))
                wvars = var_list(model.w)
                coef = LinearMap.identity(wvars)
                magnitude = None
            model.b = pyo.Var()
            model.xi = pyo.Var(range(m), bounds=(0, None))
            xis = var_list(model.xi)
        # deferred: the m x n margin rows are created in Pyomo only when the model is asked for
        # (the compiler reads the record); 2000 x 20000 would otherwise be 40M expression terms
        add_linear_constraints(model, "margin", LinearMap(_margin_matrix(X, y), wvars + [model.b] + xis),
                               lower=1.0, defer=True)
        loss = LinearExpression(constant=0.0, linear_coefs=[self.C] * m, linear_vars=xis)
        slot = add_sparsity_slot(model, coef=coef, magnitude=magnitude, terms=terms, loss=loss)
        return BuiltModel(model=model, slot=slot, intercept=LinearMap(np.ones((1, 1)), [model.b]),
                          coef_shape=(n,))

    threshold_scaling = {"C": 1.0}  # empty_model_threshold is proportional to C

    def empty_model_threshold(self, X, y, *, aux=None) -> float:
        r"""The smallest uniform L1 weight ``lambda`` (slot ``lin``) at which ``w = 0`` is optimal:
        ``lambda_0 = C d`` with ``d = min ||X'(mu ⊙ y)||_inf`` over the empty model's optimal
        multipliers ``mu = lambda_i / C`` (where the first feature enters the L1-SVM, scikit-learn's
        ``l1_min_c`` for this loss).

        Optimality of ``w = 0`` (LP duality of 001 eq. 2): multipliers ``0 <= lambda_i <= C`` of the
        margin rows with ``sum_i lambda_i y_i = 0`` (``b`` free), complementary to the empty model's
        optimal ``(b, xi)``, and ``|sum_i lambda_i y_i x_ij| <= lambda`` for every feature. The
        empty model's loss ``C sum_i max(0, 1 - y_i b)`` is least at ``b = ±1`` toward the larger
        class: there every sample of the smaller class has ``xi_i = 2 > 0`` (so ``mu_i = 1``) and
        the larger class sits on its margin (``0 <= mu_i <= 1`` with ``sum mu_i`` equal to the
        smaller class's size, from ``sum_i lambda_i y_i = 0``). Balanced classes leave
        ``mu = 1``: ``d = ||X'y||_inf``. Otherwise ``d`` is the small LP over the larger class's
        ``mu`` (``2n`` rows, solved through ``aux``, an :class:`fsframe.AuxSolver`)."""
        y = np.asarray(y, dtype=float)
        pos = y > 0
        n_pos, n_neg = int(pos.sum()), int((~pos).sum())
        if n_pos == n_neg:
            return self.C * float(np.max(np.abs(X.T @ y), initial=0.0))
        major = pos if n_pos > n_neg else ~pos
        sign = 1.0 if n_pos > n_neg else -1.0
        small = min(n_pos, n_neg)
        if aux is None:
            from fsframe.auxiliary import AuxSolver
            from fsframe.enums import ProblemClass

            aux = AuxSolver.default(ProblemClass.LP)
        return self.C * _majority_dual_norm(X, major, sign, small, aux)

    from_data_min_rows: ClassVar[int] = 500
    from_data_min_ratio: ClassVar[float] = 4.0
    """``working_set="auto"`` solves the L1 hinge LP from ``X`` (:meth:`solve_from_data`) from
    ``from_data_min_rows`` samples on, with ``from_data_min_ratio`` features per sample or more,
    where it was measured faster than the compiled working sets (0.66-0.97x CPU from 500 x 2 000
    to 1 000 x 4 000; docs/performance.md, "In `fit`: the `from_data` path")."""
    from_data_path_min_ratio: ClassVar[float] = 1.0
    """Along a path (``fsframe.path``: a tuning grid's sweep over ``C``) the ratio is this instead (or
    :attr:`from_data_min_ratio` when that is lower):
    each point's generation starts from the previous point's support and margin rows, measured
    at 0.14x the CPU of the compiled path's warm sweep on three inner folds at 756 x 1 024
    (129.9 against 17.9 s; docs/performance.md, "Tuning `l1-svm` on COIL20")."""
    path_start_rows: ClassVar[float] = 0.5
    """The samples a path's next point starts with: margin below ``1 + path_start_rows`` at this point."""

    def from_data_on_path(self, m: int, n: int, *, terms, weights, backend: str, options) -> bool:
        """Whether a path at ``m`` samples by ``n`` features solves each point from ``X`` (the
        rule of :meth:`solve_from_data` with a ``start``; fsframe asks it with the fit's slot
        ``terms``, ``weights``, backend name and options, fsframe.from_data.from_data_along_path)."""
        return self._refusal(terms, weights, backend) is None and self._at_size(m, n, options, along=True)

    def _refusal(self, terms, weights, backend: str) -> str | None:
        """Why this LP is not the problem's (refused when forced), or ``None``."""
        if type(self) is not HingeFormulation:
            # a subclass may change the model (its build, bounds, restatements): the LP below is the
            # plain L1 hinge only, so a subclass opts in by defining solve_from_data itself
            return f"{type(self).__name__} is a subclass of HingeFormulation; this LP is the plain L1 hinge's"
        if set(terms) != {"lin"} or set(weights) != {"lin"}:
            return f"it solves the L1 penalty (slot term lin) only, not {sorted(terms)}"
        if backend != "highs":
            return f"it runs on HiGHS (backend 'highs'), not {backend!r}"
        return None

    def _at_size(self, m: int, n: int, options, along: bool) -> bool:
        """Whether generation is expected to pay at ``m`` x ``n`` (unforced): from
        :attr:`from_data_min_rows` samples with :attr:`from_data_min_ratio` features per sample
        (along a path the lower of it and :attr:`from_data_path_min_ratio`), without a ``time_limit``."""
        ratio = min(self.from_data_min_ratio, self.from_data_path_min_ratio) if along else self.from_data_min_ratio
        return m >= self.from_data_min_rows and n >= ratio * m and options.time_limit is None

    def solve_from_data(self, X, y, terms, weights, *, backend, options, force=False, start=None):
        """The ``from_data`` protocol: the L1 hinge LP (slot ``lin`` only, weights ``a_j``) by
        column and row generation straight from ``X`` on HiGHS
        (:func:`fsframe.backends.hinge_generation.solve_l1_hinge`), certified on the full LP from
        two products with ``X``. Declines (``None``) unless ``force`` for data smaller than
        :attr:`from_data_min_rows` samples by :attr:`from_data_min_ratio` times as many features
        (:attr:`from_data_path_min_ratio` along a path: ``start``, a
        :class:`fsframe.formulation.PathStart`, whose ``previous`` point's support and margin rows
        are the first LP here), or with a ``time_limit`` (per restricted LP here);
        refuses (``UnsupportedProblemError``, with ``force``) other terms or another backend."""
        import warnings

        from fsframe.errors import SolverWarning, UnsupportedProblemError

        why = self._refusal(terms, weights, backend)
        if why is not None:
            if force:
                raise UnsupportedProblemError(f"{self.name}: cannot solve from X: {why}")
            return None
        if not force and not self._at_size(*X.shape, options, along=start is not None):
            return None
        guess = "auto" if start is None or start.previous is None else start.previous
        from fsframe.backends.hinge_generation import CERTIFY_TOL, hinge_certificate, solve_l1_hinge
        from fsframe.backends.highs import FSFRAME_OPTIONS
        from fsframe.enums import Status

        # fsframe's own keys among the backend's options (``qp_form``, ``append_restart``) steer the
        # compiled path's HiGHS backend; HiGHS itself does not know them
        highs_options = {k: v for k, v in options.backend_options.items() if k not in FSFRAME_OPTIONS}
        if options.time_limit is not None:
            highs_options.setdefault("time_limit", float(options.time_limit))  # per restricted LP
        if options.verbose:
            highs_options.setdefault("output_flag", True)
        C = self.C

        def solved(a):
            with warnings.catch_warnings():  # its certificate's warning: judged again below, warned by the fit
                warnings.simplefilter("ignore", SolverWarning)
                res = solve_l1_hinge(X, y, C, a, highs_options=highs_options, guess=guess)

            def judged(coef, intercept, duals):
                xw = np.asarray(X @ coef, dtype=float).ravel()
                slack = np.maximum(0.0, 1.0 - y * (xw + intercept))
                cert = hinge_certificate(X, y, C, a, coef, intercept, slack, duals)
                worst = max(abs(cert["gap"]), cert["primal_residual"], cert["dual_residual"])
                cert["status"] = "optimal" if worst <= CERTIFY_TOL else "optimal_inaccurate"
                return cert["primal_objective"], cert

            objective, cert = judged(res.coef, res.intercept, res.duals)

            def recertify(coef):
                return judged(np.asarray(coef, dtype=float).ravel(), res.intercept, res.duals)

            def restricted(keep):  # the features outside keep fixed at zero: weight inf
                return solved(np.where(np.asarray(keep, dtype=bool), a, np.inf))

            status = Status.OPTIMAL if cert["status"] == "optimal" else Status.OPTIMAL_INACCURATE
            margin = y * (np.asarray(X @ res.coef, dtype=float).ravel() + res.intercept)
            # the next point of a path starts from this support and the rows near the margin
            following = (np.flatnonzero(res.coef), np.flatnonzero(margin < 1.0 + self.path_start_rows))
            return FromDataSolution(
                coef=res.coef, intercept=res.intercept, objective=objective, status=status, certificate=cert,
                backend="highs", rounds=res.rounds,
                groups=int(res.features.size), recertify=recertify, restricted=restricted,
                info={"from_data_samples": int(res.samples.size)}, start=following)

        return solved(np.asarray(weights["lin"], dtype=float))

    restatable_params = ("C",)

    def restate(self, built, base, compiled, params):
        """``base`` with the slack costs set to the new ``C`` (the only place ``C`` enters), and the
        model's slot loss ``C * sum_i xi_i`` replaced to match."""
        C = to_float(params.get("C"))
        if set(params) != {"C"} or not isinstance(C, float) or not (np.isfinite(C) and C > 0):
            raise ValueError(f"{self.name}: restate takes one finite C > 0, got {params!r}")
        from pyomo.core.expr.numeric_expr import LinearExpression

        model = built.model
        xis = var_list(model.xi)
        model.fsframe_slot.loss.set_value(LinearExpression(constant=0.0, linear_coefs=[C] * len(xis),
                                                           linear_vars=xis))
        c = np.array(base.c, dtype=float)
        c[compiled.cols(xis)] = C
        return base.evolve(c=c)

    def mask_space(self, sub):
        """The greedy loop's capability (paper 003 Algorithm 1 on the hinge model: a greedy
        L1-SVM, RFSVM-like): eq. 24's loss is ``C sum_i (1 - y_i (x_i E w + b))_+``."""
        from fsframe.loops.greedy import LinearMaskSpace

        y = np.asarray(sub.y, dtype=float)
        C = self.C

        def hinge(R):
            return C * np.maximum(1.0 - y * R[..., 0], 0.0).sum(-1)

        return LinearMaskSpace(sub, hinge)


@hookimpl
def fsframe_register_formulations():
    return [HingeFormulation]


@hookimpl
def fsframe_register_oracles():
    from fsframe.testing import Oracle, hinge_loss  # the conformance kit loads Pyomo: only when it asks

    return [Oracle("decision_loss", HingeFormulation, lambda f: hinge_loss(f.C))]


@hookimpl
def fsframe_register_methods():
    return [
        MethodSpec("l1-svm", formulation="hinge", surrogate="l1", loop="single", defaults={"C": 1.0},
                   sparsity="C",
                   reference="Bradley & Mangasarian 1998; paper 001 eq. 2",
                   description="L1-norm soft-margin SVM, one LP: min ||w||_1 + C sum xi"),
        MethodSpec("fsv", formulation="hinge", surrogate="exp", loop="reweighted-l1",
                   defaults={"C": 1.0, "alpha": 5.0},
                   sparsity="C",
                   reference="Bradley & Mangasarian, ICML 1998 (FSV); paper 002 baseline",
                   description="concave exponential surrogate by successive linearisation (LPs)"),
        MethodSpec("em-l0", formulation="hinge", surrogate="lp", loop="em",
                   defaults={"C": 1.0, "p": 0.0, "weights": "paper"}, sparsity="n_features",
                   reference="Huang, King & Lyu, paper 002, eqs. 7-9, Prop. 3",
                   description="EM zero-norm SVM (p=0) or l_p (0<p<=1): reweighted QPs"),
        MethodSpec("arom", formulation="hinge", surrogate="log", loop="em",
                   defaults={"C": 1.0, "eps": 1e-3, "weights": "paper"}, sparsity="n_features",
                   reference="Weston, Elisseeff, Schoelkopf & Tipping, JMLR 3, 2003 (AROM); paper 002 baseline",
                   description="log surrogate by multiplicative (reweighted quadratic) updates"),
        MethodSpec("greedy-l1-svm", formulation="hinge", surrogate=None, loop="greedy", defaults={"C": 1.0},
                   sparsity="n_features",
                   reference="paper 003 Algorithm 1 on the hinge model; Bradley & Mangasarian RFSVM",
                   description="greedy feature mask (eqs. 21-24) on the L1-SVM LP"),
        MethodSpec("svm-weights", formulation="hinge", surrogate=None, loop="single",
                   defaults={"C": 1.0, "penalty": "l2"},
                   sparsity="n_features",
                   reference="paper 002 §3, footnote 5",
                   description="standard L2 SVM; with n_features=r keeps the r largest |w_j|"),
    ]
