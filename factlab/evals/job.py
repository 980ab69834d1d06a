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
    """The evaluated cases: the split of `cfg.split` (same fractions / seed as prepare_data), then `case_ids`, then a
    seeded sample of `sample_cases` (kept in order), then the first `max_cases`."""
    from factlab.data.cases import SPLITS
    from factlab.data.splits import seeded_sample, split_cases

    if cfg.split not in SPLITS:
        raise ValueError(f"split={cfg.split!r}: expected one of {', '.join(SPLITS)}")
    chosen = split_cases(cases, cfg.splits, cfg.seed)[cfg.split]
    if cfg.case_ids is not None:
        wanted = [str(c) for c in cfg.case_ids]
        unknown = [c for c in wanted if c not in {case["case_id"] for case in chosen}]
        if unknown:
            raise ValueError(f"case_ids: {unknown} are not in the {cfg.split} split of dataset {cfg.dataset.name!r}")
        chosen = [case for case in chosen if case["case_id"] in set(wanted)]
    if cfg.get("sample_cases") is not None:
        chosen = seeded_sample(chosen, int(cfg.sample_cases), cfg.seed)
    if cfg.max_cases is not None:
        chosen = chosen[: int(cfg.max_cases)]
    if not chosen:
        raise ValueError(f"dataset {cfg.dataset.name!r} has no case in split {cfg.split!r} (splits {dict(cfg.splits)},"
                         f" case_ids {cfg.case_ids}, sample_cases {cfg.get('sample_cases')},"
                         f" max_cases {cfg.max_cases})")
    return chosen


def default_run_name(cfg: DictConfig) -> str:
    """<dataset>-<split>[-<checker>]-<student> plus the compiled stages (`+judge`); fast names no student."""
    from factlab.checkers.build import checker_name

    compiled = [stage for stage, ref in cfg.programs.items() if ref is not None]
    checker = checker_name(cfg)
    head = [cfg.dataset.name, cfg.split] + ([checker] if checker != "professional" else []) + (
        [cfg.student.name] if checker != "fast" else [])  # the fast checker runs no student LM
    return "-".join(head + [f"+{s}" for s in compiled])


def run(cfg: DictConfig) -> dict[str, Any]:
    """Evaluate `cfg.dataset`'s `cfg.split` with the configured pipeline; returns metrics and where things went."""
    from factlab.checkers.build import checker_name
    from factlab.data.registry import load_dataset
    from factlab.runtime import configure_lm_cache, prepare_offline_env
    from factlab.tracking.run import tracked_run

    started = time.perf_counter()
    prepare_offline_env()
    configure_lm_cache(cfg.lm_cache_dir)
    dataset = load_dataset(cfg.dataset)
    cases = select_cases(cfg, dataset.cases)
    tags = {"dataset": dataset.name, "split": cfg.split, "student": cfg.student.name, "kind": "evaluate",
            "checker": checker_name(cfg),
            "compiled": ",".join(s for s, ref in cfg.programs.items() if ref is not None) or "none"}
    params = {"dataset_content_hash": dataset.content_hash, "n_cases": len(cases)}
    with tracked_run(cfg, f"evaluate/{dataset.name}", run_name=cfg.run_name or default_run_name(cfg), tags=tags,
                     params=params) as track:
        evaluation, sources = _evaluate(cfg, cases, track.tracking_uri)
        metrics, intervals_of = _metrics(cfg, evaluation)
        metrics["time/wall_s"] = time.perf_counter() - started
        summary, figure, tables = _write(cfg, dataset.name, cases, evaluation, metrics, intervals_of)
        _log(track, cfg, cases, sources, evaluation, summary, figure, tables)
        run_id = track.run_id
    return {**summary, "output_dir": str(Path(cfg.output_dir)), "mlflow_run_id": run_id,
            "tracking_uri": track.tracking_uri, "attribution": evaluation.attribution}


