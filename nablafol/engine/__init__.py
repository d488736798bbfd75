"""The batched DFOL engine: many different programs, one tensor operation per operator kind.

* :mod:`~nablafol.engine.planning` (numpy): each program flattened once into row matrices,
  a batch's plans concatenated and ordered by level and operator kind;
* :mod:`~nablafol.engine.execution` (torch): :class:`Engine` asks the oracle once per batch
  and runs each level's rows of one operator kind as one call of :mod:`nablafol.operators`.
"""
from nablafol.engine.execution import Answers, Calibration, Engine
from nablafol.engine.planning import BatchPlan, ProgramPlan, build_batch_plan
from nablafol.operators import Quantifier

__all__ = ["Engine", "Answers", "Calibration", "ProgramPlan", "BatchPlan", "build_batch_plan", "Quantifier"]
