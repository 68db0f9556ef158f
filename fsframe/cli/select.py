"""``fsframe select``: one method, fitted once on all samples or cross-validated."""

from __future__ import annotations

import sys
import time

import numpy as np

from ..evaluation import (accuracy_score, component_dict, cross_validate, environment_versions,
                          facts_text, format_components, r2_score, scale_fit_transform, to_jsonable)
from ..fitting import fit
from ..method import sparsity_knobs
from ..results import backend_text, solved_by, solver_label
from .common import EXIT_OK, UsageError, check_task
from .evaluate import cv_spec, dataset_line, load_data, method_params, report_written, run_evaluation
from .output import check_output_paths, meta, table, write_csv, write_json
from .tune import tune_then_select



def certificate_line(cert: dict) -> str:
    """``certificate: gap ..., working set k of n (rounds, largest pricing violation); verify ...``
    (one-vs-rest: the worst class)."""
    if not cert:
        return ""
    parts = [c for c in cert["per_class"] if c] if "per_class" in cert else [cert]
    if not parts:
        return ""
    # coefficients cut after the certified solve (status "cut"): the gap is that of the uncut point
    cut = [c.get("cut_distance") for c in parts if c.get("certifies_returned") is False]
    cert = max(parts, key=lambda c: abs(c.get("gap", 0.0)))
    bits = []
    if "gap" in cert:
        bits.append(f"KKT gap {cert['gap']:.1e}, residuals {cert['primal_residual']:.1e} / {cert['dual_residual']:.1e}")
    if cert.get("working_set") is not None:
        bits.append(f"working set {cert['working_set']} of {cert['n_groups']} ({cert['rounds']} rounds, largest "
                    f"pricing violation {cert['max_violation']:.1e})")
    v = cert.get("verify")
    if v:
        gap = v.get("objective_gap")
        bits.append(f"verify on {v['backend']}: {v['status']}" + ("" if gap is None else f", objective gap {gap:.1e}"))
    if cut:
        dist = max((d for d in cut if d is not None), default=None)
        bits.append("the returned coefficients are not certified: cut from the certified point"
                    + ("" if dist is None else f" (largest change {dist:.1e})"))
    return "certificate: " + "; ".join(bits) if bits else ""

def cmd_select(args, argv) -> int:
    if args.method is None and not (args.formulation and args.loop):
        raise UsageError("give --method NAME (see 'fsframe methods'), or --formulation and --loop "
                         "(and --surrogate) for a custom combination")
    check_output_paths(args)
    data = load_data(args)
    check_task(args, data)
    params, _ = method_params(args)
    if args.tune is not None:
        return tune_then_select(args, argv, data, params, _select_once)
    cv = cv_spec(args)
    if cv is None:
        if args.repeats != 1:
            raise UsageError("--repeats needs --cv or --holdout")
        if args.retrain is not None:
            raise UsageError("--retrain needs --cv or --holdout (it changes only the evaluated classifier)")
        if args.dask is not None:
            raise UsageError("--dask runs the fits of a cross-validation; add --cv or --holdout")
        return _select_once(args, argv, data, params)
    if args.plot:
        raise UsageError("--plot draws one fit's iterations; drop --cv/--holdout (use 'fsframe run' and "
                         "'fsframe report' for pictures of an evaluation)")
    return run_evaluation(args, argv, lambda **kw: cross_validate(
        data, method=args.method, formulation=args.formulation, surrogate=args.surrogate, loop=args.loop, cv=cv,
        **kw, **params), text=lambda r: r.report(top=args.top or 10), rows=lambda r: (r.fold_rows(), r.fold_columns),
        results=lambda r: [r])


