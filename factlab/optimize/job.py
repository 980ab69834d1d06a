"""One optimisation run: baseline on val/test -> compile on train (val for selection) -> compiled on val/test ->
JSON state -> MLflow. Called by optimize.py; tests call `run(cfg)` directly.

The optimizer never sees test. A run lives in a dir derived from the config hash (factlab/optimize/runs.py), so
rerunning the same command resumes it: GEPA from its checkpoint, every LM call from DSPy's disk cache, MLflow in
the same run.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from factlab.optimize.sweep import interval_metrics

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

    from factlab.matching.claims import usable_encode

    # lexical, with a warning, when MiniLM fails
    matcher = instantiate(cfg.matcher, encode=usable_encode(instantiate(cfg.retrieval.encoder)))
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


def dataset_table(examples: list) -> dict[str, list]:
    """DSPy examples as the table mlflow.dspy.autolog writes ({"columns": [...], "data": [[...], ...]})."""
    columns = list(dict.fromkeys(key for example in examples for key in example.keys()))
    return {"columns": columns, "data": [[example.get(key) for key in columns] for example in examples]}


def _log_datasets(track, splits: dict) -> None:
    """trainset.json / valset.json, each split once. mlflow.dspy.autolog logs them at every compile() it sees, with
    log_table, which appends; MIPROv2 and bootstrap random search compile inner BootstrapFewShot optimizers, so
    the autologged trainset held the train split 4 times (488 rows for 122 examples). This overwrites both."""
    for name, split in (("trainset.json", "train"), ("valset.json", "val")):
        track.log_dict(dataset_table(splits[split]), name)


def run(cfg: DictConfig) -> dict[str, Any]:
    """Optimise `cfg.stage` with `cfg.optimizer`; returns the scores, counts and where everything went.

    Returns:
        {"val/score_before", "val/score_after", "test/score_before", "test/score_after", "metric_calls",
        "program_path", "run_dir", "resumed", "mlflow_run_id", "wall_s", ...}.
    """
    from hydra.utils import instantiate

    from factlab.data.registry import load_dataset
    from factlab.optimize.examples import stage_splits
    from factlab.optimize.runs import (
        examples_hash,
        fingerprint,
        prepare_run_dir,
        record_mlflow_run,
        recorded_mlflow_run,
        source_hash,
    )
    from factlab.runtime import configure_lm_cache, prepare_offline_env
    from factlab.tracking.run import resolved_config, tracked_run

    started = time.perf_counter()
    prepare_offline_env()
    resolved = resolved_config(cfg)
    stage, optimizer_name = cfg.stage.name, cfg.optimizer.name
    dataset = load_dataset(cfg.dataset)
    splits = stage_splits(dataset.cases, stage, cfg.splits, cfg.seed, cfg.max_examples, cfg.vertical)
    code = source_hash(f"factlab.programs.{stage}")
    print_ = fingerprint(resolved, cfg.fingerprint_ignore, dataset.content_hash,
                         {"examples": examples_hash(splits), **({"stage_source": code} if code else {})})
    run_dir, resumed = prepare_run_dir(cfg.runs_dir, stage, optimizer_name, print_, cfg.resume)
    configure_lm_cache(cfg.cache_dir)
    scorer, metric_tags = _scorer(cfg, dataset.cases, stage)
    tracker = instantiate(cfg.tracking)
    sweep = _sweep_id(cfg)
    tags = {"stage": stage, "optimizer": optimizer_name, "student": cfg.student.name,
            "reflector": cfg.reflector.name, "dataset": dataset.name, "run_dir": str(run_dir),
            "config_hash": run_dir.name.rsplit("-", 1)[-1], **metric_tags, **({"sweep_id": sweep} if sweep else {}),
            **({"vertical": cfg.vertical} if cfg.vertical else {}),
            **({"backend": cfg.stage.backend} if cfg.stage.backend != "program" else {}),
            **({"lora": Path(str(cfg.stage.lora)).name} if cfg.stage.get("lora") else {})}
    previous_run = _existing_run(tracker.tracking_uri, recorded_mlflow_run(run_dir, tracker.tracking_uri))
    run_name = cfg.run_name or f"{stage}-{optimizer_name}-{tags['config_hash']}"
    logger.info("%s %s: run dir %s (%s)", stage, optimizer_name, run_dir, "resuming" if resumed else "new")
    params = {"dataset_content_hash": dataset.content_hash,
              "examples": {name: len(examples) for name, examples in splits.items()}}

    with tracked_run(cfg, f"optimize/{stage}", run_name=run_name, tags=tags, run_id=previous_run, params=params,
                     tracker=tracker) as track:
        record_mlflow_run(run_dir, tracker.tracking_uri, track.run_id)
        track.set_tags({**tags, "resumed": str(resumed)})
        compiled = _compile(cfg, track, splits, scorer, run_dir, print_)
        program_path = _save_program(cfg, compiled.result.program, run_dir)
        metrics = _metrics(compiled, time.perf_counter() - started)
        _log(track, cfg, compiled, metrics, program_path)
        mlflow_run_id = track.run_id

    summary = {
        "stage": stage, "optimizer": optimizer_name, "run_dir": str(run_dir), "resumed": resumed,
        "program_path": str(program_path), "mlflow_run_id": mlflow_run_id, "sweep_id": sweep,
        "examples": {name: len(examples) for name, examples in splits.items()},
        "instructions_before": compiled.instructions_before, "instructions_after": compiled.instructions_after,
        **metrics,
    }
    logger.info("%s %s: val %.3f -> %.3f, test %.3f -> %.3f, %d metric calls, %.0f s", stage, optimizer_name,
                metrics["val/score_before"], metrics["val/score_after"], metrics["test/score_before"],
                metrics["test/score_after"], compiled.result.metric_calls, metrics["time/wall_s"])
    return summary


@dataclass
class Compiled:
    """What compiling produced: the optimizer's result, the four evaluation reports and the LM spend."""

    result: Any  # CompileResult
    reports: dict[tuple[str, str], Any]  # (baseline | compiled, split) -> EvalReport
    handles: dict[str, Any]  # role -> LM handle (student, reflector)
    compile_usage: dict[str, dict[str, int]]
    compile_seconds: float
    instructions_before: dict[str, str]
    instructions_after: dict[str, str]


