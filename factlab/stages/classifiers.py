"""Plug a trained classifier back in as its stage: `stage.<name>.backend=classifier stage.<name>.model=<uri>`.

`load_stage_classifier(stage, model)` (the `classifier._target_` of conf/stage/{judge,checkworthy,vertical,
paragraph_type}.yaml)
returns a dspy.Module whose forward takes the stage program's inputs and answers with the program's output fields,
so the pipeline, evaluate.py and the stage metrics use it unchanged:

    python -m factlab.cli stage judge --text "Penicillin was discovered in 1938." \
        --evidence "Fleming discovered penicillin in 1928." \
        --set stage.backend=classifier stage.model=models:/factlab-distill_judge/1
"""

from __future__ import annotations

from pathlib import Path

import dspy

from factlab.models.classifier import SequenceClassifier
from factlab.programs.checkworthy import CLASSIFIER_LABELS as CHECKWORTHY_LABELS
from factlab.programs.judge import aggregate
from factlab.runtime import ModelSourceError
from factlab.schema import Judgment, StageName
from factlab.tracking.refs import resolve_model


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


class ParagraphTypeModel(dspy.Module):
    """The paragraph_type stage as a classifier."""

    def __init__(self, classifier: SequenceClassifier) -> None:
        super().__init__()
        self.classifier = classifier

    def forward(self, paragraph: str) -> dspy.Prediction:
        kind, p = self.classifier.predict([paragraph])[0]
        return dspy.Prediction(paragraph_type=kind, confidence=p)


_MODULES = {StageName.JUDGE: JudgeClassifier, StageName.CHECKWORTHY: CheckworthyClassifier,
            StageName.VERTICAL: VerticalModel, StageName.PARAGRAPH_TYPE: ParagraphTypeModel}


def load_classifier(folder: Path, batch_size: int = 32, int8: bool = False):
    """The classifier a model folder holds: a judge adapter (`judge.json`, factlab.judge.model.Judge), a head on
    frozen e5 (`head.json`, factlab.judge.heads.HeadClassifier) or a full sequence classifier (SequenceClassifier)."""
    from factlab.judge.heads import HEAD_META, HeadClassifier
    from factlab.judge.model import META_FILE, Judge

    if (Path(folder) / META_FILE).is_file():
        return Judge(folder, int8=int8, batch_size=batch_size)
    if (Path(folder) / HEAD_META).is_file():
        return HeadClassifier(folder, batch_size=batch_size, int8=int8)
    return SequenceClassifier(folder, batch_size=batch_size, int8=int8)


def load_stage_classifier(stage: str, model: str | Path, batch_size: int = 32, int8: bool = False,
                          temperature: float | None = None, support_threshold: float | None = None,
                          **options) -> dspy.Module:
    """The stage `stage` backed by the classifier at `model`.

    Args:
        stage: judge, checkworthy or vertical.
        model: a model folder, `factlab:<name>` (shipped), `models:/<name>/<version>` or `runs:/<run id>/model`.
        batch_size: inputs per forward pass.
        int8: serve with int8 Linear layers (torch dynamic quantisation).
        temperature, support_threshold: override the calibration the model folder carries (None: keep it).
        options: keyword options of the stage module (judge: max_snippets).

    Raises:
        ModelRefError: the model reference leads to no folder (factlab.tracking.refs).
        ModelSourceError: the folder holds no classifier, or one trained for another stage.
    """
    if stage not in _MODULES:
        raise ModelSourceError(f"no classifier backend for stage {stage!r}; expected one of {', '.join(_MODULES)}")
    classifier = load_classifier(resolve_model(model), batch_size=batch_size, int8=int8)
    if classifier.stage != stage:
        raise ModelSourceError(f"model {model!r} was trained for stage {classifier.stage!r}, not {stage!r}; train "
                               f"one with `python train.py recipe=distill_{stage}`")
    for name, value in (("temperature", temperature), ("support_threshold", support_threshold)):
        if value is not None:
            if not hasattr(classifier, name):
                raise ModelSourceError(f"model {model!r} has no {name} to override")
            setattr(classifier, name, float(value))
    return _MODULES[stage](classifier, **options)
