"""Compile a stage's DSPy program with GEPA, MIPROv2 or few-shot optimizers, tracked in MLflow, resumable.

Entry point: `python optimize.py stage=<name> optimizer=<name>` (conf/optimize.yaml), whose work is
`factlab.optimize.job.run(cfg)`. Other apps load a compiled program with
`factlab.tracking.refs.resolve_compiled(ref, stage)`. Nothing here runs at import time.
"""
