"""`python train.py recipe=grpo_search_cpu`: the CPU path of the search-checker RL, through TRL's GRPOTrainer.

    python train.py recipe=grpo_search_cpu                              # Qwen2.5-Coder-0.5B + LoRA, 5 steps
    python train.py recipe=grpo_search_cpu recipe.max_steps=2 tracking=off

The same VERL parquet rows (factlab/train/rl/data.py), the same `search` tool over the same retrieval service
(factlab/train/rl/retrieval.py) and the same reward (`factlab.train.rl.reward.compute_score`) as recipe=search_r1;
TRL runs the multi-turn tool calls itself (`environment_factory`: one SearchEnvironment per rollout). Reward per
step goes to the job's tracker (MLflow: `train/reward`, `train/rewards/verl_reward/mean`, ...).
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
from factlab.train.rl.format import format_hits, searched
from factlab.train.rl.retrieval import retrieve
from factlab.train.rl.reward import compute_score

logger = logging.getLogger(__name__)


class SearchEnvironment:
    """One rollout's tools for TRL (`environment_factory`): `search` on the row's corpus through the service.

    Args:
        url: the retrieval service's /retrieve URL.
        topk: passages per search call.
    """

    def __init__(self, url: str, topk: int) -> None:
        self.url = url
        self.topk = topk
        self.corpus: str | None = None
        self.queries: list[str] = []

    def reset(self, **row) -> None:
        """Take the corpus key from the row's tools kwargs (as VERL's tool does) and forget earlier queries."""
        tools_kwargs = (row.get("extra_info") or {}).get("tools_kwargs") or {}
        self.corpus = ((tools_kwargs.get("search") or {}).get("create_kwargs") or {}).get("corpus")
        self.queries = []

    def search(self, query: str) -> str:
        """Search the evidence corpus. Returns the best matching passages, each starting with its [chunk id].

        Args:
            query: One short keyword query for one open question about the claim.
        """
        self.queries.append(query)
        return format_hits(retrieve(self.url, [query], self.corpus, self.topk)[0])


def render_completion(completion: str | Sequence[Mapping]) -> str:
    """A TRL completion (text, or the assistant / tool messages of a tool-calling rollout) as the text VERL's reward
    sees: tool calls as `<tool_call>{json}</tool_call>`, tool results as `<tool_response>...</tool_response>`.

    >>> text = render_completion([{"role": "assistant", "content": "", "tool_calls": [{"type": "function",
    ...     "function": {"name": "search", "arguments": {"query": "x"}}}]}, {"role": "tool", "content": "[a] t"},
    ...     {"role": "assistant", "content": "<answer>{}</answer>"}])
    >>> print(text)
    <tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>
    <tool_response>[a] t</tool_response>
    <answer>{}</answer>
    """
    if isinstance(completion, str):
        return completion
    parts = []
    for message in completion:
        if message.get("role") == "tool":
            parts.append(f"<tool_response>{message.get('content') or ''}</tool_response>")
            continue
        content = message.get("content") or ""
        if isinstance(content, list):  # structured content blocks
            content = "".join(block.get("text", "") for block in content if isinstance(block, Mapping))
        calls = [json.dumps({"name": call["function"]["name"], "arguments": call["function"]["arguments"]},
                            ensure_ascii=False) for call in message.get("tool_calls") or []]
        parts.append(content + "".join(f"<tool_call>{call}</tool_call>" for call in calls))
    return "\n".join(part for part in parts if part)


class RolloutLog:
    """Every rollout the reward scores, by phase (`before`, `train`, `after`): the row's case id and index, the
    reward's parts and whether it searched, and for a rollout without an answer the end of its text (`tail`: what
    it wrote instead). TRL's evaluation reports only means; these records give the held-out numbers their intervals
    (resampling cases) and the after - before gain paired on the same rows.

    >>> log = RolloutLog(); log.phase = "before"
    >>> log.add({"case_id": "a", "index": 0}, {"score": 0.2, "acc": 0.0, "format": 0.5, "recall": -1.0,
    ...                                         "answered": 1.0}, False)
    >>> log.phase = "after"
    >>> log.add({"case_id": "a", "index": 0}, {"score": 1.0, "acc": 1.0, "format": 1.0, "recall": -1.0,
    ...                                         "answered": 1.0}, True)
    >>> log.summary(200, 0)["after"]["verdict"]["mean"], log.summary(200, 0)["gain"]["verdict"]["mean"]
    (1.0, 1.0)
    """

    PARTS = {"reward": "score", "verdict": "acc", "searched": "searched", "answered": "answered"}

    def __init__(self) -> None:
        self.phase = "train"
        self.records: dict[str, list[dict]] = {}

    TAIL_CHARS = 400  # how much of an unanswered rollout's text is kept

    def add(self, info: Mapping, parts: Mapping, did_search: bool, text: str = "") -> None:
        """Record one scored rollout under the current phase (`text`: the rendered rollout, its end kept when the
        rollout did not answer)."""
        record = {"case_id": str(info.get("case_id")), "index": info.get("index"), "lang": info.get("lang"),
                  **{k: float(v) for k, v in parts.items()}, "searched": float(did_search)}
        if text and not parts.get("answered", 1.0):
            record["tail"] = text[-self.TAIL_CHARS:]
        self.records.setdefault(self.phase, []).append(record)

    def write(self, folder: Path, phase: str) -> None:
        """`<folder>/rollouts_<phase>.jsonl` (atomically)."""
        from factlab.atomic import write_text

        write_text(folder / f"rollouts_{phase}.jsonl", "".join(
            json.dumps(record, ensure_ascii=False) + "\n" for record in self.records.get(phase, [])))

    def read(self, folder: Path, phase: str) -> None:
        """Load a phase written by an earlier run (the kept "before" of a resumed run), if there."""
        path = folder / f"rollouts_{phase}.jsonl"
        if path.exists():
            self.records[phase] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    @classmethod
    def _means(cls, records: Sequence[Mapping]) -> dict[str, float]:
        # NaN for a part the records lack (the kept "before" of a run from before that part was recorded)
        return {name: sum(r.get(key, math.nan) for r in records) / len(records) for name, key in cls.PARTS.items()}

    def summary(self, samples: int = 2000, seed: int = 0, confidence: float = 0.95) -> dict:
        """Per held-out phase: mean reward, verdict and search rate with percentile intervals resampling cases, the
        rows and cases counted; `gain`: after - before per row (the mean of its rollouts), paired, grouped by case."""
        from factlab.metrics import bootstrap_ci, paired_gain

        out: dict = {}
        per_row: dict[str, dict] = {}
        for phase in ("before", "after"):
            records = self.records.get(phase) or []
            if not records:
                continue
            cases: dict[str, list[dict]] = {}
            rows: dict[tuple, list[dict]] = {}
            for record in records:
                cases.setdefault(record["case_id"], []).append(record)
                rows.setdefault((record["case_id"], record["index"]), []).append(record)
            units = list(cases.values())
            intervals = bootstrap_ci(units, lambda picked: self._means([r for unit in picked for r in unit]),
                                     list(self.PARTS), samples, seed, confidence)
            point = self._means(records)
            out[phase] = {name: {"mean": point[name], "interval": intervals.get(name)} for name in self.PARTS}
            out[phase].update(rollouts=len(records), rows=len(rows), cases=len(units))
            per_row[phase] = {key: self._means(group) for key, group in rows.items()}
        if len(per_row) == 2:
            shared = sorted(set(per_row["before"]) & set(per_row["after"]), key=str)
            out["gain"] = {"rows": len(shared)}
            for name in self.PARTS:
                groups: dict[str, list] = {}
                for key in shared:
                    groups.setdefault(key[0], []).append((per_row["before"][key][name], per_row["after"][key][name]))
                gain, interval = paired_gain(list(groups.values()), samples, seed, confidence)
                out["gain"][name] = {"mean": gain, "interval": interval}
        return out


# The parts of the reward TRL logs per step and at evaluation (weight-0 reward functions), with their plot titles.
CURVES = {"verdict": "verdict accuracy", "searched": "search-call rate", "answered": "answer rate"}


def verl_reward(format_weight: float, recall_weight: float, business: str = "default",
                log: RolloutLog | None = None) -> Callable:
    """`compute_score` as a TRL reward function over a batch (its name is what TRL logs: rewards/verl_reward);
    every scored rollout goes to `log` when given."""
    return component_reward("verl_reward", "score", format_weight, recall_weight, business, log=log)


def component_reward(name: str, part: str, format_weight: float, recall_weight: float,
                     business: str = "default", log: RolloutLog | None = None) -> Callable:
    """One part of `compute_score` (`score`: the whole reward; `acc`: the verdict; `searched`: 1 when the rollout
    called the tool; `answered`: 1 when it ended with an answer naming a known relation) as a TRL reward function
    named `name`. Given weight 0 in `reward_weights`, it trains nothing, and TRL logs its mean per step and at
    evaluation (`rewards/<name>/mean`): the accuracy, search-call and answer-rate curves.

    >>> acc = component_reward("verdict", "acc", 0.1, 0.1)
    >>> acc(None, ['<answer>{"relation": "support"}</answer>'], ["x"],
    ...     [{"ground_truth": {"relation": "support", "label": "correct", "chunk_ids": []}}], [{}])
    [1.0]
    """
    def reward(prompts, completions, data_source, reward_model, extra_info, **kwargs) -> list[float]:
        out = []
        for completion, source, model, info in zip(completions, data_source, reward_model, extra_info, strict=True):
            text = render_completion(completion)
            if part == "searched":
                out.append(1.0 if searched(text) else 0.0)
                continue
            parts = compute_score(source, text, model["ground_truth"], info, format_weight=format_weight,
                                  recall_weight=recall_weight, business=business)
            if log is not None:
                log.add(info or {}, parts, searched(text), text)
            out.append(float(parts[part]))
        return out

    reward.__name__ = name
    return reward


def load_rows(path: str | Path, limit: int | None = None):
    """A VERL parquet file as a Hugging Face Dataset (TRL's input), numpy arrays turned back into lists."""
    import pandas as pd

    import datasets

    frame = pd.read_parquet(path)
    rows = json.loads(frame.to_json(orient="records", force_ascii=False))[: limit or None]
    return datasets.Dataset.from_list(rows)


def grpo_config(out_dir: Path, max_steps: int, batch_size: int, num_generations: int, max_completion_length: int,
                max_tool_calls: int, learning_rate: float, temperature: float, beta: float, bf16: bool, seed: int,
                shuffle: bool = True, reward_weights: Sequence[float] | None = None, save_every: int = 0,
                eval_generations: int | None = None):
    """TRL's GRPOConfig for a CPU run: every step logged, no external reporting (the tracker callback logs).

    Args:
        shuffle: shuffle the train rows (False keeps a curriculum's order).
        reward_weights: per reward function (None = all 1); 0 logs a function without training on it.
        save_every: a checkpoint (LoRA adapter, optimizer, RNG, the step log) in `out_dir` every this many steps,
            the last two kept, so an interrupted run resumes (`train_grpo(resume_from=...)`); 0 = none.
        eval_generations: rollouts per held-out row (None = `num_generations`): the held-out spread is mostly between
            claims, so more rows at one rollout each measure more for the same generation time.
    """
    from trl import GRPOConfig

    return GRPOConfig(output_dir=str(out_dir), max_steps=max_steps,
                      per_device_train_batch_size=batch_size * num_generations,
                      per_device_eval_batch_size=eval_generations or num_generations, num_generations=num_generations,
                      num_generations_eval=eval_generations or num_generations,
                      max_completion_length=max_completion_length, max_tool_calling_iterations=max_tool_calls,
                      learning_rate=learning_rate, temperature=temperature, beta=beta, bf16=bf16, use_cpu=True,
                      logging_steps=1, save_strategy="steps" if save_every > 0 else "no",
                      save_steps=max(1, save_every), save_total_limit=2, report_to="none", seed=seed,
                      dataloader_num_workers=0,
                      gradient_checkpointing=False, shuffle_dataset=shuffle,
                      reward_weights=list(reward_weights) if reward_weights is not None else None)


def train_grpo(model_path: str | Path, train_rows, test_rows, url: str, topk: int, config, peft: Mapping,
               reward_funcs: Sequence[Callable], callbacks: Sequence = (), eval_before: bool = False,
               resume_from: str | None = None, before_file: Path | None = None, log: RolloutLog | None = None):
    """Build TRL's GRPOTrainer on `model_path` (LoRA per `peft`) with the search environment, train, evaluate.

    Args:
        eval_before: evaluate the untrained policy on `test_rows` first (the "before" of before / after).
        resume_from: a checkpoint of an interrupted run (`factlab.train.trainer_support.resumable_checkpoint`):
            training continues from its step with its adapter, optimizer and step log (`train_from`: a checkpoint
            already at `max_steps` is loaded, not trained further).
        before_file: where the "before" evaluation is kept, so a resumed run does not evaluate it again.
        log: the RolloutLog the reward functions write to: its phase is set here (`before`, `train`, `after`), and
            with `before_file` each held-out phase's rollouts are kept beside it (`rollouts_<phase>.jsonl`).

    Returns:
        (trainer, eval metrics on `test_rows` after training or {} when None, the same before training or {}).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    from factlab.train.trainer_support import train_from

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.bfloat16 if config.bf16 else torch.float32)
    peft_config = None
    if peft["enabled"]:
        from peft import LoraConfig

        peft_config = LoraConfig(task_type="CAUSAL_LM", r=peft["r"], lora_alpha=peft["alpha"],
                                 lora_dropout=peft["dropout"], target_modules=list(peft["target_modules"]))
    trainer = GRPOTrainer(model=model, args=config, train_dataset=train_rows, processing_class=tokenizer,
                          reward_funcs=list(reward_funcs), peft_config=peft_config, callbacks=list(callbacks),
                          environment_factory=lambda: SearchEnvironment(url, topk))
    log = log if log is not None else RolloutLog()
    folder = before_file.parent if before_file is not None else None
    before = {}
    if test_rows is not None and eval_before:
        if before_file is not None and before_file.exists():
            before = json.loads(before_file.read_text())
            log.read(folder, "before")
        else:
            log.phase = "before"
            before = trainer.evaluate(eval_dataset=test_rows)
            if before_file is not None:
                log.write(folder, "before")
                write_json(before_file, before)
    log.phase = "train"
    train_from(trainer, resume_from)
    metrics = {}
    if test_rows is not None:
        log.phase = "after"
        metrics = trainer.evaluate(eval_dataset=test_rows)
        if folder is not None:
            log.write(folder, "after")
    return trainer, metrics, before


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
    from factlab.train.trainer_support import TrackerCallback, resumable_checkpoint

    manifest = write_job_data(job, multi_hop_only, max_rows, row_sample)
    model_path = base_model_folder(base_model, base_lm)
    retrievers = job_retrievers(manifest, retrieval, job.work_dir)
    train_rows = load_rows(manifest["files"]["train"])
    if warm_start and int(warm_start.get("steps") or 0) > 0:
        model_path = warm_started(job, model_path, train_rows, retrievers, topk, warm_start, peft)
    order = str((curriculum or {}).get("order", "none"))
    if order != "none":
        import datasets
        from factlab.train.rl.curriculum import order_rows, retriever_search

        ordered, levels = order_rows([dict(row) for row in train_rows], retriever_search(retrievers), topk, order,
                                     seed=job.seed)
        train_rows = datasets.Dataset.from_list(ordered)
        job.tracker.log_params({"rl/curriculum": order, **{f"rl/curriculum_{k}": n for k, n in levels.items()}})
        logger.info("curriculum %s: %s, %d train rows", order, levels, len(ordered))
    test_file = manifest["files"].get("test") or manifest["files"].get("val")
    test_rows = load_rows(test_file) if test_file else None
    config = grpo_config(job.work_dir / "trl", max_steps, batch_size, num_generations, max_completion_length,
                         max_tool_calls, learning_rate, temperature, beta, bf16, job.seed, shuffle=order == "none",
                         reward_weights=[1.0] + [0.0] * len(CURVES), save_every=save_every,
                         eval_generations=eval_generations)
    resume_from = resumable_checkpoint(job.work_dir / "trl", job.resume)
    if resume_from:
        logger.info("GRPO resumes from %s", resume_from)
        job.tracker.log_params({"rl/resumed_from": Path(resume_from).name})
    job.tracker.log_params({"rl/corpus": manifest["corpus"], "rl/model_path": str(model_path),
                            **{f"rl/{split}_rows": n for split, n in manifest["rows"].items()}})
    log = RolloutLog()
    with RetrievalService(retrievers, default_k=topk) as service:
        weights = (reward["format_weight"], reward["recall_weight"], business)
        trainer, metrics, before = train_grpo(
            model_path, train_rows, test_rows, service.url, topk, config, peft,
            [verl_reward(*weights, log=log)]
            + [component_reward(part, RolloutLog.PARTS[part], *weights) for part in CURVES],
            [TrackerCallback(job.tracker)], eval_before=eval_before, resume_from=resume_from,
            before_file=job.work_dir / "test_before.json", log=log)
    held_out = log.summary(seed=job.seed)
    write_json(job.work_dir / "held_out.json", held_out)
    logger.info("held-out rollouts:\n%s", held_out_table(held_out))
    steps = [entry for entry in trainer.state.log_history if "reward" in entry and "loss" in entry]
    curve = [entry["reward"] for entry in steps]
    test_reward = float(metrics.get("eval_reward", math.nan))
    summary = {f"test/{name}": float(metrics[f"eval_rewards/{name}/mean"]) for name in CURVES
               if f"eval_rewards/{name}/mean" in metrics}
    summary.update({f"test_before/{name}": float(before[key]) for name, key in
                    [("reward", "eval_reward")] + [(name, f"eval_rewards/{name}/mean") for name in CURVES]
                    if key in before})
    adapter_dir = job.work_dir / "model"
    trainer.save_model(str(adapter_dir))
    for phase, prefix in (("after", "test"), ("before", "test_before"), ("gain", "test_gain")):
        for part in RolloutLog.PARTS:  # not `name`: that is the recipe's name, used below
            interval = (held_out.get(phase) or {}).get(part, {}).get("interval")
            if interval:
                summary[f"{prefix}/{part}_low"], summary[f"{prefix}/{part}_high"] = interval
            if phase == "gain" and part in held_out.get(phase, {}):
                summary[f"{prefix}/{part}"] = held_out[phase][part]["mean"]
    job.tracker.log_metrics({headline: test_reward, **summary})
    per_step = {part: [entry.get(f"rewards/{part}/mean") for entry in steps] for part in CURVES}
    job.tracker.log_dict({"train_reward_per_step": curve, **{f"train_{k}_per_step": v for k, v in per_step.items()},
                          "test": metrics, "test_before": before, "held_out": held_out}, "grpo_rewards.json")

    def held_out_means(evaluation: Mapping) -> dict:
        return {"reward": evaluation.get("eval_reward"),
                **{title: evaluation.get(f"eval_rewards/{part}/mean") for part, title in CURVES.items()}}

    figure = curves_figure({"reward": curve, **{title: per_step[part] for part, title in CURVES.items()}},
                           curve_window, f"{name}: per GRPO step ({len(curve)} steps)",
                           before=held_out_means(before), after=held_out_means(metrics))
    figure.savefig(job.work_dir / "rl_curves.png")
    job.tracker.log_figure(figure, "plots/rl_curves.png")
    return {"recipe": name, "headline": test_reward, headline: test_reward, **summary, "train/reward_curve": curve,
            "train/verdict_curve": per_step["verdict"], "train/search_rate_curve": per_step["searched"],
            "train/answer_rate_curve": per_step["answered"],
            "model_uri": str(adapter_dir.resolve())}


def held_out_table(held_out: Mapping) -> str:
    """The before / after / gain summary of `RolloutLog.summary` as a markdown table (the job's log, docs/rl.md).

    >>> print(held_out_table({"after": {"reward": {"mean": 0.5, "interval": (0.25, 0.75)}, "rows": 2, "cases": 1,
    ...                                 "rollouts": 8}}))
    | held out | rows (cases) | rollouts | reward | verdict | searched | answered |
    |---|---|---|---|---|---|---|
    | after | 2 (1) | 8 | 0.500 [0.250, 0.750] | - | - | - |
    """
    def cell(value: Mapping | None, sign: str) -> str:
        if not value:
            return "-"
        low_high = value.get("interval")
        text = f"{value['mean']:{sign}.3f}"
        return f"{text} [{low_high[0]:{sign}.3f}, {low_high[1]:{sign}.3f}]" if low_high else text

    lines = ["| held out | rows (cases) | rollouts | " + " | ".join(RolloutLog.PARTS) + " |",
             "|---" * (3 + len(RolloutLog.PARTS)) + "|"]
    for phase in ("before", "after", "gain"):
        entry = held_out.get(phase)
        if not entry:
            continue
        size = f"{entry['rows']} ({entry['cases']})" if phase != "gain" else f"{entry['rows']} paired"
        lines.append(f"| {phase} | {size} | {entry.get('rollouts', '-')} | "
                     + " | ".join(cell(entry.get(name), "+" if phase == "gain" else "") for name in RolloutLog.PARTS)
                     + " |")
    return "\n".join(lines)


def moving_average(values: Sequence[float | None], window: int) -> list[float | None]:
    """The trailing mean of the last `window` values seen (None values skipped; None until one is seen).

    >>> moving_average([1.0, 0.0, None, 1.0], 2)
    [1.0, 0.5, 0.5, 0.5]
    """
    out, seen = [], []
    for value in values:
        if value is not None:
            seen.append(float(value))
        tail = seen[-window:]
        out.append(sum(tail) / len(tail) if tail else None)
    return out


def curves_figure(curves: Mapping[str, Sequence[float | None]], window: int, title: str,
                  before: Mapping[str, float | None] | None = None, after: Mapping[str, float | None] | None = None):
    """One panel per curve: the per-step values, their moving average, and the held-out value before and after
    training as horizontal lines where known."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4.2 * len(curves), 3.6), dpi=100)
    panels = figure.subplots(1, len(curves), squeeze=False)[0]
    for axes, (name, values) in zip(panels, curves.items(), strict=True):
        steps = list(range(1, len(values) + 1))
        axes.plot(steps, [v if v is not None else float("nan") for v in values], ".", alpha=0.4, label="per step")
        smooth = moving_average(values, window)
        axes.plot(steps, [v if v is not None else float("nan") for v in smooth], "-", label=f"mean of last {window}")
        for label, held_out, style in (("held-out before", (before or {}).get(name), ":"),
                                       ("held-out after", (after or {}).get(name), "--")):
            if held_out is not None:
                axes.axhline(float(held_out), linestyle=style, color="black", linewidth=1, label=label)
        axes.set_title(name)
        axes.set_xlabel("GRPO step")
        axes.set_ylim(-0.05, 1.05)
        axes.legend(fontsize=7)
    figure.suptitle(title)
    figure.tight_layout()
    return figure
