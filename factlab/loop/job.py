"""The workbench loop (loop.py): evaluate the checker -> attribute every wrong label -> optimize (or train) the
most-blamed stage -> evaluate again with the compiled program (or the trained adapter) -> the next most-blamed stage
-> ..., for `rounds` rounds.

Every step is the real job: evaluate.py's, optimize.py's and train.py's `run(cfg)` on a config composed from
conf/evaluate.yaml, conf/optimize.yaml or conf/train.yaml with the loop's overrides, in this process, one at a time.
A stage whose `action` is `train` (conf/loop.yaml `action`) is trained instead of compiled: the round's evaluation is
reflowed first (its attributed bad cases become that stage's training rows; a row from a held-out case is refused by
the reflow itself, so an evaluation of the test split reflows nothing and the count says so), then the stage's recipe
trains on the loop's dataset plus those rows, and the next evaluation runs the stage on the trained LoRA adapter
(`stage.<name>.lora`). Each finished step is written to
`<loop dir>/state.json` at once (atomically), so rerunning the same command resumes after the last finished step; an
interrupted optimize step resumes from its own run dir, and the LM calls already made come from DSPy's disk cache.
The loop ends with the rounds' table (label accuracy with its interval, the paired gain of every round over the one
before and over the first, the blamed shares) and the stacked chart of blame over every evaluation
(factlab.evals.compare, as scripts/compare_runs.py draws it), in the loop dir and in the loop's MLflow run
(experiment `loop/<name>`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from factlab.loop.report import rounds_figure, rounds_markdown, rounds_rows

logger = logging.getLogger(__name__)

STATE = "state.json"
Job = Callable[[list[str], DictConfig], dict[str, Any]]


def pick_stage(metrics: Mapping[str, float], method: str, stages: Sequence[str],
               exclude: Sequence[str] = ()) -> tuple[str | None, dict[str, int]]:
    """The stage to optimize next: of `stages` (minus `exclude`), the one blamed for most wrong labels by `method`
    (`attr/<method>/<stage>/count`); a tie goes to the earlier stage in `stages` (pipeline order: an upstream error
    reaches more of what follows). None when no candidate is blamed for anything.

    Returns:
        (stage or None, the counts of every candidate).

    >>> m = {"attr/counterfactual/judge/count": 16.0, "attr/counterfactual/extract_claims/count": 2.0,
    ...      "attr/counterfactual/none/count": 23.0}
    >>> pick_stage(m, "counterfactual", ["extract_claims", "judge"])
    ('judge', {'extract_claims': 2, 'judge': 16})
    >>> pick_stage(m, "counterfactual", ["extract_claims", "judge"], exclude=["judge"])[0]
    'extract_claims'
    >>> pick_stage(m, "counterfactual", ["vertical"])[0] is None
    True
    """
    counts = {s: int(metrics.get(f"attr/{method}/{s}/count", 0.0)) for s in stages if s not in set(exclude)}
    best = max(counts, key=lambda s: (counts[s], -list(stages).index(s)), default=None)
    return (best if best is not None and counts[best] > 0 else None), counts


def loop_dir(cfg: DictConfig) -> tuple[Path, dict]:
    """`<out_dir>/<name>-<config hash>` and the fingerprint it is named by: the loop config without tracking,
    out_dir, resume and progress, the dataset's content hash and the hash of factlab's source (the evaluations run
    the whole pipeline, so a loop resumed after a code change would mix rounds scored by two versions of it; a
    changed source starts a new loop dir, where the steps replay from DSPy's cache and the optimize run dirs)."""
    from factlab.data.registry import load_dataset
    from factlab.optimize.runs import config_hash, fingerprint, source_hash
    from factlab.tracking.run import resolved_config

    data = load_dataset(_composed("evaluate", [f"dataset={cfg.data}"], cfg).dataset)
    print_ = fingerprint(resolved_config(cfg), ["tracking", "out_dir", "resume", "progress", "hydra"],
                         data.content_hash, {"source": source_hash("factlab") or "none"})
    return Path(cfg.out_dir) / f"{cfg.name}-{config_hash(print_)}", print_


def _composed(job: str, overrides: Sequence[str], loop: DictConfig) -> DictConfig:
    """conf/<job>.yaml with the overrides, its tracking replaced by the loop's (one store for every step)."""
    from factlab.config import compose_config

    cfg = compose_config(job, list(overrides))
    OmegaConf.update(cfg, "tracking", OmegaConf.to_container(loop.tracking, resolve=True), merge=False)
    return cfg


def evaluate_job(overrides: list[str], loop: DictConfig) -> dict[str, Any]:
    """One evaluate.py run; what the loop keeps of it."""
    from factlab.evals.job import run

    result = run(_composed("evaluate", overrides, loop))
    return {"run_id": result["mlflow_run_id"], "output_dir": result["output_dir"], "metrics": result["metrics"]}


def optimize_job(overrides: list[str], loop: DictConfig) -> dict[str, Any]:
    """One optimize.py run; what the loop keeps of it."""
    from factlab.optimize.job import run

    summary = run(_composed("optimize", overrides, loop))
    return {"run_id": summary["mlflow_run_id"], "program_path": summary["program_path"],
            "run_dir": summary["run_dir"], "optimizer": summary["optimizer"], "examples": summary["examples"],
            "metrics": {k: float(v) for k, v in summary.items() if "/" in k and isinstance(v, int | float)}}


def train_job(overrides: list[str], loop: DictConfig) -> dict[str, Any]:
    """One train.py run; what the loop keeps of it (the adapter it served from, its own test scores)."""
    from factlab.train.job import run

    result = run(_composed("train", overrides, loop))
    if not result.get("adapter"):
        raise ValueError(f"loop: train.py {' '.join(overrides)} wrote no LoRA adapter (a stage's `lora` serves only "
                         "an adapter: keep recipe.peft.enabled=true)")
    return {"run_id": result["run_id"], "adapter": result["adapter"], "recipe": result.get("recipe"),
            "metrics": {k: float(v) for k, v in result.items() if "/" in k and isinstance(v, int | float)}}


def reflow_job(evaluation: Mapping[str, Any], loop: DictConfig, out_dir: Path) -> dict[str, Any]:
    """The round's evaluation reflowed into `out_dir/<stage>/<run id>.jsonl` (factlab.evals.reflow)."""
    from factlab.config import CONF_DIR
    from factlab.evals.reflow import reflow_run

    cfg = _composed("evaluate", [f"dataset={loop.data}", f"reflow.run={evaluation['run_id']}",
                                 f"reflow.out_dir={out_dir.resolve()}"], loop)
    return reflow_run(cfg, CONF_DIR.parent / "prepared")


def action_of(cfg: DictConfig, stage: str) -> str:
    """`optimize` or `train` for `stage` (conf/loop.yaml `action`: per stage, else `default`).

    >>> from omegaconf import OmegaConf
    >>> cfg = OmegaConf.create({"action": {"default": "optimize", "extract_claims": "train"}})
    >>> action_of(cfg, "extract_claims"), action_of(cfg, "judge")
    ('train', 'optimize')
    """
    actions = cfg.get("action") or {}
    action = str(actions[stage] if stage in actions else actions.get("default", "optimize"))
    if action not in ("optimize", "train"):
        raise ValueError(f"loop action.{stage}={action!r}: expected optimize or train")
    return action


def train_overrides(cfg: DictConfig, stage: str, reflowed: str | None) -> list[str]:
    """train.py's overrides for `stage`: the loop's dataset (plus the reflowed rows when there are any), the train
    overrides and the stage's recipe (`train.by_stage`). `common` is not passed: it names the checker's parts
    (e.g. its student), which a recipe sets for itself (`recipe.base_lm`)."""
    by_stage = cfg.train.by_stage
    if stage not in by_stage:
        raise ValueError(f"loop action.{stage}=train: conf/loop.yaml train.by_stage has no recipe for {stage} "
                         f"(it has {', '.join(by_stage)})")
    extra = [f"+dataset.extra={reflowed}"] if reflowed else []
    return [f"dataset={cfg.data}", *extra, f"seed={cfg.seed}", *cfg.train.overrides, *by_stage[stage]]


def evaluate_overrides(cfg: DictConfig, folder: Path, round_: int, programs: Mapping[str, str],
                       adapters: Mapping[str, str] | None = None) -> list[str]:
    """evaluate.py's overrides for round `round_` with the compiled `programs` and trained `adapters` so far."""
    ev = cfg.evaluate
    out = [f"dataset={cfg.data}", f"split={ev.split}", f"seed={cfg.seed}", f"progress={cfg.progress}",
           f"output_dir={(folder / f'round{round_}-evaluate').resolve()}", f"run_name={cfg.name}-round{round_}"]
    if ev.sample_cases is not None:
        out.append(f"sample_cases={int(ev.sample_cases)}")
    out += [f"programs.{stage}={path}" for stage, path in programs.items()]
    trained = [f"stage.{stage}.lora={path}" for stage, path in (adapters or {}).items()]
    return out + list(cfg.common) + list(ev.overrides) + trained  # a trained adapter wins over a common `lora`


def adopted(step: Mapping[str, Any], min_val_gain: float | None) -> bool:
    """Whether an optimize step's program replaces the stage as written: always when `min_val_gain` is None or the step
    has no val scores; else only when it beat the program as written on val (the split the optimizer selected on;
    test is the loop's evaluation split) by more than `min_val_gain`.

    >>> adopted({"metrics": {"val/score_before": 0.586, "val/score_after": 0.586}}, 0.0)
    False
    >>> adopted({"metrics": {"val/score_before": 0.586, "val/score_after": 0.590}}, 0.0)
    True
    >>> adopted({"metrics": {"val/score_before": 0.586, "val/score_after": 0.590}}, 0.01)
    False
    >>> adopted({"metrics": {}}, 0.0)
    True
    """
    metrics = step.get("metrics") or {}
    before, after = metrics.get("val/score_before"), metrics.get("val/score_after")
    if min_val_gain is None or before is None or after is None:
        return True
    return after - before > float(min_val_gain)


def optimize_overrides(cfg: DictConfig, stage: str) -> list[str]:
    """optimize.py's overrides for `stage`: the dataset, the loop's sweep id, the common and per-stage overrides."""
    by_stage = cfg.optimize.by_stage
    specific = by_stage[stage] if stage in by_stage else by_stage.default
    return [f"stage={stage}", f"dataset={cfg.data}", f"seed={cfg.seed}", f"sweep_id=loop-{cfg.name}",
            *cfg.common, *cfg.optimize.overrides, *specific]


class LoopState:
    """The finished steps, in `<folder>/state.json`; refuses a folder written by another config."""

    def __init__(self, folder: Path, print_: dict, resume: bool) -> None:
        from factlab.atomic import read_json

        self.path = folder / STATE
        existing = read_json(self.path, None, "loop state")
        if existing is not None and not resume:
            raise FileExistsError(f"{folder} holds a loop already (resume=false): delete it or change the config")
        if existing is not None and existing.get("fingerprint") != print_:
            raise ValueError(f"{self.path} was written by another loop config; use another name or out_dir")
        self.data = existing or {"fingerprint": print_, "steps": [], "mlflow_run_id": None, "stopped": None}
        folder.mkdir(parents=True, exist_ok=True)

    @property
    def steps(self) -> list[dict]:
        return self.data["steps"]

    def find(self, kind: str, round_: int) -> dict | None:
        return next((s for s in self.steps if s["kind"] == kind and s["round"] == round_), None)

    def add(self, step: dict) -> dict:
        self.steps.append(step)
        self.save()
        return step

    def save(self) -> None:
        from factlab.atomic import write_json

        write_json(self.path, self.data, indent=2)


def run(cfg: DictConfig, evaluate: Job | None = None, optimize: Job | None = None, train: Job | None = None,
        reflow: Callable[[Mapping[str, Any], DictConfig, Path], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Run (or resume) the loop; returns the loop dir, the steps, the rounds' rows and the loop's MLflow run id.

    Args:
        cfg: conf/loop.yaml.
        evaluate, optimize, train: the jobs (default: evaluate.py's, optimize.py's and train.py's, composed in this
            process); tests pass their own with the same signature (overrides, loop config) -> the kept result.
        reflow: (evaluation step, loop config, out dir) -> reflow counts and files (default: `reflow_job`).
    """
    from factlab.runtime import prepare_offline_env

    prepare_offline_env()
    if cfg.blame.method not in ("counterfactual", "first_failure"):
        raise ValueError(f"blame.method={cfg.blame.method!r}: expected counterfactual or first_failure")
    evaluate, optimize = evaluate or evaluate_job, optimize or optimize_job
    train, reflow = train or train_job, reflow or reflow_job
    folder, print_ = loop_dir(cfg)
    state = LoopState(folder, print_, bool(cfg.resume))
    logger.info("loop %s: %s (%d steps done)", cfg.name, folder, len(state.steps))
    programs: dict[str, str] = {}
    adapters: dict[str, str] = {}
    min_gain = cfg.optimize.get("adopt_min_val_gain")
    for round_ in range(int(cfg.rounds) + 1):
        step = state.find("evaluate", round_)
        previous = state.find("evaluate", round_ - 1)
        if (step is None and previous is not None and previous.get("programs") == programs
                and previous.get("adapters", {}) == adapters):
            # The optimize step before this round changed nothing the checker runs: this evaluation would be the last
            # one again (same programs, same cases, same cache), so it is reused rather than rerun (an hour or more).
            logger.info("loop round %d: the programs are round %d's; its evaluation is reused", round_, round_ - 1)
            step = state.add({**previous, "round": round_, "seconds": 0.0,
                              "reused_from": previous.get("reused_from", previous["round"])})
        if step is None:
            overrides = evaluate_overrides(cfg, folder, round_, programs, adapters)
            logger.info("loop round %d: evaluate %s", round_, " ".join(overrides))
            started = time.perf_counter()
            result = evaluate(overrides, cfg)
            step = state.add({"kind": "evaluate", "round": round_, "split": str(cfg.evaluate.split),
                              "programs": dict(programs), "adapters": dict(adapters), "overrides": overrides,
                              "seconds": time.perf_counter() - started, **result})
        if round_ == int(cfg.rounds):
            break
        done = [s["stage"] for s in state.steps if s["kind"] in ("optimize", "train")] if cfg.blame.once else []
        chosen = state.find("optimize", round_ + 1) or state.find("train", round_ + 1)
        if chosen is None:
            stage, counts = pick_stage(step["metrics"], cfg.blame.method, list(cfg.blame.stages), done)
            if stage is None:
                state.data["stopped"] = (f"after round {round_}: no stage of {list(cfg.blame.stages)} (minus "
                                         f"{done}) is blamed by {cfg.blame.method} ({counts})")
                state.save()
                logger.warning("loop: %s", state.data["stopped"])
                break
            started = time.perf_counter()
            if action_of(cfg, stage) == "train":
                reflowed = reflow(step, cfg, folder / "reflow")
                rows = sum(int(c.get("exported", 0)) for c in reflowed.get("counts", {}).values())
                overrides = train_overrides(cfg, stage, str((folder / "reflow").resolve()) if rows else None)
                logger.info("loop round %d: train %s (blamed %s; %d reflowed rows), %s", round_ + 1, stage, counts,
                            rows, " ".join(overrides))
                result = train(overrides, cfg)
                chosen = state.add({"kind": "train", "round": round_ + 1, "stage": stage, "blame_counts": counts,
                                    "reflow": reflowed, "overrides": overrides,
                                    "seconds": time.perf_counter() - started, **result})
            else:
                overrides = optimize_overrides(cfg, stage)
                logger.info("loop round %d: optimize %s (blamed %s), %s", round_ + 1, stage, counts,
                            " ".join(overrides))
                result = optimize(overrides, cfg)
                chosen = state.add({"kind": "optimize", "round": round_ + 1, "stage": stage, "blame_counts": counts,
                                    "overrides": overrides, "seconds": time.perf_counter() - started, **result})
        if chosen["kind"] == "train":  # the next evaluation measures the adapter (its paired gain is the test)
            adapters[chosen["stage"]] = chosen["adapter"]
        elif adopted(chosen, min_gain):
            programs[chosen["stage"]] = chosen["program_path"]
        else:
            m = chosen.get("metrics") or {}
            logger.warning("loop round %d: %s's compiled program is not adopted: val %.3f -> %.3f (gain <= %s); "
                           "the stage stays as written", round_ + 1, chosen["stage"], m["val/score_before"],
                           m["val/score_after"], min_gain)
    return _report(cfg, folder, state)


def _report(cfg: DictConfig, folder: Path, state: LoopState) -> dict[str, Any]:
    """The rounds' table and chart in the loop dir, then in the loop's MLflow run (reopened on a rerun)."""
    from hydra.utils import instantiate

    from factlab.atomic import write_text
    from factlab.tracking.run import tracked_run

    boot = cfg.bootstrap
    rows = rounds_rows(state.steps, cfg.blame.method, boot.samples, boot.seed, boot.confidence)
    table = rounds_markdown(rows, cfg.blame.method)
    if state.data.get("stopped"):
        table += f"\n\nstopped early: {state.data['stopped']}"
    write_text(folder / "rounds.md", table + "\n")
    figure = rounds_figure(state.steps, f"loop {cfg.name}: wrong labels by blamed stage, per evaluation")
    figure.savefig(folder / "rounds.png")
    tracker = instantiate(cfg.tracking)
    tags = {"kind": "loop", "dataset": str(cfg.data), "loop_dir": str(folder),
            "evaluations": ",".join(s["run_id"] or "" for s in state.steps if s["kind"] == "evaluate"),
            "optimized": ",".join(s["stage"] for s in state.steps if s["kind"] == "optimize"),
            "trained": ",".join(s["stage"] for s in state.steps if s["kind"] == "train")}
    with tracked_run(cfg, f"loop/{cfg.name}", run_name=cfg.name, tags=tags, run_id=state.data["mlflow_run_id"],
                     tracker=tracker) as track:
        state.data["mlflow_run_id"] = track.run_id
        state.save()
        track.set_tags(tags)
        for row in rows:
            track.log_metrics({k: v for k, v in row.items() if isinstance(v, float)}, step=row["round"])
        track.log_text(table, "loop/rounds.md")
        track.log_figure(figure, "loop/rounds.png")
        track.log_dict(state.data, "loop/state.json")
    return {"loop_dir": str(folder), "steps": state.steps, "rows": rows, "table": table,
            "stopped": state.data.get("stopped"), "mlflow_run_id": state.data["mlflow_run_id"]}
