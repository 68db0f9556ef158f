"""Dataset loaders: files written here with known contents are read back exactly; malformed
files raise DataFileError/DataError naming the problem; the shared benchmark files load with
their documented shapes and class counts (skipped when ../shared/data is absent)."""

from __future__ import annotations

import gzip
import warnings

import numpy as np
import pytest
import scipy.io

import fsframe
from fsframe.errors import DataError, DataFileError, DataWarning, InvalidOptionError
from fsframe.io import BUNDLED, load_arff, load_csv, load_mat, load_svmlight

# the four-row files below have classes of two samples: legal, with a DataWarning
pytestmark = pytest.mark.filterwarnings("ignore:.*smallest class has 2 samples:fsframe.errors.DataWarning")

X3 = np.array([[1.5, -2.0, 0.25], [0.0, 3.0, 1.0], [2.0, 2.5, -1.0], [4.0, -0.5, 0.5]])
Y3 = np.array(["a", "b", "a", "b"])


def write(path, text):
    path.write_text(text)
    return path


def csv_text(sep=",", header=True):
    lines = [sep.join(["f1", "f2", "f3", "class"])] if header else []
    lines += [sep.join([*map(repr, map(float, row)), lab]) for row, lab in zip(X3, Y3)]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ CSV / TSV
def test_csv_header_detected_label_by_default_name(tmp_path):
    ds = fsframe.load_dataset(write(tmp_path / "d.csv", csv_text()))
    np.testing.assert_array_equal(ds.X, X3)
    assert ds.y.tolist() == Y3.tolist()
    assert ds.feature_names == ("f1", "f2", "f3")


def test_csv_without_header_label_last(tmp_path):
    ds = fsframe.load_dataset(write(tmp_path / "d.csv", csv_text(header=False)))
    np.testing.assert_array_equal(ds.X, X3)
    assert ds.feature_names == ("x0", "x1", "x2")


def test_csv_label_by_index_and_name_and_drop_columns(tmp_path):
    text = "id,f1,lab,f2\n" + "".join(f"{i},{r[0]},{lab},{r[1]}\n" for i, (r, lab) in enumerate(zip(X3, Y3)))
    p = write(tmp_path / "d.csv", text)
    by_name = fsframe.load_dataset(p, label_column="lab", drop_columns=["id"])
    by_index = fsframe.load_dataset(p, label_column=2, drop_columns=[0])
    for ds in (by_name, by_index):
        np.testing.assert_array_equal(ds.X, X3[:, :2])
        assert ds.y.tolist() == Y3.tolist() and ds.feature_names == ("f1", "f2")
    np.testing.assert_array_equal(fsframe.load_dataset(p, label_column=2, drop_columns=np.array([0])).X, X3[:, :2])
    neg = fsframe.load_dataset(p, label_column=-2, drop_columns=[0])
    np.testing.assert_array_equal(neg.X, X3[:, :2])


def test_tsv_and_gzip(tmp_path):
    p = tmp_path / "d.tsv.gz"
    with gzip.open(p, "wt") as fh:
        fh.write(csv_text(sep="\t"))
    ds = fsframe.load_dataset(p)
    np.testing.assert_array_equal(ds.X, X3)
    ds = fsframe.load_dataset(write(tmp_path / "d.tsv", csv_text(sep="\t")))
    np.testing.assert_array_equal(ds.X, X3)
    import bz2

    (tmp_path / "b.csv.bz2").write_bytes(bz2.compress(csv_text().encode()))
    (tmp_path / "b.svm.bz2").write_bytes(bz2.compress(b"1 1:1.5 2:-2 3:0.25\n-1 2:3 3:1\n1 1:2 2:2.5 3:-1\n-1 1:4 2:-0.5 3:0.5\n"))
    np.testing.assert_array_equal(fsframe.load_dataset(tmp_path / "b.csv.bz2").X, X3)
    sparse = fsframe.load_dataset(tmp_path / "b.svm.bz2")
    assert sparse.is_sparse
    np.testing.assert_array_equal(sparse.X.toarray(), X3)


