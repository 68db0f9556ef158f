"""Helpers shared by the benchmark scripts (imported as ``_common`` with this directory on
``sys.path``; the scripts put it there themselves)."""

from __future__ import annotations

import sys
from pathlib import Path


def write_section(doc: Path, begin: str, end: str, text: str, *, heading: str | None = None) -> None:
    """Replace what lies between the markers ``begin`` and ``end`` (each on a line of its own) in
    the Markdown file ``doc`` by ``text``, one line break either side. When ``doc`` lacks the
    markers they are appended, after ``heading`` (e.g. ``"## Against other libraries"``) if one is
    given; without a heading the missing markers are an error (a doc whose section was renamed
    must not grow a second copy of the table)."""
    body = doc.read_text()
    if begin not in body or end not in body:
        if heading is None:
            raise ValueError(f"{doc}: the markers {begin} and {end} are missing; add them where the section belongs")
        body = body.rstrip("\n") + f"\n\n{heading}\n\n{begin}\n{end}\n"
    head, rest = body.split(begin, 1)
    tail = rest.split(end, 1)[1]
    doc.write_text(f"{head}{begin}\n{text.strip(chr(10))}\n{end}{tail}")


def head_commit(root: Path) -> str:
    """The short hash of ``HEAD`` of the repository at ``root`` (``"unknown"`` outside git)."""
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def append_run(out: Path, res: dict) -> None:
    """Append ``res`` (one run, its ``meta`` included) to the ``runs`` of the JSON store ``out``,
    created with its folder when absent. Written to a temporary file beside it and moved over it
    (``os.replace``): an interrupted run leaves the store as it was, not half written."""
    import json
    import os

    out.parent.mkdir(parents=True, exist_ok=True)
    store = json.loads(out.read_text()) if out.exists() else {"runs": []}
    store["runs"].append(res)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(store, indent=1))
    os.replace(tmp, out)


def add_data_dir(ap, holds: str = "the study's data files") -> None:
    """Add ``--data-dir DIR`` to the parser ``ap``: the data folder, as ``fsframe run --data-dir``
    takes it. Its default is none, so the study reads the folder ``$FSFRAME_DATA`` names
    (docs/papers.md); no folder outside the repository is tried. There is no ``--data`` alias: it
    would win over argparse's prefix match of a script's ``--datasets`` (``--data colon`` would
    name a folder); where no other option starts with ``--data``, argparse takes ``--data DIR`` as
    ``--data-dir DIR`` by itself, and where one does, ``--data`` is ambiguous, an error."""
    ap.add_argument("--data-dir", dest="data_dir", default=None,
                    help=f"the folder holding {holds} (default: $FSFRAME_DATA, as for 'fsframe run')")


def study_with_data(ap, name: str, data_dir=None, datasets=None):
    """The shipped study ``name`` as ``fsframe run`` loads it: its data folder ``data_dir``
    (``--data-dir``), else ``$FSFRAME_DATA``; its files checked by :func:`check_data`."""
    from fsframe.evaluation.study import load_study

    return check_data(ap, load_study(name, data_dir=data_dir), datasets)


def study_dataset(ap, name: str, dataset: str, data_dir=None):
    """The data set ``dataset`` of the shipped study ``name`` (its ``[[datasets]]`` entry: the
    file, the label column), loaded from ``data_dir``, else ``$FSFRAME_DATA``; when the folder
    lacks its file, or no folder is set, the script of ``ap`` stops as :func:`check_data` says."""
    study = study_with_data(ap, name, data_dir, [dataset])
    (spec,) = [d for d in study.datasets if d.name == dataset]
    return spec.load()


def check_data(ap, study, datasets=None):
    """``study``, when every data set it reads from a file (of those named in ``datasets``, when
    given) is in its data folder; else the script of the parser ``ap`` stops with exit status 2 and
    the study's one-line message (which folder, where it came from, where to download the file;
    :meth:`~fsframe.evaluation.study_data.DatasetSpec.check_file`), as when no folder is set.
    Nothing but the folder's listing is read."""
    from fsframe.errors import DataFileError

    try:
        for spec in study.datasets:
            if datasets is None or spec.name in datasets:
                spec.check_file()
    except DataFileError as exc:
        ap.exit(2, f"{ap.prog}: {exc}\n")
    return study


DATA_ENV = "FSFRAME_DATA"
"""The data folder's environment variable, as ``fsframe run`` reads it (docs/papers.md); named here
again so that :func:`data_folder` imports no fsframe (``bench_small_fits.py --src`` times another
checkout's, imported after the folder is found)."""

OLD_DATA_ENV = "FSFRAME_SHARED_DATA"
"""The variable the scripts that read data files themselves took before the rule of ``fsframe
run``: still read for one release, with a deprecation message, when neither ``--data-dir`` nor
``$FSFRAME_DATA`` is given (the test suite's own variable keeps its meaning: docs/testing.md)."""


def data_folder(ap, data_dir=None, files=(), *, required: bool = True) -> Path | None:
    """The data folder of a script that reads data files itself (not through a shipped study):
    ``data_dir`` (``--data-dir``), else ``$FSFRAME_DATA``, else (deprecated, for one release)
    ``$FSFRAME_SHARED_DATA`` with a :class:`FutureWarning`. When no folder is set, or the folder
    lacks one of ``files``, the script of the parser ``ap`` stops with exit status 2 and one line
    (which file, which folder, where it came from), as :func:`check_data` does for a study; with
    ``required=False`` it gets ``None`` instead and the line goes to stderr, ending "the parts that
    read it are skipped" (a script whose data part is optional). A folder that is set but is not a
    directory (a typo in ``--data-dir`` or the variable) stops the script even then: a run that
    skipped everything would otherwise look like a run. Nothing but the folder's listing is read;
    no folder outside the repository is tried."""
    import warnings

    folder, origin = folder_and_origin(data_dir)
    if origin == f"${OLD_DATA_ENV}":
        warnings.warn(f"${OLD_DATA_ENV} names the benchmarks' data folder for this release only: give the folder "
                      f"with --data-dir DIR or ${DATA_ENV}", FutureWarning, stacklevel=2)
    if folder is None:
        message = (f"{ap.prog}: no data folder is set: give one with --data-dir DIR (or the environment variable "
                   f"{DATA_ENV}) holding {', '.join(files) or 'its data files'}")
    elif not folder.is_dir():
        ap.exit(2, f"{ap.prog}: the data folder {folder} (from {origin}) is not a directory\n")
    else:
        missing = [f for f in files if not (folder / f).is_file()]
        if not missing:
            return folder
        message = f"{ap.prog}: needs the file {missing[0]!r}, which is not in the data folder {folder} (from {origin})"
    if not required:
        print(f"{message}; the parts that read it are skipped", file=sys.stderr)
        return None
    ap.exit(2, message + "\n")


def folder_and_origin(data_dir=None) -> tuple[Path | None, str]:
    """The data folder and where it came from (``"--data-dir"``, ``"$FSFRAME_DATA"``, or the old
    ``"$FSFRAME_SHARED_DATA"``), else ``(None, "")``: the precedence of :func:`data_folder`, which
    is ``fsframe run``'s (``fsframe.evaluation.study_data.data_folder``) plus the old variable."""
    import os

    if data_dir is not None:
        return Path(data_dir), "--data-dir"
    for name in (DATA_ENV, OLD_DATA_ENV):
        if os.environ.get(name):
            return Path(os.environ[name]), f"${name}"
    return None, ""
