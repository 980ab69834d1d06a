# python benchmarks/small_stages.py --classifier checkworthy:e5=<URI> --classifier vertical:e5=<URI> [--lm ...]
"""Check-worthiness and vertical: distilled classifiers vs the stage programs on local LMs, side by side in one run.

Every system sees the same rows: the bundled test split (conf/splits, seed 0) turned into the stage's rows by the
task the recipe trains on (factlab.train.tasks: gold sentences for checkworthy, claims and case texts for vertical).
Metrics per stage and system: accuracy and macro-F1 over the stage's labels, per language and overall, with 95%
bootstrap intervals (rows resampled), unparsed answers (an LM answer outside the labels counts as wrong), items/s on
this CPU (classifiers at batch 32, LMs one call per item with DSPy's cache off). Prints Markdown tables and writes
outputs/benchmarks/small_stages/results.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

OUT = Path("outputs/benchmarks/small_stages")
STAGES = ("checkworthy", "vertical")


def stage_rows(stage: str, seed: int) -> tuple[tuple[str, ...], list]:
    """The stage's labels and its bundled test rows."""
    from factlab.config import compose_config
    from factlab.data.registry import load_dataset
    from factlab.data.splits import split_cases
    from factlab.train.tasks import checkworthy_task, vertical_task

    cfg = compose_config("train")
    test = split_cases(load_dataset(compose_config("train", ["dataset=bundled"]).dataset).cases, cfg.splits,
                       seed)["test"]
    if stage == "checkworthy":
        task = checkworthy_task()
    else:
        task = vertical_task(list(compose_config("run_stage", ["stage=vertical"]).stage.program.verticals))
    return task.labels, [row for row in task.rows(test) if row.gold is not None]


def scores(labels, rows, predicted: list[str | None], ci_samples: int = 300) -> dict:
    from factlab.metrics import bootstrap_ci, macro_f1

    def statistic(units):
        out = {}
        for lang in ("en", "zh", "all"):
            picked = [(g, p) for g, p, row_lang in units if lang in ("all", row_lang)]
            if picked:
                out[f"{lang}/accuracy"] = sum(g == p for g, p in picked) / len(picked)
                out[f"{lang}/macro_f1"] = macro_f1([g for g, _ in picked], [p or "" for _, p in picked], labels)
        return out

    units = [(row.gold, pred, row.lang) for row, pred in zip(rows, predicted, strict=True)]
    out: dict[str, object] = statistic(units)
    out["ci95"] = {k: [round(a, 3), round(b, 3)] for k, (a, b) in
                   bootstrap_ci(units, statistic, list(out), ci_samples, 0, 0.95).items()}
    out["n"] = {lang: sum(1 for *_, row_lang in units if lang in ("all", row_lang)) for lang in ("en", "zh", "all")}
    out["unparsed"] = sum(pred is None for pred in predicted)
    return out


def run_classifier(uri: str, rows) -> tuple[list[str | None], float, dict]:
    from factlab.models.classifier import SequenceClassifier
    from factlab.tracking.refs import resolve_model

    classifier = SequenceClassifier(resolve_model(uri), batch_size=32)
    texts = [row.text for row in rows]
    classifier.predict(texts[:32])  # warm up
    start = time.perf_counter()
    predicted = [label for label, _ in classifier.predict(texts)]
    meta = classifier.meta
    return predicted, len(rows) / (time.perf_counter() - start), {"base_model": meta.get("base_model"),
                                                                   "train_s": meta.get("train_seconds")}


def run_program(stage: str, lm: str, rows) -> tuple[list[str | None], float]:
    from judge_heldout import stage_program_on

    from factlab.models.errors import call_safely
    from factlab.train.tasks import checkworthy_task, vertical_task

    handle, program, stage_cfg = stage_program_on(stage, lm)
    target = (checkworthy_task() if stage == "checkworthy" else vertical_task(list(stage_cfg.program.verticals))).target
    predicted = []
    with handle.context():
        start = time.perf_counter()
        for row in rows:
            pred, error = call_safely(stage, program, handle.breaker, **row.inputs)
            predicted.append(None if error is not None else target(pred))
        seconds = time.perf_counter() - start
    return predicted, len(rows) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classifier", action="append", default=[], help="STAGE:NAME=<model folder or MLflow URI>")
    parser.add_argument("--lm", nargs="*", default=[], help="conf/lm options to run the stage programs on")
    parser.add_argument("--lm-items", type=int, default=None, help="first N rows per stage for the LM programs")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    from factlab.runtime import prepare_offline_env

    prepare_offline_env()
    torch.set_num_threads(args.threads)
    results = []
    for stage in STAGES:
        labels, rows = stage_rows(stage, args.seed)
        print(f"{stage}: {len(rows)} test rows, labels {labels}")
        for spec in args.classifier:
            spec_stage, _, rest = spec.partition(":")
            if spec_stage != stage:
                continue
            name, _, uri = rest.partition("=")
            predicted, speed, meta = run_classifier(uri, rows)
            results.append({"stage": stage, "system": f"classifier {name}", **scores(labels, rows, predicted),
                            "items_per_s": round(speed, 2), **meta})
            print(json.dumps(results[-1]))
        for lm in args.lm:
            subset = rows[: args.lm_items] if args.lm_items else rows
            predicted, speed = run_program(stage, lm, subset)
            results.append({"stage": stage, "system": f"program on {lm}", **scores(labels, subset, predicted),
                            "items_per_s": round(speed, 3)})
            print(json.dumps(results[-1]))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2))
    keys = ["all/accuracy", "all/macro_f1", "en/accuracy", "zh/accuracy", "items_per_s", "unparsed"]
    print("| stage | system | n | " + " | ".join(keys) + " |\n|" + "---|" * (len(keys) + 3))
    for row in results:
        cells = []
        for key in keys:
            value, interval = row.get(key), row["ci95"].get(key)
            cells.append(f"{value:.3f} [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else
                         "" if value is None else str(value))
        print(f"| {row['stage']} | {row['system']} | {row['n']['all']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
