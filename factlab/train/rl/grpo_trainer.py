"""TRL's GRPOTrainer on CPU for the search checker: the VERL rows as its dataset (`load_rows`), its config
(`grpo_config`), and the run itself with LoRA, the search environment and the held-out evaluations (`train_grpo`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from factlab.atomic import write_json
from factlab.train.rl.environment import SearchEnvironment
from factlab.train.rl.rollouts import RolloutLog


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
