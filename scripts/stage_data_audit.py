"""The training data of one LM stage, counted and leak-checked (issue 46): rows of the train dataset's train split
per source and language, and every row whose input or gold output also appears in a held-out split (val or test) of
any dataset named, after normalising text (NFKC, case, whitespace). A leak exits 1.

    python scripts/stage_data_audit.py                                   # extract_claims on extract_bench
    python scripts/stage_data_audit.py --stage review_claims --against claims_bench bundled extra_zh vertical_claims

Sources are the case ids' prefixes (bundled-en-a-0005 -> bundled). What it reads is what train.py's SFT rows are made
from: `factlab.stages.examples.stage_examples` over the train split's cases.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter

from factlab.schema import normalise_text


def _key(value) -> str:
    text = " ".join(str(v) for v in value) if isinstance(value, list) else str(value)
    return re.sub(r"\s+", " ", normalise_text(text)).strip().lower()


def _source(case_id: str) -> str:
    return re.split(r"[-:/]", case_id, maxsplit=1)[0]


def split_examples(dataset: str, stage: str, splits: tuple[str, ...]) -> list[tuple[str, str, object]]:
    """(split, source, example) for the cases of `dataset` in `splits`, as the stage reads them."""
    from factlab.config import compose_config
    from factlab.data.registry import load_dataset
    from factlab.data.splits import split_cases
    from factlab.stages.examples import stage_examples

    cfg = compose_config("optimize", [f"stage={stage}", f"dataset={dataset}"])
    by_split = split_cases(load_dataset(cfg.dataset).cases, cfg.splits, cfg.seed)  # as train.py splits them
    return [(split, _source(case["case_id"]), ex) for split in splits for case in by_split[split]
            for ex in stage_examples([case], stage)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stage", default="extract_claims")
    parser.add_argument("--train", default="extract_bench", help="the dataset train.py trains on (its train split)")
    parser.add_argument("--against", nargs="+", default=["extract_bench", "claims_bench", "bundled", "extra_zh",
                                                          "vertical_claims"],
                        help="datasets whose val and test splits no train row may share an input or output with")
    args = parser.parse_args(argv)
    train = split_examples(args.train, args.stage, ("train",))
    counts = Counter((source, ex.get("lang") or "?") for _, source, ex in train)
    print(f"{args.stage} rows in {args.train}'s train split: {len(train)}")
    for (source, lang), n in sorted(counts.items()):
        print(f"  {source:18s} {lang}: {n}")
    print(f"  input fields: {', '.join(train[0][2].inputs().keys()) if train else '-'}")

    def keys(ex) -> set[str]:
        out = {f"in:{_key(ex[name])}" for name in ex.inputs().keys() if len(_key(ex[name])) > 20}
        labels = ex.labels()
        return out | {f"out:{_key(labels[name])}" for name in labels.keys() if len(_key(labels[name])) > 20}

    train_keys = {}
    for _, source, ex in train:
        for key in keys(ex):
            train_keys.setdefault(key, source)
    leaks = 0
    for dataset in args.against:
        held = split_examples(dataset, args.stage, ("val", "test"))
        shared = [(split, source, key) for split, source, ex in held for key in keys(ex) if key in train_keys]
        by_split = Counter(split for split, _, _ in shared)
        print(f"{dataset}: {len(held)} held-out rows (val {sum(s == 'val' for s, _, _ in held)}, test "
              f"{sum(s == 'test' for s, _, _ in held)}); sharing an input or output with a train row: "
              f"val {by_split['val']}, test {by_split['test']}")
        for split, source, key in shared[:5]:
            print(f"    {split} {source}: {key[:100]}")
        leaks += len(shared)
    print("no leak" if not leaks else f"LEAK: {leaks} shared texts")
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main())