def test_numeric_labels_become_integers(tmp_path):
    text = "".join(f"{r[0]},{r[1]},{lab}\n" for r, lab in zip(X3, ["1", "-1", "1", "-1"]))
    ds = fsframe.load_dataset(write(tmp_path / "d.csv", text))
    assert ds.y.dtype.kind == "i" and ds.classes == (-1, 1)


def test_csv_errors(tmp_path):
    with pytest.raises(DataFileError, match="not found"):
        fsframe.load_dataset(tmp_path / "missing.csv")
    with pytest.raises(DataFileError, match=r"row 3 has 2 fields, expected 3"):
        fsframe.load_dataset(write(tmp_path / "ragged.csv", "1,2,a\n3,4,b\n5,b\n6,7,a\n"))
    with pytest.raises(DataError, match=r"missing feature value\(s\) \(first at data row 2, column 1: '\?'\)"):
        fsframe.load_dataset(write(tmp_path / "q.csv", "1,2,a\n3,?,b\n5,6,a\n7,8,b\n"))
    with pytest.raises(DataFileError, match="non-numeric feature value 'red'"):
        fsframe.load_dataset(write(tmp_path / "cat.csv", "f,g,c\n1,red,a\n3,4,b\n5,6,a\n7,8,b\n"))
    with pytest.raises(DataFileError, match="empty"):
        fsframe.load_dataset(write(tmp_path / "empty.csv", "\n\n"))
    with pytest.raises(DataFileError, match="label column 'nope' not found"):
        fsframe.load_dataset(write(tmp_path / "h.csv", csv_text()), label_column="nope")
    with pytest.raises(DataFileError, match="out of range"):
        fsframe.load_dataset(write(tmp_path / "h2.csv", csv_text()), label_column=9)
    with pytest.raises(DataFileError, match="also listed in drop_columns"):
        fsframe.load_dataset(write(tmp_path / "h3.csv", csv_text()), label_column=0, drop_columns=[0])
    with pytest.raises(DataFileError, match="not a readable text file"):
        (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00\x81" * 10)
        fsframe.load_dataset(tmp_path / "bin.csv")


def test_csv_header_detection_skips_label_and_dropped_columns(tmp_path):
    """A text id column or a first-column text label does not make the first data row a header."""
    rows = [f"s{i},{float(x[0])!r},{float(x[1])!r},{lab}" for i, (x, lab) in enumerate(zip(X3, ["0", "1", "0", "1"]))]
    ids = write(tmp_path / "ids.csv", "\n".join(rows) + "\n")
    ds = load_csv(ids, drop_columns=[0])
    assert ds.n_samples == 4 and ds.feature_names == ("x0", "x1")
    np.testing.assert_array_equal(ds.X, X3[:, :2])
    first = write(tmp_path / "first.csv", "".join(f"{lab},{float(x[0])!r},{float(x[1])!r}\n" for x, lab in zip(X3, Y3)))
    for spec in (0, "0"):
        ds = load_csv(first, label_column=spec)
        assert ds.n_samples == 4 and ds.y.tolist() == Y3.tolist()
    with pytest.raises(DataFileError, match="drop column 9 out of range"):
        load_csv(ids, drop_columns=[9])


def test_csv_labels_checked_on_every_row(tmp_path):
    lines = [f"{i % 2},{i}.5,{i}.25" for i in range(60)] + ["z,1,2", "z,3,4"]
    ds = load_csv(write(tmp_path / "late.csv", "\n".join(lines) + "\n"), label_column=0)
    assert sorted(set(ds.y.tolist())) == ["0", "1", "z"]
    with pytest.raises(DataError, match=r"1 missing label\(s\) \(first at data row 2"):
        load_csv(write(tmp_path / "nolab.csv", "1,2,a\n3,4,?\n5,6,a\n7,8,b\n9,1,b\n"))


def test_dispatch_errors(tmp_path):
    with pytest.raises(DataFileError, match="cannot infer the format from extension '.xyz'"):
        fsframe.load_dataset(write(tmp_path / "d.xyz", "1,2\n"))
    with pytest.raises(DataFileError, match="is a directory"):
        fsframe.load_dataset(tmp_path)
    with pytest.raises(DataFileError, match="unknown format 'parquet'"):
        fsframe.load_dataset(write(tmp_path / "d.csv", csv_text()), format="parquet")
    with pytest.raises(DataError, match="does not accept these options"):
        fsframe.load_dataset(write(tmp_path / "e.csv", csv_text()), no_such_option=1)
    with pytest.raises(DataFileError, match="bundled dataset names are"):
        fsframe.load_dataset("no_such_dataset")
    with pytest.raises(DataError, match="takes no loader options"):
        fsframe.load_dataset("iris", label_column=0)


# ------------------------------------------------------------------------------ svmlight, ARFF, .mat
def test_svmlight_roundtrip(tmp_path):
    p = write(tmp_path / "d.svm", "1 1:1.5 2:-2 3:0.25\n-1 2:3 3:1\n1 1:2 2:2.5 3:-1\n-1 1:4 2:-0.5 3:0.5\n")
    ds = load_svmlight(p)
    assert ds.is_sparse and ds.X.format == "csr" and ds.X.nnz == 11  # read sparse, kept sparse
    np.testing.assert_array_equal(ds.X.toarray(), X3)
    assert ds.y.tolist() == [1, -1, 1, -1]
    with pytest.raises(DataFileError, match="not a valid LIBSVM"):
        fsframe.load_dataset(write(tmp_path / "bad.svm", "1 1:x 2:3\nfoo\n"))


ARFF = """% comment
@RELATION toy
@ATTRIBUTE f1 NUMERIC
@ATTRIBUTE f2 REAL
@ATTRIBUTE f3 NUMERIC
@ATTRIBUTE class {a,b}
@DATA
1.5,-2,0.25,a
0,3,1,b
2,2.5,-1,a
4,-0.5,0.5,b
"""


def test_arff_roundtrip(tmp_path):
    ds = load_arff(write(tmp_path / "d.arff", ARFF))
    np.testing.assert_array_equal(ds.X, X3)
    assert ds.y.tolist() == Y3.tolist() and ds.feature_names == ("f1", "f2", "f3")
    with pytest.raises(DataFileError, match="not a readable ARFF"):
        fsframe.load_dataset(write(tmp_path / "bad.arff", "@RELATION x\n@ATTRIBUTE a WEIRDTYPE\n@DATA\n1\n"))
    for text in ("1,2,3\n4,5,6\n", ""):  # no header at all; an empty file
        with pytest.raises(DataFileError, match="not a readable ARFF"):
            fsframe.load_dataset(write(tmp_path / "noheader.arff", text))
    with pytest.raises(DataError, match=r"1 missing class value\(s\) '\?' \(first at data row 3\)"):
        fsframe.load_dataset(write(tmp_path / "q.arff", ARFF.replace("2,2.5,-1,a", "2,2.5,-1,?")))
    nominal = ARFF.replace("@ATTRIBUTE f2 REAL", "@ATTRIBUTE f2 {-2,3,2.5,-0.5}")
    with pytest.raises(DataFileError, match="non-numeric attributes"):
        fsframe.load_dataset(write(tmp_path / "nom.arff", nominal))


def test_mat_roundtrip(tmp_path):
    scipy.io.savemat(tmp_path / "d.mat", {"X": X3, "Y": np.array([[1], [2], [1], [2]], dtype=float)})
    ds = load_mat(tmp_path / "d.mat")
    np.testing.assert_array_equal(ds.X, X3)
    assert ds.y.tolist() == [1, 2, 1, 2] and ds.y.dtype.kind == "i"
    scipy.io.savemat(tmp_path / "e.mat", {"fea": X3, "gnd": np.array([1, 2, 1, 2])})
    np.testing.assert_array_equal(fsframe.load_dataset(tmp_path / "e.mat").X, X3)
    with pytest.raises(DataFileError, match=r"no label variable.*'fea'"):
        scipy.io.savemat(tmp_path / "f.mat", {"fea": X3})
        fsframe.load_dataset(tmp_path / "f.mat")
    with pytest.raises(DataFileError, match="no variable 'Z'"):
        load_mat(tmp_path / "d.mat", x_key="Z")


def test_bad_mat_files(tmp_path):
    (tmp_path / "junk.mat").write_bytes(b"this is not a MATLAB file at all" * 8)
    with pytest.raises(DataFileError, match="junk.mat"):
        fsframe.load_dataset(tmp_path / "junk.mat")
    # a v7.3 (HDF5) header: text, subsystem offset, version 0x0200, endianness 'IM'
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024 HDF5 schema 1.00 ."
    header = header.ljust(116, b" ") + b"\x00" * 8 + b"\x00\x02IM"
    (tmp_path / "v73.mat").write_bytes(header + b"\x89HDF\r\n\x1a\n" + b"\x00" * 64)
    with pytest.raises(DataFileError, match=r"v7\.3 \(HDF5\) files are not supported.*-v7"):
        fsframe.load_dataset(tmp_path / "v73.mat")
    (tmp_path / "trunc.mat").write_bytes(b"garbage\x00\x01binary")  # scipy: MatReadError
    (tmp_path / "empty.mat").write_bytes(b"")
    for f in ("trunc.mat", "empty.mat"):
        with pytest.raises(DataFileError, match=f"{f}: not a readable MATLAB .mat file"):
            fsframe.load_dataset(tmp_path / f)
    scipy.io.savemat(tmp_path / "cell.mat", {"X": np.array([[1, "a"], [2, "b"]], dtype=object), "Y": [1, 2]})
    with pytest.raises(DataFileError, match="the feature variable is not a numeric matrix"):
        fsframe.load_dataset(tmp_path / "cell.mat")


# ------------------------------------------------------------------------------ bundled, synthetic
@pytest.mark.parametrize("name, shape, n_classes", [
    ("iris", (150, 4), 3), ("wine", (178, 13), 3), ("breast_cancer", (569, 30), 2), ("breast-cancer", (569, 30), 2),
])
def test_bundled(name, shape, n_classes):
    ds = fsframe.load_dataset(name)
    assert ds.X.shape == shape and len(ds.classes) == n_classes


def test_bundled_names_all_load():
    for name in BUNDLED:
        if name not in ("digits", "synthetic"):  # digits has constant pixels (warns); synthetic below
            assert fsframe.load_dataset(name).n_samples > 0


def test_make_synthetic():
    a = fsframe.make_synthetic(2000, 30, 5, random_state=3)
    b = fsframe.make_synthetic(2000, 30, 5, random_state=3)
    c = fsframe.make_synthetic(2000, 30, 5, random_state=4)
    assert a.X.shape == (2000, 30) and set(a.classes) == {-1, 1}
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.X, c.X)
    # feature i = y * N(-i, 1): E[y x_i] = -i for i <= 5, 0 for the noise features; sd 1/sqrt(m)
    m = a.n_samples
    means = (a.y[:, None] * a.X).mean(axis=0)
    np.testing.assert_allclose(means[:5], -np.arange(1, 6), atol=5 / np.sqrt(m))
    np.testing.assert_allclose(means[5:], 0.0, atol=5 / np.sqrt(m))
    assert a.feature_names[:2] == ("informative_1", "informative_2") and a.feature_names[5] == "noise_1"
    with pytest.raises(DataError, match="exceeds"):
        fsframe.make_synthetic(10, 3, 5)


