"""The batched DFOL engine: many programs, one tensor operation per operator kind and level.

:mod:`~nablafol.engine.lowering` (each node kind's rows and operator) feeds
:mod:`~nablafol.engine.planning` (numpy), run by :mod:`~nablafol.engine.execution` (torch) or,
for one small program, :mod:`~nablafol.engine.rowwise`; :mod:`~nablafol.engine.grounding`,
:mod:`~nablafol.engine.exact` and :mod:`~nablafol.engine.bounds` handle what is not read-once.
"""
from nablafol.engine.answers import Answers, Tables
from nablafol.engine.execution import EXACT_BUDGET, Calibration, Engine
from nablafol.engine.planning import BatchPlan, ProgramPlan, build_batch_plan
from nablafol.operators import Quantifier

__all__ = ["Engine", "Answers", "Tables", "Calibration", "ProgramPlan", "BatchPlan", "build_batch_plan", "Quantifier",
           "EXACT_BUDGET"]
