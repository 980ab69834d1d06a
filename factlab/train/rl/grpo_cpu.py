"""`python train.py recipe=grpo_search_cpu`: the CPU path of the search-checker RL, through TRL's GRPOTrainer.

    python train.py recipe=grpo_search_cpu                              # Qwen2.5-Coder-0.5B + LoRA, 5 steps
    python train.py recipe=grpo_search_cpu recipe.max_steps=2 tracking=off

The same VERL parquet rows (factlab/train/rl/data.py), the same `search` tool over the same retrieval service
(factlab/train/rl/retrieval.py) and the same reward (`factlab.train.rl.reward.compute_score`) as recipe=search_r1;
TRL runs the multi-turn tool calls itself (`environment_factory`: one SearchEnvironment per rollout). Reward per
step goes to the job's tracker (MLflow: `train/reward`, `train/rewards/verl_reward/mean`, ...).

The job's parts, one module each: the search environment (factlab/train/rl/environment.py), the reward functions
(factlab/train/rl/trl_rewards.py), the trainer (factlab/train/rl/grpo_trainer.py), the held-out rollouts
(factlab/train/rl/rollouts.py) and the curves (factlab/train/rl/plots.py); this module runs them as one job.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from omegaconf import DictConfig

from factlab.atomic import write_json
from factlab.train.job import TrainJob
from factlab.train.rl.grpo_trainer import grpo_config, load_rows, train_grpo
from factlab.train.rl.plots import curves_figure
from factlab.train.rl.rollouts import RolloutLog, held_out_table
from factlab.train.rl.trl_rewards import CURVES, component_reward, verl_reward

logger = logging.getLogger(__name__)


def grpo_search_cpu(job: TrainJob, stage: DictConfig, name: str, headline: str, base_lm: DictConfig,
                    retrieval: DictConfig, base_model: str | None, multi_hop_only: bool, max_rows: Mapping, topk: int,
                    max_steps: int, batch_size: int, num_generations: int, max_completion_length: int,
                    max_tool_calls: int, learning_rate: float, temperature: float, beta: float, peft: Mapping,
                    reward: Mapping, bf16: bool, business: str, curriculum: Mapping | None = None,
                    eval_before: bool = False, warm_start: Mapping | None = None, save_every: int = 0,
                    curve_window: int = 10, eval_generations: int | None = None, row_sample: str = "seeded") -> dict:
    """Prepare the RL rows, serve retrieval, run GRPO steps with LoRA, report the test reward.

    Args:
        curriculum: `order` (factlab/train/rl/curriculum.py ORDERS; `none` = shuffled rows as written).
        eval_before: evaluate the untrained policy on the test rows too (`test_before/*`).
        warm_start: `steps` (0 = none), `learning_rate`, `batch_size`: LoRA SFT on tool-calling traces of the train
            rows first (factlab/train/rl/warm_start.py); GRPO then starts from the merged weights.
        save_every: a GRPO checkpoint every this many steps; rerunning the same config resumes from the last one
            written whole (`resume=true`), the "before" evaluation kept beside it; 0 = no checkpoints.
        curve_window: the moving average of the per-step curves (`rl_curves.png`).
        eval_generations: rollouts per held-out row, before and after (None = `num_generations`).
        row_sample: which rows `max_rows` keeps: `seeded` (a seeded sample of the split) or `first` (its first rows,
            as before 2026-12-05: the first 32 bundled train rows are all English).

    Returns:
        `test/reward` (mean reward of the trained policy on the test rows, the headline), the per-step train rewards
        (`train/reward_curve`), the verdict accuracy and search-call rate per step, and `model_uri` (the LoRA adapter
        folder).
    """
    from factlab.train.rl.retrieval import RetrievalService
    from factlab.train.rl.setup import base_model_folder, job_retrievers, write_job_data
    from factlab.train.trainer_support import TrackerCallback

    manifest = write_job_data(job, multi_hop_only, max_rows, row_sample)
    model_path = base_model_folder(base_model, base_lm)
    retrievers = job_retrievers(manifest, retrieval, job.work_dir)
    train_rows = load_rows(manifest["files"]["train"])
    if warm_start and int(warm_start.get("steps") or 0) > 0:
        model_path = warm_started(job, model_path, train_rows, retrievers, topk, warm_start, peft)
    order = str((curriculum or {}).get("order", "none"))
    if order != "none":
        train_rows = _curriculum_ordered(job, train_rows, retrievers, topk, order)
    test_file = manifest["files"].get("test") or manifest["files"].get("val")
    test_rows = load_rows(test_file) if test_file else None
    config = grpo_config(job.work_dir / "trl", max_steps, batch_size, num_generations, max_completion_length,
                         max_tool_calls, learning_rate, temperature, beta, bf16, job.seed, shuffle=order == "none",
                         reward_weights=[1.0] + [0.0] * len(CURVES), save_every=save_every,
                         eval_generations=eval_generations)
    resume_from = _resume_point(job)
    job.tracker.log_params({"rl/corpus": manifest["corpus"], "rl/model_path": str(model_path),
                            **{f"rl/{split}_rows": n for split, n in manifest["rows"].items()}})
    log = RolloutLog()
    with RetrievalService(retrievers, default_k=topk) as service:
        trainer, metrics, before = train_grpo(
            model_path, train_rows, test_rows, service.url, topk, config, peft,
            _reward_functions(reward["format_weight"], reward["recall_weight"], business, log),
            [TrackerCallback(job.tracker)], eval_before=eval_before, resume_from=resume_from,
            before_file=job.work_dir / "test_before.json", log=log)
    held_out = log.summary(seed=job.seed)
    write_json(job.work_dir / "held_out.json", held_out)
    logger.info("held-out rollouts:\n%s", held_out_table(held_out))
    adapter_dir = job.work_dir / "model"
    trainer.save_model(str(adapter_dir))
    test_reward = float(metrics.get("eval_reward", math.nan))
    summary = _held_out_metrics(metrics, before, held_out)
    job.tracker.log_metrics({headline: test_reward, **summary})
    curve, per_step = _step_curves(trainer.state.log_history)
    job.tracker.log_dict({"train_reward_per_step": curve, **{f"train_{k}_per_step": v for k, v in per_step.items()},
                          "test": metrics, "test_before": before, "held_out": held_out}, "grpo_rewards.json")
    _plot_curves(job, name, curve, per_step, curve_window, before, metrics)
    return {"recipe": name, "headline": test_reward, headline: test_reward, **summary, "train/reward_curve": curve,
            "train/verdict_curve": per_step["verdict"], "train/search_rate_curve": per_step["searched"],
            "train/answer_rate_curve": per_step["answered"],
            "model_uri": str(adapter_dir.resolve())}


def warm_started(job: TrainJob, model_path: Path, train_rows, retrievers: Mapping, topk: int, settings: Mapping,
                 peft: Mapping) -> Path:
    """The SFT warm start on the train rows' tool-calling traces; returns the merged model folder."""
    from factlab.train.rl.retrieval import search_hits
    from factlab.train.rl.warm_start import trace_examples, warm_start

    examples = trace_examples([dict(row) for row in train_rows],
                              lambda query, corpus: search_hits(retrievers[corpus], query, topk))
    merged = warm_start(model_path, examples, job.work_dir / "warm_start", int(settings["steps"]),
                        float(settings["learning_rate"]), int(settings["batch_size"]), peft, job.seed,
                        max_length=int(settings.get("max_length", 1024)))
    meta = json.loads((merged / "warm_start.json").read_text())
    job.tracker.log_params({"rl/warm_start_steps": meta["steps"], "rl/warm_start_examples": meta["examples"]})
    for step, loss in enumerate(meta["loss"], start=1):
        job.tracker.log_metrics({"warm_start/loss": loss}, step=step)
    return merged