# ------------------------------------------------------------------------------ shared benchmark files
SHARED = [
    ("sonar.csv", {}, (208, 60), {"M": 111, "R": 97}),
    ("wdbc.data", {"drop_columns": [0], "label_column": 1}, (569, 30), {"B": 357, "M": 212}),
    ("ionosphere.data", {}, (351, 34), {"b": 126, "g": 225}),
    ("pima-indians-diabetes.csv", {}, (768, 8), {0: 500, 1: 268}),
    ("colon.mat", {}, (62, 2000), {-1: 40, 1: 22}),
    ("titanic.tsv.gz", {}, (2201, 3), {-1: 1490, 1: 711}),
    ("twonorm.tsv.gz", {}, (7400, 20), {0: 3703, 1: 3697}),
]


@pytest.mark.shared_data
@pytest.mark.parametrize("name, options, shape, counts", SHARED, ids=[s[0] for s in SHARED])
def test_shared_files(shared_file, name, options, shape, counts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # ionosphere: a constant column; colon: duplicates
        ds = fsframe.load_dataset(shared_file(name), **options)
    assert ds.X.shape == shape
    assert ds.class_counts == counts


@pytest.mark.shared_data
def test_wdbc_is_sklearns_breast_cancer(shared_file):
    """The shared data README says UCI WDBC equals scikit-learn's load_breast_cancer: an
    independent check of the CSV reader (values, row order, labels)."""
    from sklearn.datasets import load_breast_cancer

    ds = fsframe.load_dataset(shared_file("wdbc.data"), drop_columns=[0], label_column=1)
    bc = load_breast_cancer()
    np.testing.assert_array_equal(ds.X, bc.data)
    np.testing.assert_array_equal(ds.y == "B", bc.target == 1)


@pytest.mark.shared_data
def test_ionosphere_constant_column_warns(shared_file):
    with pytest.warns(DataWarning, match=r"constant feature\(s\) \[1\]"):
        fsframe.load_dataset(shared_file("ionosphere.data"))


# ------------------------------------------------------------------------------ files that are not data files
def test_fifo_is_refused_before_it_is_opened(tmp_path):
    """Regression: a FIFO named .csv blocked the reader forever. A writer thread opens the pipe,
    which completes only when a reader opens it: with the old code the loader read the writer's rows
    and returned a dataset; now it refuses without opening, and the test then releases the writer."""
    import os
    import threading

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "w") as fh:
            fh.write(csv_text())

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        with pytest.raises(DataFileError, match=r"pipe.csv is a named pipe \(FIFO\), not a regular file"):
            fsframe.load_dataset(fifo)
    finally:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer's open() return
        t.join()
        os.close(fd)


