"""Pieces shared by the classifier and causal-LM trainers: LoRA as a config value, the training arguments and
callbacks every fine-tuning recipe sets alike, metrics to the tracker, a wall-clock budget, and resuming only from a
checkpoint that was written whole."""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Mapping
from pathlib import Path

from transformers import TrainerCallback

logger = logging.getLogger(__name__)
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
# What a checkpoint folder must hold to resume from: the Trainer writes trainer_state.json last.
_CHECKPOINT_FILES = ("trainer_state.json",)


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


def epochs_for(epochs: float, min_steps: int, max_steps: int, train_rows: int | None, rows_per_step: int) -> float:
    """The epochs to train: `epochs`, raised so that at least `min_steps` optimizer steps run when the train split is
    small (3 epochs of 273 rows at batch 32 are 27 steps, and the classifier collapsed to one class; 20 epochs, 180
    steps, learnt: docs/train.md). `max_steps` > 0 decides alone, as in the Trainer.

    >>> epochs_for(3, 150, -1, 273, 32)   # 9 steps an epoch
    17.0
    >>> epochs_for(3, 150, -1, 18000, 32), epochs_for(3, 150, 5, 273, 32), epochs_for(3, 0, -1, 273, 32)
    (3, 3, 3)
    """
    if max_steps > 0 or min_steps <= 0 or not train_rows:
        return epochs
    per_epoch = math.ceil(train_rows / max(1, rows_per_step))
    return max(epochs, float(math.ceil(min_steps / per_epoch)))


def shared_training_args(settings, job, checkpoints: Path, has_val: bool, best_metric: str,
                         greater_is_better: bool, train_rows: int | None = None) -> dict:
    """The TrainingArguments keywords every fine-tuning recipe sets the same way (from FineTuneSettings).

    Args:
        train_rows: the train split's size; with `settings.min_steps` it raises the epochs of a small split.
    """
    rows_per_step = settings.batch_size * int(getattr(settings, "gradient_accumulation", 1) or 1)
    epochs = epochs_for(settings.epochs, settings.min_steps, settings.max_steps, train_rows, rows_per_step)
    if epochs != settings.epochs:
        logger.info("%d train rows: %s epochs for at least %d steps (recipe.min_steps)", train_rows, epochs,
                    settings.min_steps)
    return dict(
        output_dir=str(checkpoints), per_device_train_batch_size=settings.batch_size,
        num_train_epochs=epochs, max_steps=settings.max_steps, learning_rate=settings.learning_rate,
        warmup_steps=settings.warmup_ratio, eval_strategy="steps" if has_val else "no",
        eval_steps=settings.eval_every, save_strategy="steps", save_steps=settings.eval_every, save_total_limit=2,
        load_best_model_at_end=has_val, metric_for_best_model=best_metric, greater_is_better=greater_is_better,
        logging_steps=max(1, min(settings.eval_every, 10)), report_to="none", seed=job.seed, data_seed=job.seed,
        use_cpu=True, bf16=settings.bf16, restore_callback_states_from_checkpoint=True, dataloader_num_workers=0)


def shared_callbacks(settings, job, has_val: bool) -> list:
    """Metrics to the tracker, the wall-clock budget and, with a val split, early stopping."""
    from transformers import EarlyStoppingCallback

    callbacks = [TrackerCallback(job.tracker), TimeBudget(settings.max_train_seconds)]
    if has_val and settings.early_stopping_patience > 0:
        callbacks.append(EarlyStoppingCallback(early_stopping_patience=settings.early_stopping_patience))
    return callbacks


def resumable_checkpoint(checkpoints: Path, resume: bool) -> str | None:
    """The newest checkpoint written whole (it holds trainer_state.json), or None; a torn one (the run was killed
    while saving) is moved aside as `<name>.torn` with a warning, so `resume` never fails on it.

    >>> import tempfile; root = Path(tempfile.mkdtemp())
    >>> (root / "checkpoint-2").mkdir(); (root / "checkpoint-1").mkdir()
    >>> _ = (root / "checkpoint-1" / "trainer_state.json").write_text("{}")
    >>> Path(resumable_checkpoint(root, True)).name, sorted(p.name for p in root.iterdir())
    ('checkpoint-1', ['checkpoint-1', 'checkpoint-2.torn'])
    """
    if not resume or not checkpoints.is_dir():
        return None
    found = sorted(((int(m.group(1)), p) for p in checkpoints.iterdir()
                    if p.is_dir() and (m := _CHECKPOINT.match(p.name))), reverse=True)
    for _, path in found:
        if all((path / name).is_file() for name in _CHECKPOINT_FILES):
            return str(path)
        torn = path.with_name(path.name + ".torn")
        logger.warning("checkpoint %s was not written whole (no %s); moved aside to %s", path,
                       " / ".join(_CHECKPOINT_FILES), torn)
        path.rename(torn)
    return None


def train_from(trainer, resume_from: str | None) -> bool:
    """`trainer.train(resume_from_checkpoint=resume_from)`, except from a checkpoint that already reached the run's
    `max_steps`: the Trainer's resume loop trains one step before it checks `max_steps`, so a finished run
    interrupted after its last checkpoint (during its test evaluation, say) would train a step past it on rerun.
    Then the checkpoint's state (steps, step log, best checkpoint) and weights are loaded (the best checkpoint's
    with `load_best_model_at_end`, as the Trainer ends a run). Returns whether it trained."""
    from transformers import TrainerState

    max_steps = trainer.args.max_steps
    state = TrainerState.load_from_json(str(Path(resume_from) / _CHECKPOINT_FILES[0])) if resume_from else None
    if state is not None and 0 < max_steps <= state.global_step:
        logger.info("%s already holds %d steps (max_steps %d): its weights are loaded, no step is trained",
                    resume_from, state.global_step, max_steps)
        trainer.state = state
        best = state.best_model_checkpoint if trainer.args.load_best_model_at_end else None
        trainer._load_from_checkpoint(best if best and Path(best).is_dir() else resume_from)
        return False
    trainer.train(resume_from_checkpoint=resume_from)
    return True


def train_resumably(trainer, checkpoints: Path, job, settings,
                    adapter_dir: Path | None = None) -> tuple[object, str | None, float]:
    """Train from the last whole checkpoint (when resuming; `train_from`), then merge LoRA adapters into the weights.

    Args:
        adapter_dir: with LoRA on, the trained adapter alone (PEFT `save_pretrained`) is saved here before the merge.

    Returns:
        (the trained model, merged when LoRA was on; the checkpoint it resumed from or None; training seconds).
    """
    last = resumable_checkpoint(checkpoints, job.resume)
    start = time.perf_counter()
    train_from(trainer, last)
    seconds = time.perf_counter() - start
    if settings.peft["enabled"] and adapter_dir is not None:
        trainer.model.save_pretrained(adapter_dir)
    trained = trainer.model.merge_and_unload() if settings.peft["enabled"] else trainer.model
    return trained, last, seconds
