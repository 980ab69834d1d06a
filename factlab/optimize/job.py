"""One optimisation run: baseline on val/test -> compile on train (val for selection) -> compiled on val/test ->
JSON state -> MLflow. Called by optimize.py; tests call `run(cfg)` directly.

The optimizer never sees test. A run lives in a dir derived from the config hash (factlab/optimize/runs.py), so
rerunning the same command resumes it: GEPA from its checkpoint, every LM call from DSPy's disk cache, MLflow in
the same run.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

logger = logging.getLogger(__name__)

EVAL_SPLITS: tuple[str, ...] = ("val", "test")


def _sweep_id(cfg: DictConfig) -> str | None:
    """`cfg.sweep_id`, else the Hydra multirun's sweep dir name (the same for every job of one -m launch)."""
    if cfg.sweep_id:
        return str(cfg.sweep_id)
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
        return Path(HydraConfig.get().sweep.dir).name
    return None


def _hydra_output_dir() -> Path | None:
    from hydra.core.hydra_config import HydraConfig

    return Path(HydraConfig.get().runtime.output_dir) if HydraConfig.initialized() else None


def _scorer(cfg: DictConfig, cases: list[dict], stage: str):
    """The stage scorer, with corpus retrieval for metrics that take `retrieve=` and evaluate.py's claim matcher for
    metrics that take `match=`; returns (scorer, tags)."""
    from factlab.optimize.scoring import StageScorer

    probe = StageScorer(stage)
    tags: dict[str, str] = {}
    match = None
    if probe.takes_match:
        match, tags["metric.match"] = _claim_match(cfg)
    retrieve_for = None
    if probe.takes_retrieve:
        retrieve_for, tags["metric.retrieve"], error = _corpus_retrieve(cfg, cases, stage)
        if error:
            tags["metric.retrieve_error"] = error
    return StageScorer(stage, retrieve_for=retrieve_for, match=match), tags


def _claim_match(cfg: DictConfig):
    """evaluate.py's claim matcher as a `match(gold, pred)` callable, and how it matches (a run tag)."""
    if not cfg.metric.match.encoder:
        return None, "lexical (metric.match.encoder=false)"
    from hydra.utils import instantiate

    from factlab.evals.job import build_matcher

    matcher = build_matcher(cfg, instantiate(cfg.retrieval.encoder))  # lexical, with a warning, when MiniLM fails
    how = "encoder" if matcher.encode is not None else "lexical (encoder unavailable)"
    return matcher.match, f"{how} >= {matcher.active_threshold}"


def _corpus_retrieve(cfg: DictConfig, cases: list[dict], stage: str):
    """(retrieve_for or None, how the metric retrieves, error text or None)."""
    if not cfg.metric.retrieve.enabled:
        return None, "lexical (metric.retrieve.enabled=false)", None
    try:
        from factlab.optimize.corpus_search import CorpusSearch

        search = CorpusSearch(cases, cfg.retrieval, Path(cfg.cache_dir).parent / "indexes", cfg.metric.retrieve.k)
    except Exception as exc:
        if cfg.metric.retrieve.required:
            raise
        logger.warning("retrieval unavailable for the %s metric, using its lexical stand-in: %s", stage, exc)
        return None, "lexical (retrieval failed)", str(exc)[:250]
    return search.for_example, f"hybrid k={search.k}", None


def _existing_run(tracking_uri: str | None, run_id: str | None) -> str | None:
    """`run_id` if the store still has it live (a deleted run starts a new MLflow run instead of failing)."""
    if tracking_uri is None or run_id is None:
        return None
    import mlflow
    from mlflow.exceptions import MlflowException

    try:
        gone = mlflow.MlflowClient(tracking_uri=tracking_uri).get_run(run_id).info.lifecycle_stage == "deleted"
    except MlflowException:
        gone = True
    if gone:
        logger.warning("MLflow run %s recorded in the run dir is gone from %s; starting a new one", run_id,
                       tracking_uri)
        return None
    return run_id


