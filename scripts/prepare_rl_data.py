"""python scripts/prepare_rl_data.py --dataset bundled --out prepared/rl/bundled [--multi-hop-only] [--max-rows 64]

Write VERL's RL parquet files (train / val / test) and the union source corpus of one dataset (conf/dataset/<name>),
for `python train.py recipe=search_r1` and `recipe=grpo_search_cpu` (which call the same code themselves) or for a
hand-launched `python -m verl.trainer.main_ppo`. Row format: factlab/train/rl/data.py.
"""

from __future__ import annotations

import argparse
import json


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[2])
    parser.add_argument("--dataset", default="bundled", help="a conf/dataset/<name>.yaml (bundled, feverous, ...)")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--splits", default="0.8,0.1,0.1", help="train,val,test case fractions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--multi-hop-only", action="store_true", help="keep only claims marked multi_hop")
    parser.add_argument("--max-cases", type=int, default=None, help="read at most this many cases per file")
    parser.add_argument("--max-rows", type=int, default=None, help="at most this many rows per split")
    args = parser.parse_args(argv)

    from factlab.config import compose_config
    from factlab.data.registry import load_dataset
    from factlab.runtime import prepare_offline_env
    from factlab.train.rl.data import SPLITS, prepare

    prepare_offline_env()
    overrides = [f"dataset={args.dataset}"] + ([f"dataset.max_rows={args.max_cases}"] if args.max_cases else [])
    dataset = load_dataset(compose_config("train", overrides).dataset)
    fractions = [float(x) for x in args.splits.split(",")]
    if len(fractions) != 3:
        parser.error(f"--splits: expected three fractions train,val,test, got {args.splits!r}")
    manifest = prepare(dataset.cases, dataset.name, args.out, dict(zip(SPLITS, fractions, strict=True)),
                       seed=args.seed, multi_hop_only=args.multi_hop_only,
                       max_rows={split: args.max_rows for split in SPLITS})
    print(json.dumps(manifest, indent=2))
    return manifest


if __name__ == "__main__":
    main()
