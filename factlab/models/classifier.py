"""A trained sequence classifier folder as a model a stage runs on: Hugging Face weights + tokenizer +
`factlab_classifier.json` (stage, labels, max length, ...), written by the distill recipes (factlab/train/distill)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from factlab.models.base_models import ModelSourceError
from factlab.runtime import cpu_bf16

META_FILE = "factlab_classifier.json"  # written next to the Hugging Face files by the distill recipes


class SequenceClassifier:
    """A saved classifier folder: Hugging Face model + tokenizer + `factlab_classifier.json` (stage, labels, ...).

    Args:
        path: the folder (a resolved model, see `factlab.tracking.refs.resolve_model`).
        batch_size: inputs per forward pass.
    """

    def __init__(self, path: str | Path, batch_size: int = 32) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.path = Path(path)
        meta_file = self.path / META_FILE
        if not meta_file.is_file():
            raise ModelSourceError(f"{self.path}: no {META_FILE}; expected a folder saved by `python train.py "
                                   "recipe=distill_<stage>`")
        self.meta = json.loads(meta_file.read_text())
        self.stage: str = self.meta["stage"]
        self.labels: tuple[str, ...] = tuple(self.meta["labels"])
        self.max_length: int = self.meta["max_length"]
        self.bf16: bool = bool(self.meta["bf16"]) and cpu_bf16()[0]  # emulated bf16 is ~100x slower than fp32
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModelForSequenceClassification.from_pretrained(self.path, dtype=torch.float32).eval()

    def predict_proba(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> list[list[float]]:
        """Class probabilities (in `labels` order) per input; batched by length to spare padding."""
        import torch

        order = sorted(range(len(texts)), key=lambda i: len(texts[i]) + (len(pairs[i]) if pairs else 0))
        out: list[list[float] | None] = [None] * len(texts)
        autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16)
        with torch.inference_mode(), autocast:
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                encoded = self.tokenizer([texts[i] for i in batch], [pairs[i] for i in batch] if pairs else None,
                                         truncation=True, max_length=self.max_length, padding=True,
                                         return_tensors="pt")
                probs = self.model(**encoded).logits.float().softmax(-1).tolist()
                for i, row in zip(batch, probs, strict=True):
                    out[i] = row
        return out  # type: ignore[return-value]

    def predict(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """(label, probability) of the most likely class per input."""
        best = []
        for row in self.predict_proba(texts, pairs):
            index = max(range(len(row)), key=row.__getitem__)
            best.append((self.labels[index], row[index]))
        return best