def test_devices_are_refused_and_links_to_files_followed(tmp_path):
    """Regression: a CSV symlinked to /dev/zero was read until MemoryError."""
    import os

    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    (tmp_path / "zero.csv").symlink_to("/dev/zero")
    for loader in (fsframe.load_dataset, load_csv, load_svmlight, load_arff, load_mat):
        with pytest.raises(DataFileError, match=r"zero.csv \(a link to /dev/zero\) is a character device, "
                                                r"not a regular file"):
            loader(tmp_path / "zero.csv")
    (tmp_path / "link.csv").symlink_to(write(tmp_path / "real.csv", csv_text()))
    np.testing.assert_array_equal(fsframe.load_dataset(tmp_path / "link.csv").X, X3)


def test_reads_are_bounded(tmp_path, monkeypatch):
    """Files over the read limit are refused from their size; a compressed file is refused once its
    decompressed content passes the limit (a decompression bomb is not read to the end)."""
    import fsframe.io._source as source

    text = csv_text()
    monkeypatch.setattr(source, "MAX_FILE_BYTES", len(text) - 1)
    with pytest.raises(DataFileError, match=rf"d.csv: {len(text)} bytes, more than the {len(text) - 1} bytes a loader reads"):
        fsframe.load_dataset(write(tmp_path / "d.csv", text))
    p = tmp_path / "z.csv.gz"
    with gzip.open(p, "wt") as fh:
        fh.write("0,0,a\n" * 200)
    assert p.stat().st_size < len(text) - 1
    with pytest.raises(DataFileError, match="z.csv.gz: decompresses to more than"):
        fsframe.load_dataset(p)
    monkeypatch.setattr(source, "MAX_FILE_BYTES", len(text))
    np.testing.assert_array_equal(fsframe.load_dataset(tmp_path / "d.csv").X, X3)


