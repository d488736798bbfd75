"""The batched DFOL engine: many different programs, one tensor operation per operator kind.

* :mod:`~nablafol.engine.planning` (numpy): each program flattened once into row matrices,
  a batch's plans concatenated and ordered by level and operator kind;
* :mod:`~nablafol.engine.execution` (torch): :class:`Engine` asks the oracle once per batch
  and runs each level's rows of one operator kind as one call of :mod:`nablafol.operators`;
* :mod:`~nablafol.engine.lowering`: each IR node kind lowered once into plan rows, and each row
  kind's :class:`~nablafol.engine.lowering.Operator` (its values, its Kleene values, its uses),
  what both executors and the exactness analysis call;
* :mod:`~nablafol.engine.rowwise`: one small program run row by row (a model asking one question
  at a time), the batched executor's answers bit for bit;
* :mod:`~nablafol.engine.answers`: what a batch evaluates to (:class:`Answers`);
* :mod:`~nablafol.engine.grounding`: which uncertain atoms a program repeats in its scene (when
  the fast path is exact); :mod:`~nablafol.engine.exact`: exact mode (``Engine(exact=True)``),
  conditioning on them; :mod:`~nablafol.engine.bounds`: sound bounds on the answers that are
  still not exact (``Engine(bounds=True)``).
"""
from nablafol.engine.answers import Answers, Tables
from nablafol.engine.execution import EXACT_BUDGET, Calibration, Engine
from nablafol.engine.planning import BatchPlan, ProgramPlan, build_batch_plan
from nablafol.operators import Quantifier

__all__ = ["Engine", "Answers", "Tables", "Calibration", "ProgramPlan", "BatchPlan", "build_batch_plan", "Quantifier",
           "EXACT_BUDGET"]
