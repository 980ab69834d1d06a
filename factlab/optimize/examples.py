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
                 max_examples: Mapping[str, int | None], vertical: str | None = None) -> dict[str, list[dspy.Example]]:
    """The stage's examples per split, each split capped by `max_examples[split]`; with `vertical`, only the
    examples of cases of that vertical (a program compiled per vertical; the split itself is the same as without).

    Raises:
        EmptySplitError: a split without any example of the stage (naming the split and the fix).
    """
    splits = split_cases(cases, fractions, seed)
    out = {}
    for name in SPLITS:
        own = [case for case in splits[name] if vertical is None or case.get("vertical") == vertical]
        examples = seeded_sample(stage_examples(own, stage), max_examples[name], seed)
        if not examples:
            where = f" of vertical {vertical!r}" if vertical else ""
            raise EmptySplitError(
                f"stage {stage!r}: split {name!r} has no examples{where} ({len(own)} cases); use a dataset with "
                f"gold for {stage} or larger `splits.{name}`"
            )
        out[name] = examples
    return out