# ------------------------------------------------------------------------------ loader options
@pytest.mark.parametrize("loader, options, match", [
    (load_csv, {"delimiter": ";;"}, r"loader option delimiter=';;': must be one character"),
    (load_csv, {"delimiter": 9}, r"loader option delimiter=9: must be a one-character string"),
    (load_csv, {"missing": "NA"}, r"loader option missing='NA': must be a list of strings"),
    (load_csv, {"label_column": 1.5}, r"loader option label_column=1.5: must be a column index or header name"),
    (load_csv, {"label_column": True}, r"loader option label_column=True"),
    (load_csv, {"drop_columns": 0}, r"loader option drop_columns=0: must be a list"),
    (load_csv, {"header": "yes"}, r"loader option header='yes': must be True, False or None"),
    (load_svmlight, {"n_features": 0}, r"loader option n_features=0: must be a positive integer"),
    (load_svmlight, {"n_features": 2.0}, r"loader option n_features=2.0"),
    (load_mat, {"x_key": 1}, r"loader option x_key=1: must be a string"),
    (load_arff, {"label_column": [1]}, r"loader option label_column=\[1\]"),
])
def test_loader_options_are_typed(tmp_path, loader, options, match):
    """Regression: delimiter=';;' raised the csv module's TypeError; missing='NA' was read as the
    characters 'N' and 'A'."""
    with pytest.raises(InvalidOptionError, match=match):
        loader(write(tmp_path / "d.csv", csv_text()), **options)