def _usage(handle, before: dict[str, int] | None = None) -> dict[str, int]:
    """`handle.usage()` plus `real_calls`: history entries that reached the model (a DSPy cache hit has no usage)."""
    now = {**handle.usage(), "real_calls": sum(1 for entry in handle.lm.history if entry.get("usage"))}
    return {k: v - (before or {}).get(k, 0) for k, v in now.items()}


def _autolog(cfg: DictConfig, tracker) -> bool:
    if not (cfg.autolog.enabled and tracker.run_id):
        return False
    import mlflow

    mlflow.dspy.autolog(log_traces=cfg.autolog.log_traces, log_traces_from_compile=cfg.autolog.log_traces,
                        log_traces_from_eval=cfg.autolog.log_traces, log_compiles=cfg.autolog.log_compiles,
                        log_evals=cfg.autolog.log_evals, silent=True)
    return True


def run(cfg: DictConfig) -> dict[str, Any]:
    """Optimise `cfg.stage` with `cfg.optimizer`; returns the scores, counts and where everything went.

    Returns:
        {"val/score_before", "val/score_after", "test/score_before", "test/score_after", "metric_calls",
        "program_path", "run_dir", "resumed", "mlflow_run_id", "wall_s", ...}.
    """
    from hydra.utils import instantiate

    from factlab.data.registry import load_dataset
    from factlab.optimize.examples import stage_splits
    from factlab.optimize.scoring import evaluate
    from factlab.optimize.optimizers import CompileContext, instructions
    from factlab.optimize.report import budget_figure, program_text
    from factlab.tracking.refs import PROGRAM_ARTIFACT_DIR, program_file_name
    from factlab.optimize.runs import fingerprint, prepare_run_dir, record_mlflow_run, recorded_mlflow_run
    from factlab.stages.build import build_program
    from factlab.runtime import configure_lm_cache, prepare_offline_env

    started = time.perf_counter()
    prepare_offline_env()
    resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    stage, optimizer_name = cfg.stage.name, cfg.optimizer.name
    dataset = load_dataset(cfg.dataset)
    print_ = fingerprint(resolved, cfg.fingerprint_ignore, dataset.content_hash)
    run_dir, resumed = prepare_run_dir(cfg.runs_dir, stage, optimizer_name, print_, cfg.resume)
    configure_lm_cache(cfg.cache_dir)
    splits = stage_splits(dataset.cases, stage, cfg.splits, cfg.seed, cfg.max_examples)
    scorer, metric_tags = _scorer(cfg, dataset.cases, stage)
    tracker = instantiate(cfg.tracking)
    sweep = _sweep_id(cfg)
    tags = {"stage": stage, "optimizer": optimizer_name, "student": cfg.student.name,
            "reflector": cfg.reflector.name, "dataset": dataset.name, "run_dir": str(run_dir),
            "config_hash": run_dir.name.rsplit("-", 1)[-1], **metric_tags, **({"sweep_id": sweep} if sweep else {})}
    previous_run = _existing_run(tracker.tracking_uri, recorded_mlflow_run(run_dir, tracker.tracking_uri))
    run_name = cfg.run_name or f"{stage}-{optimizer_name}-{tags['config_hash']}"
    logger.info("%s %s: run dir %s (%s)", stage, optimizer_name, run_dir, "resuming" if resumed else "new")

    with tracker.run(f"optimize/{stage}", run_name=run_name, tags=tags, run_id=previous_run) as track:
        record_mlflow_run(run_dir, tracker.tracking_uri, track.run_id)
        if previous_run is None:  # a resumed MLflow run already has them (and refuses changed values)
            track.log_params({**resolved, "dataset_content_hash": dataset.content_hash,
                              "examples": {name: len(examples) for name, examples in splits.items()}})
        track.set_tags({**tags, "resumed": str(resumed)})
        autologging = _autolog(cfg, track)
        try:
            student = instantiate(cfg.student)
            optimizer = instantiate(cfg.optimizer)
            reflector = instantiate(cfg.reflector) if optimizer.uses_reflector else None
            program = build_program(cfg.stage)
            reports, seconds = {}, {}
            with student.context():
                for split in EVAL_SPLITS:
                    reports[("baseline", split)] = evaluate(program, splits[split], scorer, split, "baseline",
                                                            cfg.eval.num_threads)
                student_before = _usage(student)
                reflector_before = _usage(reflector) if reflector else {}
                compile_start = time.perf_counter()
                result = optimizer.compile(program, splits["train"], splits["val"], scorer,
                                           CompileContext(student, reflector, run_dir, print_))
                seconds["compile"] = time.perf_counter() - compile_start
                compile_usage = {"student": _usage(student, student_before)}
                if reflector:
                    compile_usage["reflector"] = _usage(reflector, reflector_before)
                for split in EVAL_SPLITS:
                    reports[("compiled", split)] = evaluate(result.program, splits[split], scorer, split, "compiled",
                                                            cfg.eval.num_threads)
        finally:
            if autologging:
                import mlflow

                mlflow.dspy.autolog(disable=True)

        program_path = run_dir / PROGRAM_ARTIFACT_DIR / program_file_name(stage)
        program_path.parent.mkdir(parents=True, exist_ok=True)
        result.program.save(str(program_path))  # JSON state, never pickle
        build_program(cfg.stage, compiled=str(program_path))  # it must load back as this stage
        seconds["wall"] = time.perf_counter() - started

        metrics: dict[str, float] = {"optimizer/metric_calls": result.metric_calls,
                                     "time/compile_s": seconds["compile"], "time/wall_s": seconds["wall"]}
        for (label, split), report in reports.items():
            suffix = "before" if label == "baseline" else "after"
            metrics[f"{split}/score_{suffix}"] = report.score
            metrics[f"time/eval_{split}_{suffix}_s"] = report.seconds
            metrics.update({f"{split}/{key}_{suffix}": value for key, value in report.extras.items()})
        for split in EVAL_SPLITS:
            metrics[f"{split}/score"] = reports[("compiled", split)].score
            metrics[f"{split}/delta"] = reports[("compiled", split)].score - reports[("baseline", split)].score
        roles = {"student": student, **({"reflector": reflector} if reflector else {})}
        for role, handle in roles.items():
            metrics.update({f"lm/{role}/{key}": value for key, value in _usage(handle).items()})
            metrics.update({f"lm/{role}/compile_{key}": value for key, value in compile_usage[role].items()})
        metrics.update(result.metrics)
        track.log_metrics(metrics)
        for calls, score in result.curve:
            track.log_metrics({"val/best_score_by_metric_calls": score}, step=int(calls))
        track.set_tags(result.tags)

        track.log_artifact(program_path, PROGRAM_ARTIFACT_DIR)
        track.log_text(program_text(result.program), "program/readable.txt")
        track.log_dict({"before": instructions(program), "after": instructions(result.program)},
                       "program/instructions.json")
        for (label, split), report in reports.items():
            track.log_table(report.rows, f"predictions/{split}_{label}.jsonl")
        if result.candidates:
            track.log_table(result.candidates, f"candidates/{optimizer_name}.jsonl")
        for name, rows in result.tables.items():
            if rows:
                track.log_table(rows, name)
        baseline_val = reports[("baseline", "val")].score
        track.log_figure(budget_figure(result.curve, baseline_val, f"{stage} / {optimizer_name}"),
                         "plots/score_over_budget.png")
        hydra_dir = _hydra_output_dir()
        if hydra_dir is not None and (hydra_dir / ".hydra").is_dir():
            track.log_artifact(hydra_dir / ".hydra", "hydra")
        mlflow_run_id = track.run_id

    summary = {
        "stage": stage, "optimizer": optimizer_name, "run_dir": str(run_dir), "resumed": resumed,
        "program_path": str(program_path), "mlflow_run_id": mlflow_run_id, "sweep_id": sweep,
        "examples": {name: len(examples) for name, examples in splits.items()},
        "instructions_before": instructions(program), "instructions_after": instructions(result.program),
        **metrics,
    }
    logger.info("%s %s: val %.3f -> %.3f, test %.3f -> %.3f, %d metric calls, %.0f s", stage, optimizer_name,
                metrics["val/score_before"], metrics["val/score_after"], metrics["test/score_before"],
                metrics["test/score_after"], result.metric_calls, seconds["wall"])
    return summary