def _evaluate(cfg: DictConfig, cases: list[dict], store: str | None):
    """Build the pipeline over the cases' sources and evaluate every case (scores, attribution, costs)."""
    from hydra.utils import instantiate

    from factlab.checkers.build import build_checker
    from factlab.evals.corpus import corpus_folder
    from factlab.evals.evaluation import EvalSettings, evaluate_cases
    from factlab.matching.claims import usable_encode

    sources = cfg.sources or str(corpus_folder(cases, cfg.dataset, Path(cfg.cache_dir) / "eval_corpus"))
    pipeline = build_checker(cfg, retriever=OmegaConf.merge(cfg.retriever, {"sources": sources}))
    retriever = pipeline.retriever
    for issue in retriever.issues:
        logger.warning("source skipped: %s: %s", issue.path, issue.reason)
    settings = EvalSettings(k=cfg.k, thresholds=dict(cfg.attribution.thresholds),
                            counterfactual_stages=list(cfg.attribution.counterfactual.stages),
                            judge_given_gold=cfg.judge_given_gold, progress=cfg.progress)
    matcher = instantiate(cfg.matcher, encode=usable_encode(retriever.encoder))
    return evaluate_cases(pipeline, cases, matcher, settings, retriever.index.sources), sources


def _metrics(cfg: DictConfig, evaluation) -> tuple[dict[str, float], dict]:
    """`<split>/<stage metric>` with bootstrap intervals, attribution shares and costs; plus the raw stage values."""
    from factlab.evals.scores import HEADLINE, attribution_metrics, stage_metrics
    from factlab.metrics import bootstrap_ci

    split = cfg.split
    stage_values = stage_metrics(evaluation.cases)
    metrics: dict[str, float] = {f"{split}/{k}": v for k, v in stage_values.items() if v is not None}
    intervals = bootstrap_ci(evaluation.cases, stage_metrics, HEADLINE, cfg.bootstrap.samples, cfg.bootstrap.seed,
                             cfg.bootstrap.confidence)
    for name, (low, high) in intervals.items():
        metrics[f"{split}/{name}_ci_low"], metrics[f"{split}/{name}_ci_high"] = low, high
    metrics.update(attribution_metrics(evaluation.attribution, int(stage_values["items"])))
    for phase, costs in evaluation.costs.items():
        for stage, values in costs.items():
            metrics.update({f"cost/{phase}/{stage}/{key}": float(v) for key, v in values.items()})
    broken = {k: v for k, v in stage_values.items()
              if k.startswith("errors/") and k.endswith(("connection", "timeout"))}
    if broken:
        logger.warning("LM calls failed for infrastructure reasons %s: their claims count as errors; check the LM "
                       "server (student.*) and rerun (answered calls are cached)", broken)
    return metrics, stage_values


def _write(cfg: DictConfig, dataset: str, cases: list[dict], evaluation, metrics: dict[str, float],
           stage_values: dict) -> tuple[dict, Any, dict]:
    """items / attribution / cases JSONL, summary.json and attribution.png in `cfg.output_dir`."""
    from factlab.atomic import write_json, write_text
    from factlab.evals.report import attribution_figure, attribution_table
    from factlab.evals.scores import label_confusion

    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    items = [{"case_id": c["case_id"], **item} for c in evaluation.cases for item in c["items"]]
    tables = {"items.jsonl": items, "attribution.jsonl": evaluation.attribution, "cases.jsonl": evaluation.cases}
    for name, rows in tables.items():
        write_text(out / name, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows))
    attribution = {k: v for k, v in metrics.items() if k.startswith("attr/")}
    summary = {"metrics": metrics, "confusion": label_confusion(evaluation.cases), "costs": evaluation.costs,
               "cases": [c["case_id"] for c in cases], "attribution_table": attribution_table(attribution)}
    write_json(out / "summary.json", summary, indent=2)
    figure = attribution_figure(attribution, f"{dataset} {cfg.split}: bad items per blamed stage "
                                             f"({len(evaluation.attribution)} of {int(stage_values['items'])})")
    figure.savefig(out / "attribution.png")
    return summary, figure, tables


def _log(track, cfg: DictConfig, cases: list[dict], sources: str, evaluation, summary: dict, figure,
         tables: dict) -> None:
    from factlab.tracking.run import resolved_config

    track.log_metrics(summary["metrics"])
    track.log_dict(resolved_config(cfg), f"{ARTIFACTS}/config.json")
    track.log_dict({"case_ids": [c["case_id"] for c in cases], "sources": sources}, f"{ARTIFACTS}/cases.json")
    for name, rows in tables.items():
        track.log_table(rows, f"{ARTIFACTS}/{name}")
    track.log_dict(summary["confusion"], f"{ARTIFACTS}/label_confusion.json")
    track.log_dict(evaluation.costs, f"{ARTIFACTS}/costs.json")
    track.log_text(summary["attribution_table"], f"{ARTIFACTS}/attribution_table.md")
    track.log_figure(figure, "plots/attribution.png")
