"""Build a stage's program from its conf/stage/<name>.yaml, optionally loading compiled JSON state."""

from __future__ import annotations

from pathlib import Path

import dspy
from hydra.utils import instantiate
from omegaconf import DictConfig


class CompiledProgramError(RuntimeError):
    """A compiled program file is missing or does not fit the stage."""


def build_program(stage_cfg: DictConfig, compiled: str | None = None) -> dspy.Module:
    """Instantiate the stage's DSPy module; `compiled` is a JSON state file saved by optimize.py."""
    program = instantiate(stage_cfg.program)
    if compiled:
        path = Path(compiled)
        if not path.exists():
            raise CompiledProgramError(f"compiled program for stage {stage_cfg.name!r} not found: {path}")
        try:
            program.load(str(path))
        except Exception as exc:  # DSPy raises several types for state that does not fit
            raise CompiledProgramError(f"{path} is not a compiled {stage_cfg.name!r} program: {exc}") from exc
    return program
