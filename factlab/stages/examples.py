"""A stage's DSPy examples over cases: each stage file's own `to_examples(case)`, gathered (optimize.py's splits,
train.py's SFT rows and reflow read them the same way)."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from factlab.programs import STAGES

if TYPE_CHECKING:
    import dspy


def stage_examples(cases: Iterable[dict], stage: str) -> list[dspy.Example]:
    """DSPy examples of one stage: `factlab.programs.<stage>.to_examples(case)` concatenated over the cases.

    Args:
        cases: the cases.
        stage: a stage module name under factlab/programs (e.g. "judge").

    Returns:
        The examples, inputs already marked; cases the stage cannot use contribute none.

    Raises:
        ValueError: no such stage module, or it has no `to_examples`.
    """
    module_name = f"factlab.programs.{stage}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise ValueError(f"unknown stage {stage!r}: no module {module_name}; stages: {', '.join(STAGES)}") from None
    if not callable(getattr(module, "to_examples", None)):
        raise ValueError(f"{module_name} has no to_examples(case) -> list[dspy.Example]")
    return [example for case in cases for example in module.to_examples(case)]
