"""``--working-set`` and ``--verify`` on the command line; the certificate line of ``fsframe select``."""

from __future__ import annotations

import json
import re

import numpy as np


def test_select_prints_the_certificate_with_working_set_and_verify(cli, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 600))
    y = np.where(X[:, 0] - X[:, 1] + 0.2 * rng.standard_normal(40) > 0, 1, 0)
    path = tmp_path / "d.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", fmt="%.10g")
    out_json = tmp_path / "r.json"
    r = cli("select", path, "--method", "l1-svm", "--working-set", "on", "--verify", "clarabel", "--json", out_json)
    assert r.code == 0, r.err
    line = next(ln for ln in r.out.splitlines() if ln.startswith("certificate:"))
    m = re.search(r"working set (\d+) of 600", line)
    assert m and int(m.group(1)) < 600
    assert "verify on clarabel: optimal" in line
    cert = json.loads(out_json.read_text())["result"]["certificate"]
    assert cert["working_set"] == int(m.group(1)) and abs(cert["verify"]["objective_gap"]) < 1e-6
    off = cli("select", path, "--method", "l1-svm", "--working-set", "off")
    assert off.code == 0 and "working set" not in next(ln for ln in off.out.splitlines() if ln.startswith("certificate:"))


def test_working_set_flag_takes_only_its_choices(cli, tmp_path):
    r = cli("select", "synthetic", "--method", "l1-svm", "--working-set", "maybe")
    assert r.code == 2 and "--working-set" in r.err
