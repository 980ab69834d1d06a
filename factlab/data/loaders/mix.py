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
from factlab.data.splits import check_leakage, seeded_sample, split_cases

logger = logging.getLogger(__name__)


def load(*, name: str, data_root: str, parts: Sequence[Mapping], fractions: Mapping[str, float], seed: int,
         contrastive: Mapping, max_rows: int | None = None, union_corpus: bool = False) -> list[dict]:
    """Load, split, cap and mark every part; add the contrastive cases of the train split.

    Args:
        name: the mix's name.
        data_root: where the public parts read (each part's own config reads the same FACTLAB_DATA_ROOT).
        parts: per part `dataset` (a conf/dataset option), `cap` {train, val, test} (cases per split; null = all),
            `test_from` (case-id prefixes that are the part's whole test split; null = split by `fractions`) and
            `train_resplit` (optional {train, val, test} fractions: the part's train split is split again by them,
            its val and test kept, so a benchmark gets bigger val / test splits while everything the usual split
            holds out stays held out).
        fractions: train / val / test fractions of a part split by fractions.
        seed: the split and sampling seed.
        contrastive: `families` (the edit families; [] = none) and `cap` (cases per family; null = all).
        max_rows: passed to every part (rows per file; tests, quick runs).
        union_corpus: give every case the union of all cases' sources (one corpus, deduplicated by source id), so a
            claim's evidence must be found among every part's documents (query_rewrite's benchmark), not only its own.

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
        if part.get("train_resplit"):
            splits = resplit_train(splits, part["train_resplit"], seed)
        for split, cases in splits.items():
            cap = (part.get("cap") or {}).get(split)
            out += [{**case, "split": split} for case in seeded_sample(cases, cap, seed)]
        logger.info("mix %s: %s %s", name, part["dataset"], {s: len(c) for s, c in splits.items()})
    if union_corpus:
        out = with_union_corpus(out)
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


def resplit_train(splits: Mapping[str, list[dict]], fractions: Mapping[str, float],
                  seed: int) -> dict[str, list[dict]]:
    """The part's usual val and test kept, its train split again by `fractions` and the pieces added: every case
    held out by the usual split stays held out, and the new train is a subset of the usual train (a program
    compiled on it can still be evaluated on the usual test split without leakage).

    >>> cases = [{"case_id": f"c{i}", "lang": "en", "text": f"claim {i}"} for i in range(20)]
    >>> usual = split_cases(cases, {"train": 0.8, "val": 0.1, "test": 0.1}, 0)
    >>> again = resplit_train(usual, {"train": 0.5, "val": 0.0, "test": 0.5}, 0)
    >>> {k: len(v) for k, v in again.items()}
    {'train': 8, 'val': 2, 'test': 10}
    >>> {c["case_id"] for c in usual["test"]} <= {c["case_id"] for c in again["test"]}
    True
    """
    train = [{k: v for k, v in c.items() if k != "split"} for c in splits["train"]]
    again = split_cases(train, fractions, seed) if train else {"train": [], "val": [], "test": []}
    out = {"train": again["train"]}
    for name in ("val", "test"):
        out[name] = list(splits[name]) + again[name]
    check_leakage(out)
    return out


def with_union_corpus(cases: list[dict]) -> list[dict]:
    """Every case with one shared list of all cases' sources, deduplicated by source id and content. Some upstream
    sets name every evidence document alike (HealthVer: "healthver evidence"), so a source id that comes back with
    other content is renamed `<id>-<content hash>` in that case, its claims' evidence chunk ids with it.

    >>> a = {"case_id": "a", "sources": [{"source_id": "s1", "text": "x"}], "claims": []}
    >>> b = {"case_id": "b", "sources": [{"source_id": "s2", "text": "y"}, {"source_id": "s1", "text": "z"}],
    ...      "claims": [{"evidence": [{"source_id": "s1", "chunk_id": "s1#p1-c1", "text": "z"}]}]}
    >>> out = with_union_corpus([a, b])
    >>> [s["source_id"] for s in out[0]["sources"]], out[0]["sources"] is out[1]["sources"]
    (['s1', 's2', 's1-4869aac2'], True)
    >>> out[1]["claims"][0]["evidence"][0]["chunk_id"]
    's1-4869aac2#p1-c1'
    """
    import hashlib
    import json

    union: dict[str, dict] = {}
    renamed_cases = []
    for case in cases:
        renames: dict[str, str] = {}
        for source in case.get("sources") or []:
            content = {k: v for k, v in source.items() if k != "source_id"}
            seen = union.get(source["source_id"])
            if seen is not None and {k: v for k, v in seen.items() if k != "source_id"} != content:
                digest = hashlib.sha1(json.dumps(content, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:8]
                renames[source["source_id"]] = f"{source['source_id']}-{digest}"
                source = {**source, "source_id": renames[source["source_id"]]}
            union.setdefault(source["source_id"], source)
        renamed_cases.append(_renamed(case, renames) if renames else case)
    shared = list(union.values())
    return [{**case, "sources": shared} for case in renamed_cases]


def _renamed(case: dict, renames: Mapping[str, str]) -> dict:
    def evidence(item: dict) -> dict:
        old = item.get("source_id")
        if old not in renames:
            return item
        chunk = item.get("chunk_id", "")
        return {**item, "source_id": renames[old],
                "chunk_id": renames[old] + chunk[len(old):] if chunk.startswith(old) else chunk}

    claims = [{**claim, "evidence": [evidence(e) for e in claim.get("evidence") or []]} if claim.get("evidence")
              else claim for claim in case.get("claims") or []]
    return {**case, "claims": claims}
