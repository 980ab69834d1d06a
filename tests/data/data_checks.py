"""Checks shared by the data tests (imported as a module: pytest puts tests/data on the path)."""

from __future__ import annotations


def assert_resplit_keeps_held_out(bench: list[dict], parts: list[str], cfg) -> None:
    """A mix that splits its parts' usual train again (`train_resplit`): it holds exactly the parts' cases, its train
    is a subset of their usual train, and every case their usual split holds out (val, test) keeps its split."""
    from factlab.config import compose_config
    from factlab.data.registry import load_dataset
    from factlab.data.splits import split_cases

    usual = {}
    for name in parts:
        cases = load_dataset(compose_config("optimize", [f"dataset={name}"]).dataset).cases
        usual.update((c["case_id"], split) for split, part in split_cases(cases, cfg.splits, cfg.seed).items()
                     for c in part)
    split_of = {c["case_id"]: c["split"] for c in bench}
    assert set(split_of) == set(usual)
    assert all(usual[case_id] == "train" for case_id, split in split_of.items() if split == "train")
    assert all(split_of[case_id] == split for case_id, split in usual.items() if split in ("val", "test"))