def _select_once(args, argv, data, params) -> int:
    top = args.top or 30
    X = scale_fit_transform(data.X, args.scale)
    if args.plot:
        from ..evaluation.plots import _pyplot

        _pyplot()  # fail before the fit when matplotlib is missing
    t0 = time.perf_counter()
    res = fit(X, data.y, method=args.method, formulation=args.formulation, surrogate=args.surrogate,
              loop=args.loop, n_features=args.n_features, progress={"on": True, "off": False}.get(args.progress),
              **params)
    wall = time.perf_counter() - t0
    if args.plot:
        from ..evaluation.plots import draw, trace_data

        paths = draw("trace", trace_data(res), args.plot, title=f"{args.method or 'fit'} on {data.name}")
        print(f"wrote {paths[0]} and {paths[1]}", file=sys.stderr)
    names = list(data.feature_names)
    kernel = res.transform is not None
    label = args.method or "+".join(p for p in (args.formulation, args.surrogate, args.loop) if p)
    classes = list(res.classes)
    weight_labels, coef = weight_rows(res.coef, classes)
    ovr = bool(res.per_class)
    facts = res.facts
    components = {"formulation": component_dict(res.formulation), "surrogate": component_dict(res.surrogate),
                  "loop": component_dict(res.loop), "kernel": component_dict(res.transform)}
    info = res.per_class[0].info if ovr else res.info
    solver = info.get("backend_version")
    if data.is_regression:  # R² of the fitted values, scikit-learn's definition (fsframe.evaluation.r2_score)
        train_score, score_name = r2_score(data.y, res.predict(X)), "training_r2"
    else:
        train_score, score_name = accuracy_score(data.y, res.predict(X)), "training_accuracy"
    if args.json != "-":
        print(f"{label} on {dataset_line(data)}")
        print(f"  model: {format_components(components, resolved=facts)}; {backend_text(res.backend, solver, solved_by(res))}")
        derived = facts_text(facts, components)
        if derived:
            print(f"  from the data: {derived}")
        details = facts_text(res.details, components)
        if details:
            print(f"  details: {details}")
        print(f"  protocol: fitted once on all samples, "
              + {"standard": "standardised (mean 0, std 1)", "minmax": "min-max scaled to [0, 1]",
                 "maxabs": "divided by the largest |value| per feature",
                 "none": "unscaled"}[args.scale]
              + ("; one-vs-rest over " + str(len(classes)) + " classes" if ovr else ""))
        print()
        n = res.n_selected
        total = len(res.support)
        if kernel:
            print(f"selected {n} of {total} training samples ({100 * n / total:.1f}%): with a kernel map the "
                  "groups are training samples (--json/--csv list them)")
        else:
            print(f"selected {n} of {total} features ({100 * n / total:.1f}%)" + (":" if n else ""))
        if res.info.get("n_features_default") is not None:
            print(f"  ({label} ranks the features and has no sparsity of its own: without --n-features it keeps "
                  "the better half)")
        if n and not kernel:
            order = res.selected[np.argsort(-np.max(np.abs(coef[:, res.selected]), axis=0), kind="stable")]
            if coef.shape[0] == 1:
                rows = [("#", "index", "feature", "weight")]
                rows += [(str(i + 1), str(j), names[j], _w(coef[0, j], 4)) for i, j in enumerate(order[:top])]
            elif coef.shape[0] <= 6:
                rows = [("#", "index", "feature", *[f"w[{c}]" for c in weight_labels])]
                rows += [(str(i + 1), str(j), names[j], *[_w(coef[k, j], 3) for k in range(coef.shape[0])])
                         for i, j in enumerate(order[:top])]
            else:
                rows = [("#", "index", "feature", "max |w| over classes")]
                rows += [(str(i + 1), str(j), names[j], f"{np.max(np.abs(coef[:, j])):.4g}")
                         for i, j in enumerate(order[:top])]
            for line in table(rows, indent="  "):
                print(line)
            if n > top:
                print(f"  ... {n - top} more (--top N shows more; --json/--csv have all)")
        elif n == 0:
            print("  no feature was selected: lower the sparsity pressure (" + pressure_hint(res) + ")")
        print()
        obj = "-" if res.objective is None else f"{res.objective:.6g}"
        reason = info.get("stop_reason") or ""
        print(f"objective {obj}; {res.n_iter} iteration{'s' if res.n_iter != 1 else ''}"
              f"{' (largest over classes)' if ovr else ''}; converged: {'yes' if res.converged else 'NO'}"
              f"{' (' + reason + ')' if reason and not ovr else ''}; monotone: {monotone_text(res)}")
        statuses = sorted({getattr(s, 'value', str(s)) for s in res.statuses})
        print(f"solver statuses: {', '.join(statuses)}")
        line = certificate_line(res.certificate)
        if line:
            print(line)
        i = res.info
        print(f"time {i.get('seconds', wall):.3f} s (build {i.get('build_seconds', 0):.3f}, compile "
              f"{i.get('compile_seconds', 0):.3f}, solve {i.get('solve_seconds', 0):.3f})")
        if data.is_regression:
            print(f"training R² {train_score:.4f} (on the data the model was fitted to; --cv 10 estimates test R²)")
        else:
            print(f"training accuracy {100 * train_score:.2f}% (on the data the model was fitted to; "
                  f"--cv 10 estimates test accuracy)")
    if args.json:
        out = {**meta(args, argv),
               "dataset": {"name": data.name, "source": data.source, "n_samples": data.n_samples,
                           "n_features": data.n_features, "task": data.task, "classes": to_jsonable(classes),
                           "class_counts": {str(k): v for k, v in data.class_counts.items()},
                           "feature_names": names},
               "method": args.method, "components": components, "params": to_jsonable(res.params),
               "fit_options": to_jsonable({k: v for k, v in params.items() if k in ("backend", "time_limit")}),
               "scale": args.scale, "n_features": args.n_features, "seed": None,
               "versions": environment_versions({"solver": solver_label(res.backend, solver)}),
               "result": to_jsonable(res.to_dict()),
               "selected_names": None if kernel else [names[j] for j in res.selected],
               "coef": to_jsonable(np.asarray(res.coef).tolist()), "intercept": to_jsonable(np.asarray(res.intercept).tolist()),
               "classes": to_jsonable(classes), score_name: train_score,
               "facts": to_jsonable(facts), "history": [to_jsonable(h.as_dict()) for h in res.history]}
        write_json(args.json, out)
    if args.csv:
        if kernel:
            rows = [{"index": int(j), "selected": bool(res.support[j])} for j in range(len(res.support))]
            write_csv(args.csv, rows)
        else:
            rows = []
            for j in range(len(names)):
                row = {"index": j, "feature": names[j], "selected": bool(res.support[j])}
                if coef.shape[0] == 1:
                    row["weight"] = float(coef[0, j])
                else:
                    for k, c in enumerate(weight_labels):
                        row[f"weight_{c}"] = float(coef[k, j])
                rows.append(row)
            write_csv(args.csv, rows)
    report_written(args)
    return EXIT_OK


