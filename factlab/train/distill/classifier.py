"""Distil a stage into a sequence classifier (transformers Trainer, optional LoRA) and measure it on the test split.

One code path for LoRA and full fine-tuning: with `peft.enabled` the model is wrapped in LoRA adapters before
training and the adapters are merged into the weights before saving, so every saved model is a plain Hugging Face
classifier that `factlab.stages.classifiers` loads the same way.

Work folder (see factlab/train/job.py): `checkpoints/` (resumed after an interruption), `model/` (the final model,
with `factlab_classifier.json`), `test_predictions.jsonl`, `confusion_matrix.png`, `metrics.json`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from omegaconf import DictConfig

from factlab.metrics import classification_metrics, confusion, confusion_figure, per_class
from factlab.train.job import FineTuneSettings, RecipeConfigError, TrainJob, announce_precision, settings_from_yaml
from factlab.train.tasks import ClassifierTask, Row
from factlab.train.teacher import LabelledSplit, agreement, label_splits


@dataclass(kw_only=True)
class ClassifierSettings(FineTuneSettings):
    """The settings of a distill_* recipe (conf/recipe/base/classifier.yaml documents each)."""

    base_model: str
    eval_batch_size: int
    weight_decay: float
    class_weighting: bool
    freeze_embeddings: bool  # keep the token embedding table fixed (most of a multilingual model's weights)
    window_stride: int  # > 0: a long pair is read in overlapping windows at test time (tokens of overlap)
    keep_layers: int | None = None  # keep only the lower N transformer layers (faster steps and serving); None = all
    pooling: str = "cls"  # what the head reads: "cls" = the first token's state, "mean" = the masked mean of all


def settings_from(recipe: str, values: dict) -> ClassifierSettings:
    """ClassifierSettings from a recipe's keyword values, naming the yaml on an unknown or missing field."""
    return settings_from_yaml(ClassifierSettings, recipe, values)


MAX_CLASS_WEIGHT = 10.0  # a class of 5 rows among 18,000 would otherwise weigh 700x and swamp every batch it is in


def class_weights(targets: Sequence[str], labels: Sequence[str]) -> list[float]:
    """Inverse-frequency weights n / (k * count) for the classes present, at most MAX_CLASS_WEIGHT; 1.0 for absent
    ones.

    >>> class_weights(["a", "a", "a", "b"], ["a", "b", "c"])
    [0.6666666666666666, 2.0, 1.0]
    >>> class_weights(["a"] * 99 + ["b"], ["a", "b"])
    [0.5050505050505051, 10.0]
    """
    counts = Counter(targets)
    present = [label for label in labels if counts[label]]
    return [min(len(targets) / (len(present) * counts[label]), MAX_CLASS_WEIGHT) if counts[label] else 1.0
            for label in labels]


def train_classifier(task: ClassifierTask, stage_cfg: DictConfig, job: TrainJob, settings: ClassifierSettings,
                     recipe: str) -> dict:
    """Label, train (resumable), save, evaluate on test, log and register one stage classifier.

    Returns:
        The test metrics (`test/...`), model facts (`model/...`), `train/wall_s` and `model_uri`.
    """
    announce_precision(job, settings)
    data = label_splits(job, stage_cfg, task.rows, task.target, lambda t: t if t in task.labels else None,
                        settings.max_rows)
    model_dir = job.work_dir / "model"
    if not (model_dir / "COMPLETE").exists():  # a finished fit of this config is evaluated again, not retrained
        _fit(task, data, job, settings, model_dir, recipe)
    return evaluate_and_register(task, data["test"], job, settings, model_dir)