def _curriculum_ordered(job: TrainJob, train_rows, retrievers: Mapping, topk: int, order: str):
    """The train rows in the curriculum's `order` (factlab/train/rl/curriculum.py ORDERS), its levels logged."""
    import datasets
    from factlab.train.rl.curriculum import order_rows, retriever_search

    ordered, levels = order_rows([dict(row) for row in train_rows], retriever_search(retrievers), topk, order,
                                 seed=job.seed)
    train_rows = datasets.Dataset.from_list(ordered)
    job.tracker.log_params({"rl/curriculum": order, **{f"rl/curriculum_{k}": n for k, n in levels.items()}})
    logger.info("curriculum %s: %s, %d train rows", order, levels, len(ordered))
    return train_rows


def _resume_point(job: TrainJob) -> str | None:
    """The GRPO checkpoint an interrupted run of this config left written whole (`resume=true`), logged; else None."""
    from factlab.train.trainer_support import resumable_checkpoint

    resume_from = resumable_checkpoint(job.work_dir / "trl", job.resume)
    if resume_from:
        logger.info("GRPO resumes from %s", resume_from)
        job.tracker.log_params({"rl/resumed_from": Path(resume_from).name})
    return resume_from


def _reward_functions(format_weight: float, recall_weight: float, business: str, log: RolloutLog) -> list[Callable]:
    """The reward GRPO trains on (its scored rollouts go to `log`), then one weight-0 function per part of `CURVES`."""
    weights = (format_weight, recall_weight, business)
    return ([verl_reward(*weights, log=log)]
            + [component_reward(part, RolloutLog.PARTS[part], *weights) for part in CURVES])


