"""Pieces shared by the classifier and causal-LM trainers: LoRA as a config value, metrics to the tracker, a
wall-clock budget."""

from __future__ import annotations

import time
from collections.abc import Mapping

from transformers import TrainerCallback


def with_peft(model, peft: Mapping, task_type: str):
    """Wrap `model` in LoRA adapters when `peft["enabled"]`, else return it unchanged (full fine-tuning).

    Args:
        peft: `enabled`, `r`, `alpha`, `dropout`, `target_modules` (conf/recipe/base/*.yaml).
        task_type: the peft TaskType name, e.g. "SEQ_CLS" (keeps the new classifier head trainable) or "CAUSAL_LM".
    """
    if not peft["enabled"]:
        return model
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(task_type=task_type, r=peft["r"], lora_alpha=peft["alpha"], lora_dropout=peft["dropout"],
                        target_modules=list(peft["target_modules"]))
    return get_peft_model(model, config)


class TrackerCallback(TrainerCallback):
    """Forward the Trainer's logs to a factlab tracker: `loss` -> `train/loss`, `eval_x` -> `val/x`."""

    def __init__(self, tracker) -> None:
        self.tracker = tracker

    def on_log(self, args, state, control, logs=None, **kwargs):
        metrics = {}
        for key, value in (logs or {}).items():
            if not isinstance(value, int | float):
                continue
            name = f"val/{key[len('eval_'):]}" if key.startswith("eval_") else f"train/{key}"
            metrics[name] = value
        if metrics:
            self.tracker.log_metrics(metrics, step=state.global_step)


class TimeBudget(TrainerCallback):
    """Stop training (with a final save) once `seconds` of wall time have passed in this session; None = no limit."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.start = time.perf_counter()

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if self.seconds is not None and time.perf_counter() - self.start >= self.seconds:
            control.should_training_stop = True
            control.should_save = True
            control.should_evaluate = args.eval_strategy != "no"
        return control
