"""Build a stage from its conf/stage/<name>.yaml: the DSPy program (optionally with compiled JSON state),
or, with `backend=classifier`, a trained classifier that answers with the same output fields."""

from __future__ import annotations

from pathlib import Path

import dspy
from hydra.utils import instantiate
from omegaconf import DictConfig


class CompiledProgramError(RuntimeError):
    """A compiled program file is missing or does not fit the stage."""


def _program(stage_cfg: DictConfig):
    return instantiate(stage_cfg.program)


def _classifier(stage_cfg: DictConfig):
    if not stage_cfg.model:
        raise CompiledProgramError(
            f"stage {stage_cfg.name!r}: backend=classifier needs stage.{stage_cfg.name}.model=<path or MLflow URI>"
        )
    return instantiate(stage_cfg.classifier, model=stage_cfg.model)


_BACKENDS = {"program": _program, "classifier": _classifier}


def build_program(stage_cfg: DictConfig, compiled: str | None = None) -> dspy.Module:
    """Instantiate the stage per its `backend`; `compiled` is a JSON state file saved by optimize.py."""
    if stage_cfg.backend not in _BACKENDS:
        raise CompiledProgramError(
            f"stage {stage_cfg.name!r}: unknown backend {stage_cfg.backend!r}; expected one of {sorted(_BACKENDS)}"
        )
    if stage_cfg.backend == "classifier" and "classifier" not in stage_cfg:
        raise CompiledProgramError(f"stage {stage_cfg.name!r} has no classifier backend")
    program = _BACKENDS[stage_cfg.backend](stage_cfg)
    if compiled:
        path = Path(compiled)
        if not path.exists():
            raise CompiledProgramError(f"compiled program for stage {stage_cfg.name!r} not found: {path}")
        try:
            program.load(str(path))
        except Exception as exc:  # DSPy raises several types for state that does not fit
            raise CompiledProgramError(f"{path} is not a compiled {stage_cfg.name!r} program: {exc}") from exc
    return program