def _fit(task: ClassifierTask, data: dict[str, LabelledSplit], job: TrainJob, settings: ClassifierSettings,
         model_dir: Path, recipe: str) -> None:
    import torch
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    from factlab.models.classifier import META_FILE, POOLINGS, use_mean_pooling
    from factlab.runtime import resolve_base_model
    from factlab.train.trainer_support import shared_callbacks, shared_training_args, train_resumably, with_peft

    labels = list(task.labels)
    index = {label: i for i, label in enumerate(labels)}
    train = [(row, t) for row, t in zip(data["train"].rows, data["train"].targets, strict=True) if t is not None]
    val = [(row, t) for row, t in zip(data["val"].rows, data["val"].targets, strict=True) if t is not None]
    if not train:
        raise RecipeConfigError(f"{recipe}: no training rows with a teacher target for stage {task.stage!r}; check "
                                "the dataset has that gold (or use teacher=lm) and recipe.max_rows.train")
    base = resolve_base_model(settings.base_model)
    set_seed(job.seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(
        base, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id=index, dtype=torch.float32)
    if settings.keep_layers:
        keep_lower_layers(model, settings.keep_layers, recipe)
    if settings.pooling not in POOLINGS:
        raise RecipeConfigError(f"{recipe}: recipe.pooling={settings.pooling!r}; expected one of {', '.join(POOLINGS)}")
    if settings.pooling == "mean":
        use_mean_pooling(model)
    if settings.freeze_embeddings:  # e5's 250k-token table is 96M of its 118M weights: the optimizer skips it
        for parameter in model.base_model.embeddings.word_embeddings.parameters():
            parameter.requires_grad = False
    model = with_peft(model, settings.peft, "SEQ_CLS")

    def encode(pairs: list[tuple[Row, str]]) -> list[dict]:
        if not pairs:
            return []
        has_pair = pairs[0][0].pair is not None
        enc = tokenizer([r.text for r, _ in pairs], [r.pair for r, _ in pairs] if has_pair else None,
                        truncation=True, max_length=settings.max_length)
        return [{**{k: enc[k][i] for k in enc}, "labels": index[t]} for i, (_, t) in enumerate(pairs)]

    weights = torch.tensor(class_weights([t for _, t in train], labels) if settings.class_weighting
                           else [1.0] * len(labels))

    def loss(outputs, batch_labels, num_items_in_batch=None):
        return torch.nn.functional.cross_entropy(outputs.logits.float(), batch_labels, weight=weights)

    def compute_metrics(prediction) -> dict:
        predicted = [labels[i] for i in prediction.predictions.argmax(-1)]
        gold = [labels[i] for i in prediction.label_ids]
        return classification_metrics(gold, predicted, labels)

    checkpoints = job.work_dir / "checkpoints"
    has_val = bool(val)
    args = TrainingArguments(**shared_training_args(settings, job, checkpoints, has_val, "macro_f1", True,
                                                  train_rows=len(train)),
                             per_device_eval_batch_size=settings.eval_batch_size, weight_decay=settings.weight_decay,
                             train_sampling_strategy="group_by_length")
    trainer = Trainer(model=model, args=args, train_dataset=encode(train), eval_dataset=encode(val) or None,
                      processing_class=tokenizer, data_collator=DataCollatorWithPadding(tokenizer),
                      compute_loss_func=loss, compute_metrics=compute_metrics if has_val else None,
                      callbacks=shared_callbacks(settings, job, has_val))
    trained, last, seconds = train_resumably(trainer, checkpoints, job, settings)
    trained.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    meta = {"stage": task.stage, "labels": labels, "max_length": settings.max_length, "bf16": settings.bf16,
            "bf16_reason": settings.bf16_reason, "window_stride": settings.window_stride,
            "freeze_embeddings": settings.freeze_embeddings, "layers": model.config.num_hidden_layers,
            "pooling": settings.pooling,
            "recipe": recipe, "base_model": settings.base_model, "peft": settings.peft, "teacher":
            job.teacher.describe(), "dataset": job.dataset, "train_rows": len(train),
            "class_counts": dict(Counter(t for _, t in train)), "steps": trainer.state.global_step,
            "best_val_macro_f1": trainer.state.best_metric, "train_seconds": seconds, "resumed_from": last}
    (model_dir / META_FILE).write_text(json.dumps(meta, ensure_ascii=False, indent=2, default=str))
    if "support" in labels and val:
        meta.update(calibrate(model_dir, [row for row, _ in val], [t for _, t in val]))
        (model_dir / META_FILE).write_text(json.dumps(meta, ensure_ascii=False, indent=2, default=str))
    (model_dir / "COMPLETE").write_text(str(trainer.state.global_step))


def keep_lower_layers(model, n: int, recipe: str) -> None:
    """Cut a BERT-style encoder to its lower `n` layers in place (the saved config says `n`)."""
    layers = model.base_model.encoder.layer
    if not 0 < n <= len(layers):
        raise RecipeConfigError(f"{recipe}: recipe.keep_layers={n} but the base model has {len(layers)} layers")
    model.base_model.encoder.layer = layers[:n]
    model.config.num_hidden_layers = n


def calibrate(model_dir: Path, rows: Sequence[Row], targets: Sequence[str]) -> dict:
    """Fit on val: the softmax temperature that minimises the negative log-likelihood (a grid over 0.5-5), then the
    p(support) threshold that maximises balanced accuracy of support vs the rest. Returns the meta fields."""
    import math

    from factlab.metrics import balanced_accuracy
    from factlab.models.classifier import SequenceClassifier, softmax

    classifier = SequenceClassifier(model_dir)
    labels = list(classifier.labels)
    windows = classifier.window_logits([r.text for r in rows], [r.pair for r in rows] if rows[0].pair else None)
    logits = [max(w, key=lambda v: classifier._decisiveness(softmax(v))) for w in windows]
    gold = [labels.index(t) for t in targets]

    def nll(temperature: float) -> float:
        return -sum(math.log(max(softmax([v / temperature for v in row])[g], 1e-12))
                    for row, g in zip(logits, gold, strict=True)) / len(gold)

    temperature = min((0.5 + 0.1 * i for i in range(46)), key=nll)
    support = labels.index("support")
    p = [softmax([v / temperature for v in row])[support] for row in logits]
    is_support = ["support" if t == "support" else "rest" for t in targets]
    best = max(sorted(set(round(x, 3) for x in p)) or [0.5], key=lambda cut: balanced_accuracy(
        is_support, ["support" if x >= cut else "rest" for x in p]) or 0.0)
    return {"temperature": round(temperature, 2), "support_threshold": best, "calibration_rows": len(rows),
            "val_nll_before": round(nll(1.0), 4), "val_nll_after": round(nll(temperature), 4)}


def evaluate_classifier(model_dir: Path, rows: Sequence[Row], labels: Sequence[str], batch_size: int
                        ) -> tuple[list[str], float]:
    """Predict `rows` with the saved model through the plug-back loader; returns predictions and items/s."""
    from factlab.models.classifier import SequenceClassifier

    classifier = SequenceClassifier(model_dir, batch_size=batch_size)
    if tuple(labels) != classifier.labels:
        raise RecipeConfigError(f"{model_dir}: labels {classifier.labels} differ from the task's {tuple(labels)}")
    has_pair = bool(rows) and rows[0].pair is not None
    warm = rows[: batch_size]  # the first batch pays for lazy initialisation; time the steady state
    classifier.predict([r.text for r in warm], [r.pair for r in warm] if has_pair else None)
    start = time.perf_counter()
    predicted = classifier.predict([r.text for r in rows], [r.pair for r in rows] if has_pair else None)
    seconds = time.perf_counter() - start
    return [label for label, _ in predicted], (len(rows) / seconds if seconds > 0 else 0.0)


def evaluate_and_register(task: ClassifierTask, test: LabelledSplit, job: TrainJob, settings: ClassifierSettings,
                          model_dir: Path) -> dict:
    """Test metrics vs gold and vs teacher, throughput, size; confusion matrix PNG; MLflow logging + registry."""
    from factlab.models.classifier import META_FILE
    from factlab.train.registry import folder_size_bytes, parameter_count, register_model

    labels = list(task.labels)
    rows = [row for row in test.rows if row.gold in task.labels]
    predicted, items_per_s = evaluate_classifier(model_dir, test.rows, labels, settings.eval_batch_size)
    meta = json.loads((model_dir / META_FILE).read_text())
    by_row = dict(zip(map(id, test.rows), predicted, strict=True))
    gold = [row.gold for row in rows]
    mine = [by_row[id(row)] for row in rows]
    metrics = {f"test/{k}": v for k, v in classification_metrics(gold, mine, labels).items()}
    for label, values in per_class(gold, mine, labels).items():
        metrics.update({f"test/{name}/{label}": values[name] for name in ("precision", "recall", "f1")})
        metrics[f"test/n/{label}"] = values["support"]
    for lang in sorted({row.lang for row in rows}):
        subset = [(g, p) for row, g, p in zip(rows, gold, mine, strict=True) if row.lang == lang]
        lang_metrics = classification_metrics([g for g, _ in subset], [p for _, p in subset], labels)
        metrics.update({f"test/{lang}/{k}": v for k, v in lang_metrics.items()})
    rate, n = agreement(predicted, test.targets)
    metrics.update({
        "test/agreement_with_teacher": rate, "test/compared_with_teacher": n, "test/items_per_s": items_per_s,
        "test/batch_size": settings.eval_batch_size, "train/wall_s": meta["train_seconds"],
        "train/rows": meta["train_rows"], "train/steps": meta["steps"],
        "model/parameters": parameter_count(model_dir), "model/size_mb": folder_size_bytes(model_dir) / 2**20,
    })
    matrix = confusion(gold, mine, labels)
    figure = confusion_figure(matrix, labels, f"{task.stage}: test, n={len(gold)}")
    figure.savefig(job.work_dir / "confusion_matrix.png", dpi=120)
    job.tracker.log_figure(figure, "test/confusion_matrix.png")
    job.tracker.log_metrics(metrics)
    predictions = [{"text": r.text, "pair": r.pair, "gold": r.gold, "teacher": t, "predicted": p, "lang": r.lang,
                    "case_id": r.case_id} for r, t, p in zip(test.rows, test.targets, predicted, strict=True)]
    job.tracker.log_table(predictions, "test/predictions.jsonl")
    (job.work_dir / "test_predictions.jsonl").write_text(
        "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in predictions))
    (job.work_dir / "metrics.json").write_text(json.dumps({**metrics, "confusion": matrix}, indent=2))
    job.tracker.log_dict({"labels": labels, "confusion": matrix}, "test/confusion_matrix.json")
    uri = register_model(job.tracker, model_dir, job.registered_name, {
        "stage": task.stage, **{k: f"{metrics[k]:.4f}" for k in ("test/macro_f1", "test/balanced_accuracy")}})
    return {**metrics, "model_uri": uri, "model_dir": str(model_dir.resolve()), "settings": asdict(settings)}
