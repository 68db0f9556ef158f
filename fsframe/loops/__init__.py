"""Built-in outer loops. Registered through :func:`fsframe_register_loops`."""

from ..hookspecs import hookimpl
from .base import (Choice, Finish, IterRecord, LoopOutcome, OuterLoop, Run, Selection, Step, reference_scale,
                   select_exactly, support_of)
from .bound_search import BoundSearch
from .dca import DCA
from .em import EM
from .greedy import Greedy, LinearMaskSpace, MaskEvaluator, MaskSpace
from .reweighting import ReweightedL1
from .single import SingleSolve

__all__ = ["OuterLoop", "IterRecord", "LoopOutcome", "Step", "Finish", "Choice", "Run", "select_exactly", "Selection",
           "support_of", "reference_scale",
           "SingleSolve", "ReweightedL1", "DCA", "EM", "BoundSearch", "Greedy",
           "MaskSpace", "MaskEvaluator", "LinearMaskSpace"]


@hookimpl
def fsframe_register_loops():
    return [SingleSolve, ReweightedL1, DCA, EM, BoundSearch, Greedy]