def _compile(cfg: DictConfig, track, splits: dict, scorer, run_dir: Path, print_: dict) -> Compiled:
    """Baseline on val / test, compile on train (val for selection), the compiled program on val / test."""
    from hydra.utils import instantiate

    from factlab.optimize.optimizers import CompileContext, instructions
    from factlab.optimize.scoring import evaluate
    from factlab.stages.build import build_program

    autologging = _autolog(cfg, track)
    try:
        student = instantiate(cfg.student)
        if cfg.stage.backend == "program" and cfg.stage.get("lora"):  # its own adapter, as the checker serves it
            from factlab.pipeline.meter import stage_student

            student = stage_student(student, str(cfg.stage.lora), str(cfg.stage.name))
        optimizer = instantiate(cfg.optimizer)
        reflector = instantiate(cfg.reflector) if optimizer.uses_reflector else None
        program = build_program(cfg.stage)
        reports = {}
        with student.context():
            for split in EVAL_SPLITS:
                reports[("baseline", split)] = evaluate(program, splits[split], scorer, split, "baseline",
                                                        cfg.eval.num_threads, student.breaker)
            student_before = _usage(student)
            reflector_before = _usage(reflector) if reflector else {}
            start = time.perf_counter()
            result = optimizer.compile(program, splits["train"], splits["val"], scorer,
                                       CompileContext(student, reflector, run_dir, print_))
            seconds = time.perf_counter() - start
            if autologging:
                _log_datasets(track, splits)
            usage = {"student": _usage(student, student_before)}
            if reflector:
                usage["reflector"] = _usage(reflector, reflector_before)
            for split in EVAL_SPLITS:
                reports[("compiled", split)] = evaluate(result.program, splits[split], scorer, split, "compiled",
                                                        cfg.eval.num_threads, student.breaker)
    finally:
        if autologging:
            import mlflow

            mlflow.dspy.autolog(disable=True)
    handles = {"student": student, **({"reflector": reflector} if reflector else {})}
    return Compiled(result, reports, handles, usage, seconds, instructions(program), instructions(result.program))