def _held_out_metrics(metrics: Mapping, before: Mapping, held_out: Mapping) -> dict:
    """The test metrics the job logs: each curve's mean after (`test/*`) and before training (`test_before/*`), and
    per part of `RolloutLog.PARTS` the intervals of `held_out` (`*_low`, `*_high`) and the paired gain.

    >>> _held_out_metrics({"eval_rewards/verdict/mean": 0.5}, {}, {})
    {'test/verdict': 0.5}
    >>> gain = {"rows": 2, "reward": {"mean": 0.125, "interval": (0, 1)}}
    >>> _held_out_metrics({}, {"eval_reward": 0.25}, {"gain": gain})
    {'test_before/reward': 0.25, 'test_gain/reward_low': 0, 'test_gain/reward_high': 1, 'test_gain/reward': 0.125}
    """
    summary = {f"test/{name}": float(metrics[f"eval_rewards/{name}/mean"]) for name in CURVES
               if f"eval_rewards/{name}/mean" in metrics}
    summary.update({f"test_before/{name}": float(before[key]) for name, key in
                    [("reward", "eval_reward")] + [(name, f"eval_rewards/{name}/mean") for name in CURVES]
                    if key in before})
    for phase, prefix in (("after", "test"), ("before", "test_before"), ("gain", "test_gain")):
        for part in RolloutLog.PARTS:
            interval = (held_out.get(phase) or {}).get(part, {}).get("interval")
            if interval:
                summary[f"{prefix}/{part}_low"], summary[f"{prefix}/{part}_high"] = interval
            if phase == "gain" and part in held_out.get(phase, {}):
                summary[f"{prefix}/{part}"] = held_out[phase][part]["mean"]
    return summary


def _step_curves(log_history: Sequence[Mapping]) -> tuple[list[float], dict[str, list[float | None]]]:
    """The train reward per GRPO step (the log entries with a reward and a loss), and per part of `CURVES` its mean
    per step (None where a step did not log it).

    >>> _step_curves([{"reward": 0.5, "loss": 0.1, "rewards/verdict/mean": 1.0}, {"eval_reward": 0.2}])
    ([0.5], {'verdict': [1.0], 'searched': [None], 'answered': [None]})
    """
    steps = [entry for entry in log_history if "reward" in entry and "loss" in entry]
    return [entry["reward"] for entry in steps], {part: [entry.get(f"rewards/{part}/mean") for entry in steps]
                                                  for part in CURVES}


def _held_out_means(evaluation: Mapping) -> dict:
    """An evaluation's mean reward and mean per part of `CURVES`, by plot title (None where not evaluated).

    >>> _held_out_means({"eval_reward": 0.5, "eval_rewards/verdict/mean": 1.0})
    {'reward': 0.5, 'verdict accuracy': 1.0, 'search-call rate': None, 'answer rate': None}
    """
    return {"reward": evaluation.get("eval_reward"),
            **{title: evaluation.get(f"eval_rewards/{part}/mean") for part, title in CURVES.items()}}


def _plot_curves(job: TrainJob, name: str, curve: Sequence[float], per_step: Mapping[str, Sequence[float | None]],
                 window: int, before: Mapping, after: Mapping) -> None:
    """`<work_dir>/rl_curves.png` and the tracker's `plots/rl_curves.png`: the per-step curves with the held-out
    values before and after training."""
    figure = curves_figure({"reward": curve, **{title: per_step[part] for part, title in CURVES.items()}},
                           window, f"{name}: per GRPO step ({len(curve)} steps)",
                           before=_held_out_means(before), after=_held_out_means(after))
    figure.savefig(job.work_dir / "rl_curves.png")
    job.tracker.log_figure(figure, "plots/rl_curves.png")
