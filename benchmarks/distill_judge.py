"""python benchmarks/distill_judge.py [--train-rows 1200] [--val-rows 60] [--test-rows 150] [--llm-items 150]
                                     [--budget-s 540] [--threads 2] [--skip-llm]

distill_judge (MiniLM, claim + one evidence snippet -> relation) trained on claim/evidence pairs of eight public
datasets (../shared/data or FACTLAB_DATA_ROOT), against the judge stage program on the local 1.5B and 0.5B LLMs, on
the same held-out test items. Prints a table; writes results.json and table.md under
outputs/benchmarks/distill_judge/. Goal: the distilled judge beats the 1.5B program at >= 100x its throughput,
trained in <= 10 minutes on this 2-core CPU.

Splits are per dataset (case level, leak-free: factlab.data.splits); each dataset contributes at most --train-rows
/ --val-rows / --test-rows evidence rows per split, so large ones (OCNLI, COVID-Fact) do not drown the small ones.
The LLM items are an equal share of each dataset's test rows. LLM calls run one at a time with DSPy's cache off, so
items/s is real inference; an unparseable LLM answer counts as `insufficient` (what an empty judgment aggregates to).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

DATASETS = ("climate_fever", "scifact", "healthver", "covidfact", "fever_symmetric_v01", "vitaminc", "wice", "ocnli")
LLMS = (("b", "local_qwen15", "judge program, Qwen2.5-Coder-1.5B (llama.cpp)"),
        ("c", "local_qwen05", "judge program, Qwen2.5-Coder-0.5B (llama.cpp)"))
OUT = Path("outputs/benchmarks/distill_judge")


def capped_cases(cases: list[dict], rows_of, cap: int, seed: int) -> list[dict]:
    """A seeded sample of whole cases holding about `cap` rows (cases are never split: splits stay leak-free)."""
    order = list(cases)
    random.Random(seed).shuffle(order)
    kept, count = [], 0
    for case in order:
        if count >= cap:
            break
        n = len(rows_of([case]))
        if n:
            kept.append(case)
            count += n
    return kept


def mixed_splits(args, rows_of) -> dict[str, list[dict]]:
    from factlab.config import compose_config
    from factlab.data.registry import load_dataset
    from factlab.data.splits import split_cases

    caps = {"train": args.train_rows, "val": args.val_rows, "test": args.test_rows}
    merged = {split: [] for split in caps}
    for name in DATASETS:
        dataset = load_dataset(compose_config("train", [f"dataset={name}"]).dataset)
        for split, cases in split_cases(dataset.cases, {"train": 0.8, "val": 0.1, "test": 0.1}, args.seed).items():
            merged[split] += [{**case, "dataset": name} for case in capped_cases(cases, rows_of, caps[split],
                                                                                  args.seed)]
    return merged


def llm_sample(rows, dataset_of: dict[str, str], n: int, seed: int):
    """An equal share of each dataset's test rows (the remainder at random), seeded."""
    by_dataset = defaultdict(list)
    for row in rows:
        by_dataset[dataset_of[row.case_id]].append(row)
    rng = random.Random(seed)
    share, picked = n // len(by_dataset), []
    for name in sorted(by_dataset):
        pool = list(by_dataset[name])
        rng.shuffle(pool)
        picked += pool[:share]
    rest = [row for row in rows if row not in picked]
    rng.shuffle(rest)
    return picked + rest[: n - len(picked)]


def judge_with_llm(lm_name: str, rows, threads: int) -> tuple[list[str], float, int]:
    """The judge stage program on one LM over the rows: predicted relations, items/s, parse failures."""
    from hydra.utils import instantiate
    from tqdm import tqdm

    from factlab.config import compose_config
    from factlab.models.errors import call_safely
    from factlab.stages.build import build_program

    # Its own alias: a server of its own (with these threads), not one another process may stop mid-run.
    cfg = compose_config("run_stage", ["stage=judge", f"lm@student={lm_name}", "student.cache=false",
                                       f"student.n_threads={threads}", f"student.alias=benchmark-{lm_name}"])
    program = build_program(cfg.stage)
    handle = instantiate(cfg.student)
    predicted, failures = [], 0
    with handle.context():
        _, error = call_safely("judge", program, claim="warm-up", evidence=["warm-up"])  # loads the model
        if error and error.kind == "connection":
            raise RuntimeError(f"{lm_name}: the llama.cpp server does not answer: {error}")
        start = time.perf_counter()
        for row in tqdm(rows, desc=f"judge on {lm_name}", unit="item"):
            pred, error = call_safely("judge", program, claim=row.text, evidence=[row.pair])
            failures += error is not None
            predicted.append("insufficient" if error else pred.relation)
        seconds = time.perf_counter() - start
    return predicted, len(rows) / seconds, failures


