"""The pipeline: questions answered in streams, models trained, the demo's stages.

Library code that every entry point calls (``nablafol eval``, ``demo``, training's
validation, workers): a command parses its options, calls one function here, prints.

* :mod:`~nablafol.pipeline.answering`: compile, batch by image, ask a perception, run the engine;
* :mod:`~nablafol.pipeline.journal` / :mod:`~nablafol.pipeline.workers` /
  :mod:`~nablafol.pipeline.collector`: what keeps a long run resumable, parallel and lean;
* :mod:`~nablafol.pipeline.oracle_training` / :mod:`~nablafol.pipeline.calibration_training`:
  the oracle trained through the reasoning, then the calibrator over the frozen oracle.
"""
