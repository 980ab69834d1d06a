"""The evaluate job: build the pipeline from config, evaluate the chosen split of a dataset stage by stage, attribute
every wrong final label, and log it all to MLflow (experiment `evaluate/<dataset>`).

`run(cfg)` is what evaluate.py calls; tests call it directly with a composed config.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

logger = logging.getLogger(__name__)

ARTIFACTS = "eval"  # MLflow artifact folder of the tables (attribution.jsonl is what reflow.py reads)


def select_cases(cfg: DictConfig, cases: list[dict]) -> list[dict]:
    """The evaluated cases: the split of `cfg.split` (same fractions / seed as prepare_data), then `case_ids`, then
    the first `max_cases`."""
    from factlab.optimize.examples import SPLIT_NAMES, case_splits

    if cfg.split not in SPLIT_NAMES:
        raise ValueError(f"split={cfg.split!r}: expected one of {', '.join(SPLIT_NAMES)}")
    chosen = case_splits(cases, cfg.splits, cfg.seed)[cfg.split]
    if cfg.case_ids is not None:
        wanted = [str(c) for c in cfg.case_ids]
        unknown = [c for c in wanted if c not in {case["case_id"] for case in chosen}]
        if unknown:
            raise ValueError(f"case_ids: {unknown} are not in the {cfg.split} split of dataset {cfg.dataset.name!r}")
        chosen = [case for case in chosen if case["case_id"] in set(wanted)]
    if cfg.max_cases is not None:
        chosen = chosen[: int(cfg.max_cases)]
    if not chosen:
        raise ValueError(f"dataset {cfg.dataset.name!r} has no case in split {cfg.split!r} (splits {dict(cfg.splits)},"
                         f" case_ids {cfg.case_ids}, max_cases {cfg.max_cases})")
    return chosen


def default_run_name(cfg: DictConfig) -> str:
    """<dataset>-<split>-<student>, plus the compiled stages (`+judge`)."""
    compiled = [stage for stage, ref in cfg.programs.items() if ref is not None]
    return "-".join([cfg.dataset.name, cfg.split, cfg.student.name] + [f"+{s}" for s in compiled])


def build_matcher(cfg: DictConfig, encoder):
    """The claim matcher on the retriever's encoder; the lexical similarity when the encoder fails."""
    from hydra.utils import instantiate

    try:
        encoder.encode(["probe"])
        encode = encoder.encode
    except Exception as exc:  # no MiniLM weights: lexical matching with its own threshold
        logger.warning("claim matcher: encoder %s unavailable (%s); using text_match.similarity", encoder, exc)
        encode = None
    return instantiate(cfg.matcher, encode=encode)