def _save_program(cfg: DictConfig, program, run_dir: Path) -> Path:
    """The compiled program as JSON state (never pickle) in the run dir; it must load back as this stage."""
    from factlab.stages.build import build_program
    from factlab.tracking.refs import PROGRAM_ARTIFACT_DIR, program_file_name

    path = run_dir / PROGRAM_ARTIFACT_DIR / program_file_name(cfg.stage.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    program.save(str(path))
    build_program(cfg.stage, compiled=str(path))
    return path


def _metrics(compiled: Compiled, wall_s: float) -> dict[str, float]:
    """Scores before / after per split, deltas, the optimizer's spend and the LM usage per role."""
    result = compiled.result
    metrics: dict[str, float] = {"optimizer/metric_calls": result.metric_calls,
                                 "time/compile_s": compiled.compile_seconds, "time/wall_s": wall_s}
    for (label, split), report in compiled.reports.items():
        suffix = "before" if label == "baseline" else "after"
        metrics[f"{split}/score_{suffix}"] = report.score
        metrics[f"time/eval_{split}_{suffix}_s"] = report.seconds
        metrics.update({f"{split}/{key}_{suffix}": value for key, value in report.extras.items()})
    for split in EVAL_SPLITS:
        after, before = compiled.reports[("compiled", split)].score, compiled.reports[("baseline", split)].score
        metrics[f"{split}/score"], metrics[f"{split}/delta"] = after, after - before
    metrics.update(interval_metrics({key: report.rows for key, report in compiled.reports.items()}, EVAL_SPLITS))
    for role, handle in compiled.handles.items():
        metrics.update({f"lm/{role}/{key}": value for key, value in _usage(handle).items()})
        metrics.update({f"lm/{role}/compile_{key}": value for key, value in compiled.compile_usage[role].items()})
    metrics.update(result.metrics)
    return metrics


def _log(track, cfg: DictConfig, compiled: Compiled, metrics: dict[str, float], program_path: Path) -> None:
    """Metrics, the budget curve, the program (JSON + readable), predictions, candidates and the budget plot."""
    from factlab.optimize.report import budget_figure, program_text
    from factlab.tracking.refs import PROGRAM_ARTIFACT_DIR

    result, stage = compiled.result, cfg.stage.name
    track.log_metrics(metrics)
    for calls, score in result.curve:
        track.log_metrics({"val/best_score_by_metric_calls": score}, step=int(calls))
    track.set_tags(result.tags)
    track.log_artifact(program_path, PROGRAM_ARTIFACT_DIR)
    track.log_text(program_text(result.program), "program/readable.txt")
    track.log_dict({"before": compiled.instructions_before, "after": compiled.instructions_after},
                   "program/instructions.json")
    for (label, split), report in compiled.reports.items():
        track.log_table(report.rows, f"predictions/{split}_{label}.jsonl")
    if result.candidates:
        track.log_table(result.candidates, f"candidates/{cfg.optimizer.name}.jsonl")
    for name, rows in result.tables.items():
        if rows:
            track.log_table(rows, name)
    baseline_val = compiled.reports[("baseline", "val")].score
    track.log_figure(budget_figure(result.curve, baseline_val, f"{stage} / {cfg.optimizer.name}"),
                     "plots/score_over_budget.png")
