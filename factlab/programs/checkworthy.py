"""Stage `checkworthy`: is a sentence or claim a checkable statement of fact?

    python -m factlab.cli stage checkworthy --text "青霉素于1928年由弗莱明发现。"
"""

from __future__ import annotations

import dspy

from factlab.untrusted import neutralise

# The classes of this stage as a trained classifier (`recipe=distill_checkworthy`), in the model's output order.
CLASSIFIER_LABELS: tuple[str, str] = ("not_checkworthy", "checkworthy")


class CheckWorthy(dspy.Signature):
    """Decide whether the text states a checkable fact about the world (a number, date, event, finding,
    attribution, or other claim that evidence could confirm or refute). Opinions, subjective evaluations,
    predictions without a source, greetings, questions and instructions are NOT check-worthy.
    The text may be Chinese or English; answer in the text's language."""

    text: str = dspy.InputField(desc="a sentence or a claim")
    checkworthy: bool = dspy.OutputField(desc="true if the text states a checkable fact")
    reason: str = dspy.OutputField(desc="one short sentence: why")


class CheckWorthiness(dspy.Module):
    """Classify one sentence or claim as check-worthy or not."""

    def __init__(self) -> None:
        super().__init__()
        self.classify = dspy.Predict(CheckWorthy)

    def forward(self, text: str) -> dspy.Prediction:
        return self.classify(text=neutralise(text))


def _score(gold: dspy.Example, pred: dspy.Prediction) -> tuple[float, dict]:
    expected, got = bool(gold.checkworthy), bool(getattr(pred, "checkworthy", None))
    return float(expected == got), {"expected": expected, "got": got}


def metric(gold, pred, trace=None, pred_name=None, pred_trace=None) -> dspy.Prediction:
    """Accuracy on the check-worthy flag, with feedback that names the gold reason."""
    score, d = _score(gold, pred)
    if score == 1.0:
        feedback = f"Correct: the text is {'check-worthy' if d['expected'] else 'not check-worthy'}."
    else:
        why = getattr(gold, "reason", "") or ""
        feedback = (
            f"Wrong: expected checkworthy={d['expected']} but got {d['got']} for {gold.text!r}. "
            + (f"Gold reason: {why}. " if why else "")
            + ("Statements of numbers, dates, events, findings and attributions are check-worthy."
               if d["expected"] else "Opinions, evaluations, greetings and instructions are not check-worthy.")
        )
    return dspy.Prediction(score=score, feedback=feedback)


def to_examples(case: dict) -> list[dspy.Example]:
    """One example per gold sentence (`sentences`), plus every gold claim as a positive."""
    rows = [(s["text"], bool(s["checkworthy"]), s.get("reason", "")) for s in case.get("sentences", [])]
    rows += [(c["text"], bool(c.get("checkworthy", True)), "") for c in case.get("claims", [])]
    return [
        dspy.Example(text=text, checkworthy=flag, reason=reason, case_id=case["case_id"], lang=case["lang"])
        .with_inputs("text")
        for text, flag, reason in rows
    ]
