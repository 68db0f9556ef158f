"""``fsframe compare``: several methods cross-validated on the same splits."""

from __future__ import annotations

from ..evaluation import compare
from ..plugins import get_registry
from .common import UsageError
from .evaluate import cv_spec, load_data, method_params, run_evaluation
from .output import check_output_paths


def cmd_compare(args, argv) -> int:
    check_output_paths(args)
    data = load_data(args)
    common, per = method_params(args, allow_prefix=True)
    reg = get_registry()
    names = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else reg.names("method")
    if not names:
        raise UsageError("--methods is empty")
    for n in names:
        reg.get("method", n)  # unknown names fail here, before any fit
    unknown = sorted(set(per) - set(names))
    if unknown:
        raise UsageError(f"--set for {unknown}, which are not among the compared methods {names}")
    sweep = args.n_features if isinstance(args.n_features, list) and len(args.n_features) > 1 else None
    if sweep:  # accuracy versus the number of features (002, 004): one row per method and r
        entries = [(f"{n} r={r}", {"method": n, **per.get(n, {}), "n_features": r}) for n in names for r in sweep]
        args.n_features = None
    else:
        if isinstance(args.n_features, list):
            args.n_features = args.n_features[0]
        entries = [(n, {"method": n, **per.get(n, {})}) for n in names]
    cv = cv_spec(args)
    if cv is None:
        cv = 10
    return run_evaluation(args, argv, lambda **kw: compare(data, methods=entries, cv=cv, **kw, **common),
                     text=lambda r: r.report(markdown=args.markdown), rows=lambda r: (r.rows(),),
                     results=lambda r: r.results)