def monotone_text(res) -> str:
    """:attr:`FitResult.monotone_text <fsframe.results.FitResult.monotone_text>` (the one source
    of ``yes``/``NO``/``not checked``), pointing to the trace picture when nothing was checked."""
    text = res.monotone_text
    return text[:-1] + "; see --plot)" if not res.monotone_checked else text


def weight_rows(coef, classes) -> tuple[list[str], np.ndarray]:
    """``(labels, W)``: ``FitResult.coef`` as a matrix ``W`` with one row per weight vector and the
    features in columns (its last axis; fsframe.results.result_coef), and a label per row: ``[""]``
    for a binary linear model; the class for a multi-class model (its first axis); the block
    number from 1 for a formulation with several blocks per model (the twin SVM's planes), as
    ``class/block`` one-vs-rest."""
    coef = np.asarray(coef, dtype=float)
    lead = coef.shape[:-1]
    W = coef.reshape(-1, coef.shape[-1])
    if not lead:
        return [""], W
    multi = len(classes) > 2
    labels = ["/".join(([str(classes[idx[0]])] + [str(i + 1) for i in idx[1:]]) if multi
                       else [str(i + 1) for i in idx]) for idx in np.ndindex(*lead)]
    return labels, W


def pressure_hint(res) -> str:
    """The parameters of this fit's own components that lower its sparsity pressure (em-l0 has
    ``C`` and ``p``, no ``alpha``), as ``--set`` options."""
    knobs = [f"--set {k}=... ({advice})" for k, advice in sparsity_knobs(res.formulation, res.surrogate)]
    return "e.g. " + " or ".join(knobs) if knobs else "another method or a larger n_features"


def _w(v: float, digits: int) -> str:
    return "0" if v == 0 else f"{v:+.{digits}g}"

