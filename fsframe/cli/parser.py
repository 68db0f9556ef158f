"""The argument parser: every command, flag and argument type.

Building the parser imports no command: each subcommand's ``func`` imports its module when it
runs (``fsframe select --help`` never loads the fit driver, ``fsframe methods`` never loads Pyomo),
and ``--version`` reads the distribution metadata only when given."""

from __future__ import annotations

import argparse
import importlib
import math
import sys

from .._version import fsframe_version
from .common import GRID_FLAGS, PROG

__all__ = ["build_parser"]


def _command(module: str, func: str):
    """A subcommand's ``func``: imports ``fsframe.cli.<module>`` (a command module, one layer below
    the parser) when the command runs, not when the parser is built, and calls its ``func``."""

    def run(args, argv):
        return getattr(importlib.import_module(f".{module}", __package__), func)(args, argv)

    run.__qualname__ = run.__name__ = func
    return run


class _VersionAction(argparse.Action):
    """``--version``: like argparse's ``version`` action, the version looked up when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show program's version number and exit"):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(f"{PROG} {fsframe_version()}\n")  # stdout, like argparse's version action
        parser.exit()


def _arg_type(convert, ok, expected: str):
    """An argparse ``type=``: ``convert(text)`` must succeed and satisfy ``ok``."""

    def parse(text: str):
        try:
            v = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not ok(v):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {v}")
        return v

    return parse


_positive_int = _arg_type(int, lambda v: v >= 1, "a positive integer")
_folds = _arg_type(int, lambda v: v >= 2, "at least 2 folds")
_fraction = _arg_type(float, lambda v: 0 < v < 1, "a fraction in (0, 1)")
_jobs = _arg_type(lambda t: t if t == "auto" else int(t), lambda v: v != 0,
                  "'auto' or a non-zero number of jobs (1: serial, -1: all cores)")
_jobs_int = _arg_type(int, lambda v: v != 0, "a non-zero number of jobs (1: serial, -1: all cores)")


def _seed(text: str) -> int:
    """An argparse ``type=``: a seed in ``[0, MAX_SEED]`` (the evaluation module is imported on use)."""
    from ..evaluation.splits import MAX_SEED

    return _arg_type(int, lambda v: 0 <= v <= MAX_SEED, f"an integer seed between 0 and {MAX_SEED}")(text)


_positive_float = _arg_type(float, lambda v: 0 < v < math.inf, "a positive number")


def _add_data_args(p) -> None:
    p.add_argument("data", metavar="DATA",
                   help="a data file (CSV/TSV/.data/.txt, LIBSVM .svm/.libsvm, ARFF, MATLAB .mat; .gz read through) "
                        "or a bundled dataset: breast_cancer, wine, iris, digits, synthetic; diabetes (a real target)")
    g = p.add_argument_group("data loading")
    g.add_argument("--task", choices=("classification", "regression"),
                   help="what the label column holds: class labels (default) or a real target for a regression "
                        "method (l1-ls, l0-ls, ...); a bundled data set has its own (diabetes: regression)")
    g.add_argument("--format", choices=("csv", "svmlight", "arff", "mat"), help="file format (default: from the extension)")
    g.add_argument("--label-column", metavar="C",
                   help="label column: index (negative counts from the end) or header name "
                        "(default: a column named target/class/label/y, else the last)")
    g.add_argument("--drop-columns", metavar="C[,C...]", action="append",
                   help="columns to ignore, by index or name (e.g. an id column: --drop-columns 0)")
    g.add_argument("--loader-opt", metavar="KEY=VALUE", action="append",
                   help="other loader options, e.g. delimiter=';', header=true, x_key=fea, y_key=gnd")


def _int_list(text: str) -> list[int]:
    parts = [t.strip() for t in text.split(",") if t.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected R or R1,R2,... (positive integers)")
    return [_positive_int(t) for t in parts]


def _add_eval_args(p, *, default_cv: str, sweep: bool = False) -> None:
    g = p.add_argument_group("evaluation protocol")
    g.add_argument("--cv", type=_folds, metavar="K", help=f"stratified K-fold cross-validation ({default_cv})")
    g.add_argument("--holdout", type=_fraction, metavar="FRACTION",
                   help="instead of --cv: --repeats stratified random splits with this test fraction "
                        "(paper 002: --holdout 0.2 --repeats 10)")
    g.add_argument("--repeats", type=_positive_int, default=1, metavar="R",
                   help="repeat K-fold CV R times with fresh shuffles (paper 001: --cv 10 --repeats 10), "
                        "or the number of --holdout splits (default 1)")
    if sweep:
        g.add_argument("--n-features", type=_int_list, metavar="R[,R...]",
                       help="select exactly R features (paper 002 §3.1); several values give one row per method "
                            "and R (accuracy versus the number of features)")
    else:
        g.add_argument("--n-features", type=_positive_int, metavar="R",
                       help="select exactly R features (paper 002 §3.1)")
    g.add_argument("--scale", choices=("standard", "minmax", "maxabs", "none"), default="standard",
                   help="feature scaling, fitted on each training part (default: standard; sparse data: maxabs "
                        "or none, which keep it sparse)")
    g.add_argument("--retrain", choices=("svm", "linear-svc", "ls"),
                   help="evaluate a model retrained on the selected features: a classifier (paper 002: svm = "
                        "SVC(kernel='linear'); linear-svc) or, on a real target, ls (least squares with an "
                        "intercept)")
    g.add_argument("--retrain-C", type=_positive_float, default=1.0, metavar="C",
                   help="C of the retrained classifier (default 1)")
    g.add_argument("--jobs", type=_jobs, default="auto", metavar="J",
                   help="parallel fits: 1 serial, -1 all cores, N; default auto (parallel over all cores when the "
                        "first fit of each method predicts more than 10 s of serial work; results do not depend on it)")
    g.add_argument("--seed", type=_seed, default=0, metavar="S", help="seed of the splits (default 0)")
    _add_engine_args(g, jobs=False)
    g.add_argument("--progress", dest="progress", action="store_const", const="on", default=None,
                   help="report every fit on stderr (default: only on a terminal)")
    g.add_argument("--no-progress", dest="progress", action="store_const", const="off")


def _add_engine_args(g, *, jobs: bool = True) -> None:
    if jobs:
        g.add_argument("--jobs", type=_jobs_int, default=1, metavar="J",
                       help="parallel cells (joblib processes): 1 serial (default), -1 all cores, N; results do not "
                            "depend on it")
    g.add_argument("--dask", metavar="ADDRESS", help="run the fits on a Dask cluster: a scheduler address "
                   "(tcp://host:8786) or 'local' (a LocalCluster of --jobs workers on 127.0.0.1); needs "
                   "pip install \"fsframe[dask]\"; results are the same bits as a serial run")


def _add_solver_args(p, *, prefix_help: str = "") -> None:
    g = p.add_argument_group("method parameters")
    g.add_argument("--set", metavar="KEY=VALUE", action="append",
                   help="a method parameter (repeatable): C=0.5, alpha=5, max_iter=50, kernel=rbf, sigma=1, "
                        "loop__tol=1e-6; values are parsed as int/float/bool/None/JSON/str" + prefix_help)
    g.add_argument("--backend", metavar="B", help="solver backend (default: auto)")
    g.add_argument("--time-limit", type=_positive_float, metavar="SECONDS", help="time limit of each convex solve")
    g.add_argument("--working-set", choices=("auto", "on", "off"), metavar="{auto,on,off}",
                   help="solve on working sets of features, the rest priced from the multipliers (default: auto; "
                        "docs/working-sets.md)")
    g.add_argument("--verify", metavar="BACKEND",
                   help="re-solve the subproblem that gave the model on a second backend and report the gap")


def _add_output_args(p) -> None:
    g = p.add_argument_group("output")
    g.add_argument("--json", metavar="PATH", help="write every result, parameter and version as JSON ('-': stdout only)")
    g.add_argument("--json-arrays", action="store_true", help="include each fold's train/test indices and predictions in the JSON")
    g.add_argument("--csv", metavar="PATH", help="write a CSV ('-': stdout)")
    g.add_argument("--top", type=_positive_int, metavar="N",
                   help="features listed in the text report (default: 30 for one fit, 10 per line for CV)")


def _add_path_parser(sub, common) -> None:
    """Register ``fsframe path`` on the subparsers ``sub`` (its command module is imported when it runs)."""
    p = sub.add_parser("path", parents=[common], help="fit one method over a grid of one parameter (warm-started)",
                       description="Fit at every value of one parameter, in order, each point starting from the "
                                   "previous one (same answer as separate fits, faster); print support size, "
                                   "objective, iterations, seconds and (with --validation) accuracy, or R² and MSE "
                                   "for a real target, per point.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n"
                              "  fsframe path breast_cancer --method l1-svm   (the automatic grid of C)\n"
                              "  fsframe path breast_cancer --method fsv --alpha 1,2,5,10\n"
                              "  fsframe path breast_cancer --method l1-svm --C 0.01,0.1,1 --validation 0.3\n"
                              "  fsframe path breast_cancer --method arom --grid eps=1e-4,1e-3,1e-2 --json path.json")
    _add_data_args(p)
    g = p.add_argument_group("method and grid")
    g.add_argument("--method", "-m", metavar="M", help="a registered method (fsframe methods)")
    g.add_argument("--formulation", metavar="F")
    g.add_argument("--surrogate", metavar="S")
    g.add_argument("--loop", metavar="L")
    for k in GRID_FLAGS:
        g.add_argument(f"--{k}", dest=f"grid_{k}", metavar="V[,V...]",
                       help=f"sweep {k} over these values ('auto': its automatic grid)")
    g.add_argument("--grid", metavar="KEY=V[,V...]", help="sweep any other parameter (one grid per call; KEY=auto: "
                   "its automatic grid; KEY n_features: numbers of features). Without any grid: the method's "
                   "sparsity parameter over its automatic grid (fsframe methods M)")
    g.add_argument("--n-features", type=_positive_int, metavar="R", help="select exactly R features at every point")
    _add_solver_args(p)
    g = p.add_argument_group("evaluation and output")
    g.add_argument("--validation", type=_fraction, metavar="FRACTION",
                   help="hold out this fraction (of each class; of all samples for a real target) and "
                   "report accuracy (R² and MSE for a real target) on it per point")
    g.add_argument("--seed", type=_seed, default=0, metavar="S", help="seed of the validation split (default 0)")
    g.add_argument("--scale", choices=("standard", "minmax", "maxabs", "none"), default="standard",
                   help="feature scaling, fitted on the training part (default: standard; sparse data: maxabs "
                        "or none, which keep it sparse)")
    g.add_argument("--json", metavar="PATH", help="write every point as JSON ('-': stdout only)")
    g.add_argument("--plot", metavar="PATH", help="draw the path as PATH (.png) and its .svg twin")
    p.set_defaults(func=_command("path", "cmd_path"), csv=None)


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks of errors")
    parser = argparse.ArgumentParser(
        prog=PROG, parents=[common],
        description="Embedded feature selection by (approximate) L0-norm minimisation.",
        epilog="examples:\n"
               "  fsframe methods\n"
               "  fsframe select breast_cancer --method fsv --cv 10\n"
               "  fsframe compare breast_cancer --methods l1-svm,fsv,em-l0,arom,svm-weights --cv 10\n"
               "  fsframe select synthetic --method em-l0 --holdout 0.2 --repeats 10 --n-features 10 --retrain svm\n"
               "docs/cli.md has every command and flag.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("methods", parents=[common], help="list registered methods",
                       description="Every registered method with its formulation, surrogate, loop, default "
                                   "parameters, reference and providing plugin; broken plugins and name conflicts.")
    p.add_argument("name", nargs="?", metavar="NAME", help="show one method and every parameter it accepts")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_command("methods", "cmd_methods"))

    p = sub.add_parser("plugins", parents=[common], help="list plugins, their hooks and components",
                       description="Registered plugins with distribution and version, the hooks each implements "
                                   "and the components it provides; broken plugins with their errors.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_command("plugins", "cmd_plugins"))

    p = sub.add_parser("select", parents=[common], help="select features with one method (fit once, or cross-validate)",
                       description="Without --cv/--holdout: fit once on all samples and print the selected features. "
                                   "With them: cross-validate and report mean ± std of accuracy, MCC, selected "
                                   "features, iterations and seconds, and the selection's stability.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n"
                              "  fsframe select breast_cancer --method fsv\n"
                              "  fsframe select breast_cancer --method fsv --cv 10 --set alpha=3 --json out.json\n"
                              "  fsframe select data.csv --label-column 1 --drop-columns 0 --method em-l0 --cv 10\n"
                              "  fsframe select synthetic --method l1-svm --cv 10 --repeats 10 --jobs -1\n"
                              "  fsframe select breast_cancer --method l1-svm --tune --rule 1se\n"
                              "bundled datasets: breast_cancer, wine, iris, digits, synthetic (docs/cli.md)")
    _add_data_args(p)
    g = p.add_argument_group("method")
    g.add_argument("--method", "-m", metavar="M", help="a registered method (fsframe methods)")
    g.add_argument("--formulation", metavar="F", help="override the method's formulation, or compose your own with --loop")
    g.add_argument("--surrogate", metavar="S", help="override the method's surrogate ('none' for none)")
    g.add_argument("--loop", metavar="L", help="override the method's outer loop")
    _add_solver_args(p)
    _add_eval_args(p, default_cv="default: no CV, fit once on all samples")
    g = p.add_argument_group("tuning (without --cv: choose the sparsity, then fit once)")
    g.add_argument("--tune", nargs="?", const="", metavar="PARAM",
                   help="choose the method's sparsity parameter (or PARAM: C, delta_fraction, n_features, ...) by "
                        "cross-validation over its automatic grid, then fit once at the chosen value")
    g.add_argument("--tune-folds", type=_folds, default=5, metavar="K", help="folds of the tuning (default 5)")
    g.add_argument("--rule", choices=("best", "1se"), default="best",
                   help="best mean accuracy (default), or the fewest features within one standard error of it")
    _add_output_args(p)
    p.add_argument("--plot", metavar="PATH", help="without --cv: draw the objective and support size per outer "
                   "iteration of the fit as PATH (.png) and its .svg twin (needs pip install \"fsframe[plot]\")")
    p.set_defaults(func=_command("select", "cmd_select"))

    _add_path_parser(sub, common)

    p = sub.add_parser("compare", parents=[common], help="cross-validate several methods on the same splits",
                       description="One row per method, mean ± std over the same folds (a paired comparison): "
                                   "accuracy, MCC, selected features, iterations, seconds, stability.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n"
                              "  fsframe compare breast_cancer --methods l1-svm,fsv,em-l0,arom,svm-weights --cv 10\n"
                              "  fsframe compare wine --methods fsv,em-l0 --set C=0.5 --set fsv:alpha=3 --markdown\n"
                              "  fsframe compare breast_cancer --methods fsv,arom,svm-weights --holdout 0.2 --repeats 10 "
                              "--n-features 5 --retrain svm")
    _add_data_args(p)
    p.add_argument("--methods", metavar="M[,M...]", help="comma-separated methods (default: every registered method)")
    _add_solver_args(p, prefix_help="; METHOD:KEY=VALUE sets it for one method only (fsv:alpha=3); a plain KEY "
                                    "reaches every method that accepts it")
    _add_eval_args(p, default_cv="default 10", sweep=True)
    _add_output_args(p)
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--out", metavar="DIR", help="run as a study into this results folder: one file per finished "
                   "fit, resumable (rerun to finish), 'fsframe report DIR' for tables and pictures")
    p.set_defaults(func=_command("compare", "cmd_compare"))

    p = sub.add_parser("run", parents=[common], help="run an experiment file (resumable; joblib or Dask)",
                       description="Run every cell (dataset x configuration x split) of a TOML experiment file that "
                                   "is not finished in the results folder, writing each cell as it ends; a rerun "
                                   "skips finished cells. docs/experiments.md describes the file.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n"
                              "  fsframe run quickstart --out results/quickstart   (a study shipped with fsframe)\n"
                              "  fsframe run paper000 --data-dir ~/data --jobs 2    (paper 000's protocol, docs/papers.md)\n"
                              "  fsframe run paper004 --reduced                     (its small version, bundled data)\n"
                              "  fsframe run study.toml --jobs 2\n"
                              "  fsframe run study.toml --dask local --jobs 2\n"
                              "  fsframe run study.toml --dask tcp://scheduler:8786")
    p.add_argument("study", metavar="STUDY", help="an experiment file (.toml) or a shipped study: quickstart, "
                   "paper000 ... paper004, paper002-dual")
    p.add_argument("--out", metavar="DIR", help="results folder (default: the file's [study] output)")
    p.add_argument("--reduced", action="store_true", help="run the study's [reduced] version: fewer data sets, splits "
                   "and grid points (the shipped paper studies: bundled data, seconds to a minute)")
    p.add_argument("--data-dir", metavar="DIR", help="folder of the data files a study names with file = ... "
                   "(default: $FSFRAME_DATA; docs/papers.md lists the files and where to download them)")
    g = p.add_argument_group("engine")
    _add_engine_args(g)
    g.add_argument("--keep-failed", action="store_true", help="do not retry cells that failed in an earlier run")
    g.add_argument("--progress", dest="progress", action="store_const", const="on", default=None,
                   help="progress on stderr (the default): one line with cells done/total, ETA and the slowest running "
                        "cell on a terminal, one plain line per cell elsewhere")
    g.add_argument("--no-progress", dest="progress", action="store_const", const="off")
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    p.set_defaults(func=_command("run", "cmd_run"))

    p = sub.add_parser("report", parents=[common], help="tables and pictures of a results folder",
                       description="Rebuild every table and picture of a results folder ('fsframe run') from its "
                                   "cell files alone; write report.md (or report.html) and img/*.png, *.svg there.")
    p.add_argument("results", metavar="RESULTS", help="a results folder written by 'fsframe run' (or, with --paper, "
                   "the digest.json of one)")
    p.add_argument("--html", action="store_true", help="write report.html instead of report.md")
    p.add_argument("--paper", action="store_true", help="the study beside its paper: the published numbers next to "
                   "ours with differences and 95%% CIs, and every method against k random features; writes "
                   "digest.json and paper.md (or --page)")
    p.add_argument("--page", metavar="FILE.md", help="with --paper: the page to write (an existing page keeps what "
                   "lies outside its paper-report markers)")
    p.add_argument("--no-plots", action="store_true", help="tables only (no matplotlib needed)")
    p.set_defaults(func=_command("run", "cmd_report"))
    return parser

