"""Stage `vertical`: which business vertical a claim belongs to (drives the risk rules).

    python -m factlab.cli stage vertical --text "The 2021 trial cut stroke risk by 20% in adults over 65."
"""

from __future__ import annotations

from collections.abc import Mapping

import dspy

from factlab.matching.text import as_confidence, pick_choice
from factlab.schema import DEFAULT_VERTICALS
from factlab.untrusted import neutralise


class ClassifyVertical(dspy.Signature):
    """Assign the claim to exactly one vertical (domain) from the allowed list. Use `general` only when no
    other vertical fits. Medical: health, drugs, diseases, clinical trials. Finance: markets, companies,
    economy. Law: statutes, courts, regulation. Disaster: earthquakes, floods, storms, emergencies."""

    claim: str = dspy.InputField()
    vertical: str = dspy.OutputField(desc="one of the allowed verticals")
    confidence: str = dspy.OutputField(desc="a number between 0 and 1")


class VerticalClassifier(dspy.Module):
    """Classify a claim into one configured vertical.

    Args:
        verticals: the allowed verticals. The LM's answer is mapped onto them (small models append format
            notes to a strict Literal and fail to parse; measured on the 0.5B model), and an answer naming
            none of them raises ValueError.
        aliases: words the model answers instead of a vertical, mapped onto one ("health" -> "medical"; the 0.5B
            model answered "health" for 2 of 8 claims in benchmarks/stage_calls.py).
    """

    def __init__(self, verticals: list[str] | tuple[str, ...] = DEFAULT_VERTICALS,
                 aliases: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.verticals = tuple(verticals)
        self.aliases = dict(aliases or {})
        unknown = sorted(v for v in self.aliases.values() if v not in self.verticals)
        if unknown:
            raise ValueError(f"vertical aliases map onto {unknown}, which are not in verticals {list(self.verticals)}")
        signature = ClassifyVertical.with_updated_fields("vertical", desc=f"one of: {', '.join(self.verticals)}")
        self.classify = dspy.Predict(signature)

    def forward(self, claim: str) -> dspy.Prediction:
        pred = self.classify(claim=neutralise(claim))
        return dspy.Prediction(vertical=pick_choice(pred.vertical, self.verticals, self.aliases),
                               confidence=as_confidence(pred.confidence))


def _score(gold: dspy.Example, pred: dspy.Prediction) -> tuple[float, dict]:
    got = str(getattr(pred, "vertical", "")).strip().lower()
    return float(got == gold.vertical), {"expected": gold.vertical, "got": got}


def metric(gold, pred, trace=None, pred_name=None, pred_trace=None) -> dspy.Prediction:
    """Exact-match accuracy on the vertical."""
    score, d = _score(gold, pred)
    feedback = (
        f"Correct vertical {d['expected']!r}."
        if score == 1.0
        else f"Wrong vertical for {gold.claim!r}: expected {d['expected']!r}, got {d['got']!r}."
    )
    return dspy.Prediction(score=score, feedback=feedback)


def to_examples(case: dict) -> list[dspy.Example]:
    """One example per gold claim that has a vertical."""
    return [
        dspy.Example(claim=c["text"], vertical=c["vertical"], case_id=case["case_id"], lang=case["lang"])
        .with_inputs("claim")
        for c in case.get("claims", [])
        if c.get("vertical")
    ]
