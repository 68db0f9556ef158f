"""The outputs docs/cli.md shows are what its commands print: every successful example on data a
reader has is rerun (docs/gen_cli_outputs.py, which also regenerates them) and every figure it
shows — accuracy, selector accuracy, MCC, weights, objective, counts, stability — compared, with
timings, solver versions and round-off masked. A documented figure that drifted from the code (the
"selector acc." of fsv r=2 read 80.53 while the command printed 87.72) fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
_spec = importlib.util.spec_from_file_location("gen_cli_outputs", DOCS / "gen_cli_outputs.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

TEXT = gen.DOC.read_text()
RUNNABLE = [ex for ex in gen.examples(TEXT) if ex.runnable]


def test_the_examples_with_figures_are_found():
    commands = [ex.command for ex in RUNNABLE]
    assert len(commands) >= 9
    assert any("--n-features 2,5,10" in c and "--retrain svm" in c for c in commands)  # "selector acc."
    assert any(c.startswith("fsframe select wdbc.data") for c in commands)  # data written from the bundled copy
    # error examples are not rerun here (tests/cli/test_doc_examples.py checks their message)
    assert all(not ex.runnable for ex in gen.examples(TEXT) if "--method nope" in ex.command)


@pytest.mark.slow
@pytest.mark.parametrize("example", RUNNABLE, ids=[ex.command[8:80] for ex in RUNNABLE])
def test_documented_output_is_what_the_command_prints(example, tmp_path):
    gen.write_wdbc(tmp_path)
    got = gen.run(example, tmp_path)
    shown = TEXT.split("\n")[example.start:example.end]
    diff = gen.compare(shown, got)
    assert diff is None, (f"docs/cli.md line {example.line + 1}: `{example.command}` prints something else "
                          f"(python docs/gen_cli_outputs.py regenerates it):\n{diff}")


SHOWN = ["fsv r=2           87.89 ± 4.04  0.737 ± 0.089       87.72 ± 3.67   2.0 ± 0.0     6.7 ± 0.0   5.0 ± 0.7    "
         "0.145       0.14"]
HEADER = ("method            accuracy (%)            MCC  selector acc. (%)    features  features (%)  iterations  "
          "seconds  stability")


def test_the_comparison_sees_a_figure_and_ignores_a_timing():
    shown = [HEADER, *SHOWN, "", "solver highs 1.16.0; total 4.6 s"]
    timing = [HEADER, SHOWN[0].replace("0.145", "9.871"), "", "solver highs 1.17.2; total 61.0 s"]
    assert gen.compare(shown, timing) is None
    drifted = [HEADER, SHOWN[0].replace("87.72 ± 3.67", "80.53 ± 14.50"), "", "solver highs 1.16.0; total 4.6 s"]
    assert "80.53" in gen.compare(shown, drifted)
    assert "lines shown" in gen.compare(shown, shown + ["one more line"])
    # round-off is masked, a real figure is not
    assert gen.compare(["certificate: KKT gap 1.4e-14"], ["certificate: KKT gap 3e-16"]) is None
    assert gen.compare(["objective 31.9496"], ["objective 31.9497"]) is not None
    # "..." keeps the first and the last lines shown
    assert gen.compare(["a", "...", "z"], ["a", "b", "c", "z"]) is None
    assert gen.compare(["a", "...", "z"], ["a", "b", "c", "y"]) is not None
    assert gen.regenerate(["a", "...", "z"], ["A", "b", "Z"]) == ["A", "...", "Z"]


def test_timings_are_masked_in_every_layout():
    lines = ["time 0.249 s (build 0.058, compile 0.008, solve 0.115)",
             "  seconds            0.165 ± 0.078   0.119   0.379",
             "| method | accuracy (%) | seconds | stability |", "|---|--:|--:|--:|",
             "| fsv | 96.31 ± 2.40 | 0.247 | 0.43 |",
             "", "label,objective,seconds,total_seconds,selected", "l1-svm,83.61,0.0871,0.0918,0 1 2 3"]
    masked = gen.mask(lines)
    assert masked[0] == "time # s (build #, compile #, solve #)" and masked[1] == "seconds # ± # # #"
    assert masked[4] == "|fsv|96.31 ± 2.40|#|0.43|"
    assert masked[7] == "l1-svm,83.61,#,#,0 1 2 3"