def scores(gold, predicted, labels) -> dict:
    from factlab.metrics import classification_metrics

    return {k: round(v, 4) for k, v in classification_metrics(gold, predicted, labels).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-rows", type=int, default=1200, help="max train rows per dataset")
    parser.add_argument("--val-rows", type=int, default=60, help="max val rows per dataset (early stopping)")
    parser.add_argument("--test-rows", type=int, default=150, help="max test rows per dataset")
    parser.add_argument("--llm-items", type=int, default=150, help="test items judged by every system")
    parser.add_argument("--budget-s", type=float, default=540, help="training time budget (recipe.max_train_seconds)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of torch and of llama.cpp (1 is faster "
                        "than 2 on a busy 2-core machine)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-llm", action="store_true", help="only train and evaluate the classifier")
    parser.add_argument("--set", nargs="*", default=[], help="train config overrides, e.g. recipe.epochs=2")
    args = parser.parse_args(argv)

    import torch

    from factlab.config import compose_config
    from factlab.runtime import prepare_offline_env
    from factlab.schema import RELATIONS
    from factlab.tracking.trackers import NullTracker
    from factlab.train.distill.classifier import evaluate_classifier
    from factlab.train.job import TrainJob, config_digest, run_recipe
    from factlab.train.tasks import judge_task
    from factlab.train.teacher import GoldTeacher

    prepare_offline_env()
    torch.set_num_threads(args.threads)
    cfg = compose_config("train", ["recipe=distill_judge", "tracking=off", f"recipe.max_train_seconds={args.budget_s}",
                                   "recipe.max_rows.train=null", "recipe.max_rows.val=null",
                                   "recipe.max_rows.test=null", *args.set])
    task = judge_task(cfg.recipe.row_kinds)
    start = time.perf_counter()
    splits = mixed_splits(args, task.rows)
    load_seconds = time.perf_counter() - start
    digest = config_digest(cfg, json.dumps([vars(args), [[c["case_id"] for c in s] for s in splits.values()]]))
    job = TrainJob(splits=splits, teacher=GoldTeacher(), tracker=NullTracker(), work_dir=OUT / digest, seed=args.seed,
                   resume=True, registered_name="factlab-distill_judge", dataset="+".join(DATASETS))
    start = time.perf_counter()
    result = run_recipe(cfg.recipe, job)
    job_seconds = time.perf_counter() - start

    test_rows = task.rows(splits["test"])
    dataset_of = {case["case_id"]: case["dataset"] for cases in splits.values() for case in cases}
    items = llm_sample(test_rows, dataset_of, args.llm_items, args.seed)
    gold = [row.gold for row in items]
    mine, mine_rate = evaluate_classifier(job.work_dir / "model", items, RELATIONS, cfg.recipe.eval_batch_size)
    systems = [{"id": "a", "system": f"distilled MiniLM judge (batch {cfg.recipe.eval_batch_size})",
                **scores(gold, mine, RELATIONS), "items_per_s": round(mine_rate, 2), "failures": 0,
                "per_dataset": per_dataset(items, mine, dataset_of)}]
    if not args.skip_llm:
        for key, lm_name, label in LLMS:
            predicted, rate, failures = judge_with_llm(lm_name, items, args.threads)
            OUT.mkdir(parents=True, exist_ok=True)  # kept as soon as known: an LLM pass takes up to an hour here
            (OUT / f"predictions_{lm_name}.json").write_text(json.dumps(
                {"items_per_s": rate, "failures": failures, "predicted": predicted, "gold": gold}))
            systems.append({"id": key, "system": label, **scores(gold, predicted, RELATIONS),
                            "items_per_s": round(rate, 3), "failures": failures,
                            "per_dataset": per_dataset(items, predicted, dataset_of)})
    report = {
        "args": vars(args), "rows": {s: len(task.rows(c)) for s, c in splits.items()},
        "test_items": len(items), "gold_counts": {r: gold.count(r) for r in RELATIONS},
        "train_wall_s": round(result["train/wall_s"], 1), "train_steps": result["train/steps"],
        "train_rows": result["train/rows"], "job_wall_s": round(job_seconds, 1), "data_load_s": round(load_seconds, 1),
        "full_test": {k: round(v, 4) for k, v in result.items() if k.startswith("test/") and "/" not in k[5:]},
        "model_dir": result["model_dir"], "systems": systems,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    table = render(report)
    (OUT / "table.md").write_text(table + "\n")
    print(table)
    return 0


def per_dataset(items, predicted, dataset_of: dict[str, str]) -> dict[str, dict]:
    from factlab.schema import RELATIONS

    groups = defaultdict(lambda: ([], []))
    for row, pred in zip(items, predicted, strict=True):
        gold, got = groups[dataset_of[row.case_id]]
        gold.append(row.gold)
        got.append(pred)
    return {name: scores(g, p, RELATIONS) for name, (g, p) in sorted(groups.items())}


def render(report: dict) -> str:
    rows = ["| system | balanced acc | macro-F1 | accuracy | items/s | unparsed |", "|---|---|---|---|---|---|"]
    for s in report["systems"]:
        rows.append(f"| ({s['id']}) {s['system']} | {s['balanced_accuracy']:.3f} | {s['macro_f1']:.3f} | "
                    f"{s['accuracy']:.3f} | {s['items_per_s']:g} | {s['failures']} |")
    full = report["full_test"]
    by_id = {s["id"]: s for s in report["systems"]}
    lines = [f"Same {report['test_items']} held-out test items for every system (gold: {report['gold_counts']}).",
             "", *rows, "",
             f"Training: {report['train_rows']} rows, {report['train_steps']} steps, {report['train_wall_s']} s wall "
             f"(whole job incl. evaluation {report['job_wall_s']} s).",
             f"(a) on the full test split ({full['test/n']} rows): balanced acc {full['test/balanced_accuracy']}, "
             f"macro-F1 {full['test/macro_f1']}, {full['test/items_per_s']:.1f} items/s."]
    if "b" in by_id:
        lines.append(f"Throughput (a)/(b): {by_id['a']['items_per_s'] / by_id['b']['items_per_s']:.0f}x.")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
