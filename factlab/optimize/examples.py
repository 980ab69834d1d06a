"""The stage's train / val / test examples: cases split leak-free at case level, then the stage view of each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from factlab.data.cases import SPLITS
from factlab.data.splits import seeded_sample, split_cases
from factlab.stages.examples import stage_examples

if TYPE_CHECKING:
    import dspy


class EmptySplitError(ValueError):
    """A split has no example of the stage."""


def stage_splits(cases: list[dict], stage: str, fractions: Mapping[str, float], seed: int,
                 max_examples: Mapping[str, int | None]) -> dict[str, list[dspy.Example]]:
    """The stage's examples per split, each split capped by `max_examples[split]`.

    Raises:
        EmptySplitError: a split without any example of the stage (naming the split and the fix).
    """
    splits = split_cases(cases, fractions, seed)
    out = {}
    for name in SPLITS:
        examples = seeded_sample(stage_examples(splits[name], stage), max_examples[name], seed)
        if not examples:
            raise EmptySplitError(
                f"stage {stage!r}: split {name!r} has no examples ({len(splits[name])} cases); use a dataset with "
                f"gold for {stage} or larger `splits.{name}`"
            )
        out[name] = examples
    return out
