"""A training mix of several datasets (conf/dataset/judge_mix.yaml): each part loaded through its own config, split
on its own (leak-free, `factlab.data.splits`), capped per split, and marked with its split, so the mix's train, val
and test are the union of its parts' and a model never trains on a part's test cases. A part can name the case-id
prefixes that are its test split (a benchmark's dev file held out whole); its other cases then go to train and val
only. Synthetic contrastive cases (factlab.data.contrastive) are drawn from the mix's train split only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from factlab.data.cases import validate_case
from factlab.data.contrastive import FAMILIES, contrastive_cases
from factlab.data.errors import DatasetConfigError
from factlab.data.splits import seeded_sample, split_cases

logger = logging.getLogger(__name__)


def load(*, name: str, data_root: str, parts: Sequence[Mapping], fractions: Mapping[str, float], seed: int,
         contrastive: Mapping, max_rows: int | None = None) -> list[dict]:
    """Load, split, cap and mark every part; add the contrastive cases of the train split.

    Args:
        name: the mix's name.
        data_root: where the public parts read (each part's own config reads the same FACTLAB_DATA_ROOT).
        parts: per part `dataset` (a conf/dataset option), `cap` {train, val, test} (cases per split; null = all) and
            `test_from` (case-id prefixes that are the part's whole test split; null = split by `fractions`).
        fractions: train / val / test fractions of a part split by fractions.
        seed: the split and sampling seed.
        contrastive: `families` (the edit families; [] = none) and `cap` (cases per family; null = all).
        max_rows: passed to every part (rows per file; tests, quick runs).

    Returns:
        The cases, each with its `split`.
    """
    from factlab.config import compose_option
    from factlab.data.registry import load_dataset

    out: list[dict] = []
    for part in parts:
        part_cfg = compose_option("dataset", str(part["dataset"]))  # reads FACTLAB_DATA_ROOT as `data_root` does
        part_cfg.max_rows = max_rows
        dataset = load_dataset(part_cfg)
        splits = _part_splits(dataset.cases, part.get("test_from"), fractions, seed)
        for split, cases in splits.items():
            cap = (part.get("cap") or {}).get(split)
            out += [{**case, "split": split} for case in seeded_sample(cases, cap, seed)]
        logger.info("mix %s: %s %s", name, part["dataset"], {s: len(c) for s, c in splits.items()})
    families = list(contrastive.get("families") or [])
    if families:
        unknown = set(families) - set(FAMILIES)
        if unknown:
            raise DatasetConfigError(f"conf/dataset/{name}.yaml: contrastive.families {sorted(unknown)}: expected some "
                                     f"of {', '.join(FAMILIES)}")
        source = f"{name}-contrastive"
        made = contrastive_cases([case for case in out if case["split"] == "train"], families, source=source)
        for family in families:  # one pass of the edits over the train pairs, capped per family
            of_family = [case for case in made if case["case_id"].startswith(f"{source}-{family}-")]
            out += [validate_case(case, case["case_id"]) for case in
                    seeded_sample(of_family, contrastive.get("cap"), seed)]
    return out


def _part_splits(cases: list[dict], test_from: Sequence[str] | None, fractions: Mapping[str, float],
                 seed: int) -> dict[str, list[dict]]:
    if not test_from:
        return split_cases([{k: v for k, v in c.items() if k != "split"} for c in cases], fractions, seed)
    prefixes = tuple(test_from)
    test = [case for case in cases if case["case_id"].startswith(prefixes)]
    rest = [{k: v for k, v in c.items() if k != "split"} for c in cases if not c["case_id"].startswith(prefixes)]
    if not test:
        raise DatasetConfigError(f"test_from {list(prefixes)}: no case id starts with these prefixes")
    train_val = {"train": fractions["train"] / (fractions["train"] + fractions["val"]),
                 "val": fractions["val"] / (fractions["train"] + fractions["val"]), "test": 0.0}
    splits = split_cases(rest, train_val, seed) if rest else {"train": [], "val": [], "test": []}
    splits["test"] = [{k: v for k, v in c.items() if k != "split"} for c in test]
    return splits