def run(cfg: DictConfig) -> dict[str, Any]:
    """Evaluate `cfg.dataset`'s `cfg.split` with the configured pipeline; returns metrics and where things went."""
    from hydra.utils import instantiate

    from factlab.data.registry import load_dataset
    from factlab.evals.corpus import corpus_folder
    from factlab.evals.evaluation import EvalSettings, evaluate_cases
    from factlab.evals.scores import HEADLINE, attribution_metrics, bootstrap_ci, label_confusion, stage_metrics
    from factlab.evals.report import attribution_figure, attribution_table
    from factlab.pipeline.job import build_pipeline
    from factlab.runtime import configure_lm_cache, prepare_offline_env

    started = time.perf_counter()
    prepare_offline_env()
    resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    configure_lm_cache(cfg.lm_cache_dir)
    dataset = load_dataset(cfg.dataset)
    cases = select_cases(cfg, dataset.cases)
    sources = cfg.sources or str(corpus_folder(cases, cfg.dataset, Path(cfg.cache_dir) / "eval_corpus"))
    pipeline, retriever = build_pipeline(OmegaConf.merge(cfg, {"sources": sources}))
    for issue in retriever.issues:
        logger.warning("source skipped: %s: %s", issue.path, issue.reason)
    settings = EvalSettings(k=cfg.k, thresholds=dict(cfg.attribution.thresholds),
                            counterfactual_stages=list(cfg.attribution.counterfactual.stages),
                            judge_given_gold=cfg.judge_given_gold, progress=cfg.progress)
    evaluation = evaluate_cases(pipeline, cases, build_matcher(cfg, retriever.encoder), settings,
                                retriever.index.sources)

    split = cfg.split
    stage_values = stage_metrics(evaluation.cases)
    metrics: dict[str, float] = {f"{split}/{k}": v for k, v in stage_values.items() if v is not None}
    intervals = bootstrap_ci(evaluation.cases, stage_metrics, HEADLINE, cfg.bootstrap.samples, cfg.bootstrap.seed,
                             cfg.bootstrap.confidence)
    for name, (low, high) in intervals.items():
        metrics[f"{split}/{name}_ci_low"], metrics[f"{split}/{name}_ci_high"] = low, high
    attribution = attribution_metrics(evaluation.attribution, int(stage_values["items"]))
    metrics.update(attribution)
    for phase, costs in evaluation.costs.items():
        for stage, values in costs.items():
            metrics.update({f"cost/{phase}/{stage}/{key}": float(v) for key, v in values.items()})
    metrics["time/wall_s"] = time.perf_counter() - started
    broken = {k: v for k, v in stage_values.items()
              if k.startswith("errors/") and k.endswith(("connection", "timeout"))}
    if broken:
        logger.warning("LM calls failed for infrastructure reasons %s: their claims count as errors; check the LM "
                       "server (student.*) and rerun (answered calls are cached)", broken)

    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    items = [{"case_id": c["case_id"], **item} for c in evaluation.cases for item in c["items"]]
    confusion = label_confusion(evaluation.cases)
    table = attribution_table(attribution)
    files = {"items.jsonl": items, "attribution.jsonl": evaluation.attribution, "cases.jsonl": evaluation.cases}
    for name, rows in files.items():
        (out / name).write_text("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows),
                                encoding="utf-8")
    summary = {"metrics": metrics, "confusion": confusion, "costs": evaluation.costs,
               "cases": [c["case_id"] for c in cases], "attribution_table": table}
    (out / "summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2), encoding="utf-8")
    figure = attribution_figure(attribution, f"{dataset.name} {split}: bad items per blamed stage "
                                             f"({len(evaluation.attribution)} of {int(stage_values['items'])})")
    figure.savefig(out / "attribution.png")

    tracker = instantiate(cfg.tracking)
    tags = {"dataset": dataset.name, "split": split, "student": cfg.student.name, "kind": "evaluate",
            "compiled": ",".join(s for s, ref in cfg.programs.items() if ref is not None) or "none"}
    with tracker.run(f"evaluate/{dataset.name}", run_name=cfg.run_name or default_run_name(cfg), tags=tags) as track:
        track.log_params({**resolved, "dataset_content_hash": dataset.content_hash, "n_cases": len(cases)})
        track.log_metrics(metrics)
        track.log_dict(resolved, f"{ARTIFACTS}/config.json")
        track.log_dict({"case_ids": [c["case_id"] for c in cases], "sources": sources}, f"{ARTIFACTS}/cases.json")
        track.log_table(evaluation.attribution, f"{ARTIFACTS}/attribution.jsonl")
        track.log_table(items, f"{ARTIFACTS}/items.jsonl")
        track.log_table(evaluation.cases, f"{ARTIFACTS}/cases.jsonl")
        track.log_dict(confusion, f"{ARTIFACTS}/label_confusion.json")
        track.log_dict(evaluation.costs, f"{ARTIFACTS}/costs.json")
        track.log_text(table, f"{ARTIFACTS}/attribution_table.md")
        track.log_figure(figure, "plots/attribution.png")
        if (out / ".hydra").is_dir():
            track.log_artifact(out / ".hydra", "hydra")
        run_id = track.run_id
    return {**summary, "output_dir": str(out), "mlflow_run_id": run_id, "tracking_uri": tracker.tracking_uri,
            "attribution": evaluation.attribution}
