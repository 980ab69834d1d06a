"""Plug a trained classifier back in as its stage: `stage.<name>.backend=classifier stage.<name>.model=<uri>`.

`load_stage_classifier(stage, model)` (the `classifier._target_` of conf/stage/{judge,checkworthy,vertical}.yaml)
returns a dspy.Module whose forward takes the stage program's inputs and answers with the program's output fields,
so the pipeline, evaluate.py and the stage metrics use it unchanged:

    python -m factlab.cli stage judge --text "Penicillin was discovered in 1938." \
        --evidence "Fleming discovered penicillin in 1928." \
        --set stage.backend=classifier stage.model=models:/factlab-distill_judge/1
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import dspy

from factlab.programs.judge import aggregate
from factlab.schema import Judgment
from factlab.train.registry import ModelSourceError, resolve_model
from factlab.train.tasks import CHECKWORTHY_LABELS

META_FILE = "factlab_classifier.json"  # written next to the Hugging Face files by the distill recipes


class SequenceClassifier:
    """A saved classifier folder: Hugging Face model + tokenizer + `factlab_classifier.json` (stage, labels, ...).

    Args:
        path: the folder (a resolved model, see `factlab.train.registry.resolve_model`).
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
        self.bf16: bool = self.meta["bf16"]
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


class JudgeClassifier(dspy.Module):
    """The judge stage as a classifier: one relation per snippet (batched), aggregated like `factlab.programs.judge`.

    Args:
        classifier: a judge SequenceClassifier.
        max_snippets: judge at most this many snippets (the best-ranked first), as the program does.
    """

    def __init__(self, classifier: SequenceClassifier, max_snippets: int = 5) -> None:
        super().__init__()
        self.classifier = classifier
        self.max_snippets = max_snippets

    def forward(self, claim: str, evidence: list[str]) -> dspy.Prediction:
        snippets = list(evidence)[: self.max_snippets]
        judged = self.classifier.predict([claim] * len(snippets), snippets) if snippets else []
        judgments = [Judgment(relation, p, f"classifier p={p:.2f}") for relation, p in judged]
        relation, confidence = aggregate(judgments)
        return dspy.Prediction(judgments=judgments, relation=relation, confidence=confidence)


class CheckworthyClassifier(dspy.Module):
    """The checkworthy stage as a classifier."""

    def __init__(self, classifier: SequenceClassifier) -> None:
        super().__init__()
        self.classifier = classifier

    def forward(self, text: str) -> dspy.Prediction:
        probs = dict(zip(self.classifier.labels, self.classifier.predict_proba([text])[0], strict=True))
        p = probs[CHECKWORTHY_LABELS[1]]
        return dspy.Prediction(checkworthy=p >= 0.5, reason=f"classifier p(checkworthy)={p:.2f}")


class VerticalModel(dspy.Module):
    """The vertical stage as a classifier."""

    def __init__(self, classifier: SequenceClassifier) -> None:
        super().__init__()
        self.classifier = classifier

    def forward(self, claim: str) -> dspy.Prediction:
        vertical, p = self.classifier.predict([claim])[0]
        return dspy.Prediction(vertical=vertical, confidence=p)


_MODULES = {"judge": JudgeClassifier, "checkworthy": CheckworthyClassifier, "vertical": VerticalModel}


def load_stage_classifier(stage: str, model: str | Path, batch_size: int = 32, **options) -> dspy.Module:
    """The stage `stage` backed by the classifier at `model`.

    Args:
        stage: judge, checkworthy or vertical.
        model: a model folder, `models:/<name>/<version>` or `runs:/<run id>/model`.
        batch_size: inputs per forward pass.
        options: keyword options of the stage module (judge: max_snippets).

    Raises:
        ModelSourceError: the model is not found, or was trained for another stage.
    """
    if stage not in _MODULES:
        raise ModelSourceError(f"no classifier backend for stage {stage!r}; expected one of {', '.join(_MODULES)}")
    classifier = SequenceClassifier(resolve_model(model), batch_size=batch_size)
    if classifier.stage != stage:
        raise ModelSourceError(f"model {model!r} was trained for stage {classifier.stage!r}, not {stage!r}; train "
                               f"one with `python train.py recipe=distill_{stage}`")
    return _MODULES[stage](classifier, **options)