def test_loader_option_errors_on_the_command_line(tmp_path, capsys):
    from fsframe.cli import main

    code = main(["select", str(write(tmp_path / "d.csv", csv_text())), "--method", "l1-svm",
                 "--loader-opt", "delimiter=;;"])
    assert code == 2
    assert "loader option delimiter=';;': must be one character" in capsys.readouterr().err


# ------------------------------------------------------------------------------ svmlight widths
def test_svmlight_huge_index(tmp_path):
    """Regression: an index of 1e10 escaped as OverflowError."""
    p = write(tmp_path / "big.svm", "1 1:1.5 2:2\n-1 2:3 10000000000:1\n1 1:2\n-1 2:1\n")
    with pytest.raises(DataFileError, match=r"big.svm: a feature index does not fit a 32-bit integer "
                                            r"\(index 10000000000 on line 2\)"):
        load_svmlight(p)


@pytest.mark.filterwarnings("ignore:.*identical features:fsframe.errors.DataWarning")
def test_svmlight_implausible_width(tmp_path):
    """Regression: one index of 1e6 made a silent 30 x 1e6 matrix. Refused unless the width is
    given; an explicit width is read, sparse (no dense-size limit: nothing dense is made)."""
    lines = [f"{(-1) ** i} 1:{i}.5 2:{i % 3}" + (" 1000000:1" if i == 3 else "") for i in range(30)]
    p = write(tmp_path / "wide.svm", "\n".join(lines) + "\n")
    with pytest.raises(DataFileError, match=r"makes 1000000 features, but only 3 distinct indices occur; almost "
                                            r"every column of the 30 x 1000000 matrix would be empty \(its dense form "
                                            r"240 MB\)\. .* pass n_features=1000000 "
                                            r"\(command line: --loader-opt n_features=1000000\)"):
        fsframe.load_dataset(p)
    lines[3] = lines[3].replace("1000000:1", "20000:1")
    p = write(tmp_path / "real.svm", "\n".join(lines) + "\n")
    with pytest.raises(DataFileError, match="makes 20000 features"):
        load_svmlight(p)
    with pytest.warns(DataWarning, match="constant feature"):
        ds = load_svmlight(p, n_features=20000)
    assert ds.is_sparse and ds.X.nnz == 60 - 10 + 1  # 2 entries a row, 10 zeros of "2:0" dropped, + the 20000
    assert ds.X.shape == (30, 20000) and ds.X[3, 19999] == 1.0 and ds.X[:, 2:19999].sum() == 0
    with pytest.warns(DataWarning, match="constant feature"):
        wide = load_svmlight(p, n_features=2_000_000)  # 480 MB dense: read sparse, in no time
    assert wide.X.shape == (30, 2_000_000) and wide.X.nnz == ds.X.nnz


