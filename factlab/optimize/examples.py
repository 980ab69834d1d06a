"""The stage's train / val / test examples: cases split leak-free at case level, then the stage view of each."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING

from factlab.data.splits import check_leakage, split_cases
from factlab.data.views import stage_examples

if TYPE_CHECKING:
    import dspy

SPLIT_NAMES: tuple[str, ...] = ("train", "val", "test")


class EmptySplitError(ValueError):
    """A split has no example of the stage."""


def case_splits(cases: list[dict], fractions: Mapping[str, float], seed: int) -> dict[str, list[dict]]:
    """Cases per split: the cases' own `split` when every case has one (prepared data), else `split_cases`.

    >>> cases = [{"case_id": "a", "split": "train"}, {"case_id": "b", "split": "test"}]
    >>> {k: [c["case_id"] for c in v] for k, v in case_splits(cases, {}, 0).items()}
    {'train': ['a'], 'val': [], 'test': ['b']}
    """
    if cases and all("split" in case for case in cases):
        splits = {name: [case for case in cases if case["split"] == name] for name in SPLIT_NAMES}
        check_leakage(splits)
        return splits
    return split_cases(cases, dict(fractions), seed)


def sample(examples: list, limit: int | None, seed: int) -> list:
    """At most `limit` examples, a seeded sample kept in the original order (all for None).

    >>> sample(list("abcdef"), 3, seed=0) == sample(list("abcdef"), 3, seed=0)
    True
    >>> sample(list("abc"), None, seed=0)
    ['a', 'b', 'c']
    """
    if limit is None or limit >= len(examples):
        return list(examples)
    if limit < 1:
        raise ValueError(f"max_examples: expected a positive number or null, got {limit}")
    keep = set(random.Random(seed).sample(range(len(examples)), limit))
    return [example for index, example in enumerate(examples) if index in keep]


def stage_splits(cases: list[dict], stage: str, fractions: Mapping[str, float], seed: int,
                 max_examples: Mapping[str, int | None]) -> dict[str, list[dspy.Example]]:
    """The stage's examples per split, each split capped by `max_examples[split]`.

    Raises:
        EmptySplitError: a split without any example of the stage (naming the split and the fix).
    """
    splits = case_splits(cases, fractions, seed)
    out = {}
    for name in SPLIT_NAMES:
        examples = sample(stage_examples(splits[name], stage), max_examples[name], seed)
        if not examples:
            raise EmptySplitError(
                f"stage {stage!r}: split {name!r} has no examples ({len(splits[name])} cases); use a dataset with "
                f"gold for {stage} or larger `splits.{name}`"
            )
        out[name] = examples
    return out
