"""Deterministic, seeded train / val / test splits at case level, stratified by label x language, leak-free.

Cases that share a claim (same `normalise_text`) are joined into one group and always land in the same split, so
the same claim can never be trained on and tested on. Groups are allocated per stratum (the group's dominant
claim label, else relation, times its language): shuffled with the seed, then each goes to the split furthest
below its target fraction. The result depends only on the cases' ids and content and the seed, not on their order.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from factlab.data.cases import SPLITS
from factlab.data.errors import DataError
from factlab.schema import LABELS, RELATIONS, normalise_text


class LeakageError(DataError):
    """The same claim is in two splits that must not share claims."""


T = TypeVar("T")

# (held-out split, split it must not share claims with)
LEAKAGE_PAIRS: tuple[tuple[str, str], ...] = (("test", "train"), ("test", "val"))


def claim_keys(case: dict) -> list[str]:
    """The normalised claim texts of a case (its normalised text when it has no claims).

    >>> claim_keys({"text": "A, b!", "claims": [{"text": "The Drug works."}]})
    ['the drug works']
    """
    keys = [normalise_text(claim["text"]) for claim in case.get("claims", [])]
    return [key for key in keys if key] or [normalise_text(case["text"])]


def stratum(cases: Iterable[dict]) -> str:
    """Stratum of a group of cases: its most common claim label (else relation) and its most common language.

    >>> stratum([{"lang": "en", "claims": [{"label": "wrong"}, {"label": "correct"}, {"label": "wrong"}]}])
    'wrong|en'
    >>> stratum([{"lang": "zh"}])
    'none|zh'
    """
    order = {name: rank for rank, name in enumerate((*LABELS, *RELATIONS))}
    golds, langs = Counter(), Counter()
    for case in cases:
        langs[case["lang"]] += 1
        for claim in case.get("claims", []):
            gold = claim.get("label") or claim.get("relation")
            if gold:
                golds[gold] += 1
    gold = min(golds, key=lambda name: (-golds[name], order.get(name, len(order)), name)) if golds else "none"
    lang = min(langs, key=lambda name: (-langs[name], name))
    return f"{gold}|{lang}"


def _groups(cases: list[dict]) -> list[list[int]]:
    """Indices of cases joined by shared claim keys (union-find), each group sorted, groups by first case id."""
    parent = list(range(len(cases)))

    def find(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    owner: dict[str, int] = {}
    for index, case in enumerate(cases):
        for key in claim_keys(case):
            if key in owner:
                parent[find(index)] = find(owner[key])
            else:
                owner[key] = index
    groups: dict[int, list[int]] = {}
    for index in range(len(cases)):
        groups.setdefault(find(index), []).append(index)
    members = [sorted(group, key=lambda i: cases[i]["case_id"]) for group in groups.values()]
    return sorted(members, key=lambda group: cases[group[0]]["case_id"])


def check_fractions(fractions: Mapping[str, float]) -> dict[str, float]:
    """Check split fractions: names from SPLITS, non-negative, summing to 1.

    >>> check_fractions({"train": 0.8, "val": 0.1, "test": 0.1})
    {'train': 0.8, 'val': 0.1, 'test': 0.1}
    """
    fractions = {str(name): float(value) for name, value in fractions.items()}
    unknown = [name for name in fractions if name not in SPLITS]
    if unknown or any(value < 0 for value in fractions.values()) or abs(sum(fractions.values()) - 1) > 1e-6:
        raise ValueError(f"splits: expected fractions for {', '.join(SPLITS)} that are >= 0 and sum to 1, "
                         f"got {fractions}")
    return fractions


def assign_splits(cases: list[dict], fractions: Mapping[str, float], seed: int) -> dict[str, str]:
    """Map every case id to a split name.

    Args:
        cases: the cases (unique `case_id`s).
        fractions: split name -> fraction of cases, e.g. {"train": 0.8, "val": 0.1, "test": 0.1}.
        seed: the shuffle seed.

    Returns:
        case_id -> split.
    """
    fractions = check_fractions(fractions)
    by_stratum: dict[str, list[list[int]]] = {}
    for group in _groups(cases):
        by_stratum.setdefault(stratum(cases[i] for i in group), []).append(group)
    assignment: dict[str, str] = {}
    overall = dict.fromkeys(fractions, 0)
    for name in sorted(by_stratum):
        groups = by_stratum[name]
        random.Random(f"{seed}|{name}").shuffle(groups)
        counts = dict.fromkeys(fractions, 0)
        for group in groups:
            total, grand = sum(counts.values()) + len(group), sum(overall.values()) + len(group)
            # the split furthest below its share in this stratum once the group is placed; ties go to the split
            # furthest below its share overall, so rounding does not always favour the same split
            split = max(fractions, key=lambda s: (round(fractions[s] * total - counts[s], 9),
                                                  fractions[s] * grand - overall[s]))
            counts[split] += len(group)
            overall[split] += len(group)
            assignment.update((cases[i]["case_id"], split) for i in group)
    return assignment


def split_cases(cases: list[dict], fractions: Mapping[str, float], seed: int) -> dict[str, list[dict]]:
    """Split cases into {split: cases}, each case copied with its `split` field set; checked for leakage.

    Args:
        cases: the cases.
        fractions: split name -> fraction.
        seed: the shuffle seed.

    Returns:
        split name -> its cases in input order (train, val and test always present, possibly empty).

    A case that already names its `split` (a prepared dataset, or a row added by `dataset.extra`) keeps it and takes
    no part in the assignment, so adding such rows never moves the other cases; when every case names its split the
    fractions are not used.

    >>> cases = [{"case_id": "a", "split": "train"}, {"case_id": "b", "split": "test"}]
    >>> {k: [c["case_id"] for c in v] for k, v in split_cases(cases, {}, 0).items()}
    {'train': ['a'], 'val': [], 'test': ['b']}
    """
    unsplit = [case for case in cases if "split" not in case]
    assignment = assign_splits(unsplit, fractions, seed) if unsplit else {}
    assignment.update((case["case_id"], case["split"]) for case in cases if "split" in case)
    splits: dict[str, list[dict]] = {name: [] for name in SPLITS}
    for case in cases:
        split = assignment[case["case_id"]]
        splits[split].append({**case, "split": split})
    check_leakage(splits)
    return splits


def check_leakage(splits: Mapping[str, Iterable[dict]]) -> None:
    """Refuse a claim shared between test and train, or test and val.

    Args:
        splits: split name -> cases.

    Raises:
        LeakageError: naming the claim and the case ids on both sides.
    """
    owners: dict[str, dict[str, tuple[str, str]]] = {}
    for name, cases in splits.items():
        owners[name] = {}
        for case in cases:
            for claim in case.get("claims", []):
                owners[name].setdefault(normalise_text(claim["text"]), (claim["text"], case["case_id"]))
    for held_out, other in LEAKAGE_PAIRS:
        if held_out not in owners or other not in owners:
            continue
        for key in sorted(owners[held_out].keys() & owners[other].keys()):
            claim, held_case = owners[held_out][key]
            _, other_case = owners[other][key]
            raise LeakageError(f"claim {claim!r} is in {held_out} (case {held_case}) and in {other} (case "
                               f"{other_case}); split with factlab.data.splits.split_cases, which keeps cases "
                               "sharing a claim together, or drop one of the cases")


def seeded_sample(items: Sequence[T], limit: int | None, seed: int) -> list[T]:
    """At most `limit` items, a seeded sample kept in the original order (all of them for None): the one sampler of
    cases (prepare_data.py), stage examples (optimize.py) and training rows (train.py).

    >>> seeded_sample(list("abcde"), 3, seed=0)
    ['a', 'd', 'e']
    >>> seeded_sample(list("abc"), None, seed=0)
    ['a', 'b', 'c']
    """
    if limit is None or limit >= len(items):
        return list(items)
    if limit < 1:
        raise ValueError(f"sample size: expected a positive number or null, got {limit}")
    keep = set(random.Random(seed).sample(range(len(items)), limit))
    return [item for index, item in enumerate(items) if index in keep]