# ------------------------------------------------------------------------------ values a loader must not cast
def test_mat_complex_or_char_features_are_refused(tmp_path):
    """Regression: a complex .mat X was cast to its real part with only numpy's ComplexWarning."""
    scipy.io.savemat(tmp_path / "c.mat", {"X": X3 + 1j, "Y": [1, 2, 1, 2]})
    with pytest.raises(DataFileError, match="c.mat: the feature variable is complex"):
        fsframe.load_dataset(tmp_path / "c.mat")
    scipy.io.savemat(tmp_path / "cy.mat", {"X": X3, "Y": np.array([1, 2, 1, 2]) + 1j})
    with pytest.raises(DataFileError, match="cy.mat: the label variable is complex"):
        fsframe.load_dataset(tmp_path / "cy.mat")
    scipy.io.savemat(tmp_path / "s.mat", {"X": np.array(["1234", "5678", "1234", "5678"]), "Y": [1, 2, 1, 2]})
    with pytest.raises(DataFileError, match="s.mat: the feature variable is a char array"):
        fsframe.load_dataset(tmp_path / "s.mat")


def test_csv_infinite_labels_are_not_cast_to_integers(tmp_path):
    """Regression: a label 'inf' became the integer -9223372036854775808."""
    with pytest.raises(DataError, match="y contains NaN or inf labels"):
        load_csv(write(tmp_path / "inf.csv", "1,2,inf\n3,4,1\n5,6,inf\n7,8,1\n"))


def test_csv_byte_order_mark(tmp_path):
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbf" + csv_text().encode())
    assert load_csv(p).feature_names == ("f1", "f2", "f3")


# ------------------------------------------------------------------------------ helpful messages
def uci_like(n=24):
    """Rows like UCI wdbc.data: an id, a text diagnosis, then numeric features; no header."""
    rng = np.random.default_rng(1)
    ids = rng.choice(np.arange(800000, 900000), size=n, replace=False)
    return "".join(f"{i},{'MB'[k % 2]},{rng.random():.4f},{rng.random():.4f}\n" for k, i in enumerate(ids))


def test_text_column_suggests_the_label_column(tmp_path):
    """Regression: without label_column=1, wdbc.data said only "non-numeric feature value 'M'"."""
    p = write(tmp_path / "wdbc.data", uci_like())
    with pytest.raises(DataFileError, match=r"non-numeric feature value 'M' \(data row 1, column 1\); column 1 holds "
                                            r"text in every row \(2 distinct values: 'B', 'M'\) and labels are read "
                                            r"from column 3 now: .*label_column=1 \(command line: --label-column 1\)"):
        fsframe.load_dataset(p)
    # a text value in a numeric column is not a label column: the plain hint
    with pytest.raises(DataFileError, match=r"'red' \(data row 2, column 1 \('g'\)\); encode categorical columns "
                                            r"as numbers or drop them with drop_columns=\[1\] \(--drop-columns 1\)"):
        fsframe.load_dataset(write(tmp_path / "cat.csv", "f,g,c\n1,2,a\n3,red,b\n5,6,a\n7,8,b\n"))


def test_id_column_warns_and_drop_columns_silences(tmp_path):
    """Regression: the id column of a wdbc-like file became a feature without a word."""
    p = write(tmp_path / "wdbc.data", uci_like())
    with pytest.warns(DataWarning, match=r"feature 0 \('x0'\) holds a distinct integer in every sample .*like a "
                                         r"sample id.*--drop-columns"):
        ds = fsframe.load_dataset(p, label_column=1)
    assert ds.n_samples == 24 and ds.n_features == 3  # the first row is data, not a header
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        ds = fsframe.load_dataset(p, label_column=1, drop_columns=[0])
    assert ds.n_features == 2 and ds.classes == ("B", "M")


@pytest.mark.shared_data
def test_wdbc_without_label_column_says_how(shared_file):
    p = shared_file("wdbc.data")
    with pytest.raises(DataFileError, match=r"column 1 holds text in every row \(2 distinct values: 'B', 'M'\).*"
                                            r"label_column=1 \(command line: --label-column 1\)"):
        fsframe.load_dataset(p)
    with pytest.warns(DataWarning, match=r"feature 0 \('x0'\) holds a distinct integer in every sample \(842302, "):
        fsframe.load_dataset(p, label_column=1)
