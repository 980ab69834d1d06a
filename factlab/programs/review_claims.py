"""Stage `review_claims`: check drafted claims against their paragraph and return corrected claims.

    python -m factlab.cli stage review_claims --text "<paragraph>" --claims "<claim 1>" "<claim 2>"
"""

from __future__ import annotations

import dspy

from factlab.matching.text import Match, match_sets, match_texts
from factlab.metrics import f1
from factlab.untrusted import neutralise

MATCH_THRESHOLD = 0.6  # similarity at which a reviewed claim counts as the expected one


class ReviewClaims(dspy.Signature):
    """Review claims extracted from the paragraph. For each claim: keep it if the paragraph states exactly
    that; fix it if its subject is wrong, if it lost a qualifier the paragraph states (such as "under
    controlled conditions", "in mice", "仅限上市公司"), or if its time or place is missing; drop it if it
    adds something the paragraph does not say or is an opinion. Return the corrected list, in the
    paragraph's language."""

    paragraph: str = dspy.InputField()
    claims: list[str] = dspy.InputField(desc="drafted claims")
    reviewed_claims: list[str] = dspy.OutputField(desc="kept and fixed claims; dropped ones are omitted")


class ClaimReviewer(dspy.Module):
    """Keep, fix or drop each drafted claim."""

    def __init__(self) -> None:
        super().__init__()
        self.review = dspy.Predict(ReviewClaims)

    def forward(self, paragraph: str, claims: list[str]) -> dspy.Prediction:
        if not claims:
            return dspy.Prediction(reviewed_claims=[])
        pred = self.review(paragraph=neutralise(paragraph), claims=[neutralise(c) for c in claims])
        out = [c.strip() for c in (pred.reviewed_claims or []) if isinstance(c, str) and c.strip()]
        return dspy.Prediction(reviewed_claims=list(dict.fromkeys(out)))


def _score(gold: dspy.Example, pred: dspy.Prediction, match: Match | None = None) -> tuple[float, dict]:
    expected = list(gold.reviewed_claims)
    got = [c for c in (getattr(pred, "reviewed_claims", None) or []) if isinstance(c, str)]
    dropped = list(getattr(gold, "dropped", []) or [])
    kept_bad = [c for c in got if any(match_sets([d], [c], 0.9)[0] for d in dropped)]
    if not expected:
        score = 1.0 if not got else 0.0
        return score, {"missing": [], "extra": got, "kept_bad": kept_bad, "precision": score, "recall": 1.0}
    matches, miss, extra = match_texts(expected, got, match, MATCH_THRESHOLD)
    precision = len(matches) / len(got) if got else 0.0
    recall = len(matches) / len(expected)
    return f1(precision, recall), {
        "missing": [expected[i] for i in miss], "extra": [got[j] for j in extra], "kept_bad": kept_bad,
        "precision": precision, "recall": recall,
    }


def metric(gold, pred, trace=None, pred_name=None, pred_trace=None, match: Match | None = None) -> dspy.Prediction:
    """F1 of reviewed claims vs the gold corrected list; feedback names what should have been fixed or dropped.

    `match(gold, pred) -> [(gold index, pred index, similarity)]` replaces the lexical matching (optimize.py passes
    evaluate.py's claim matcher, `metric.match` in conf/optimize.yaml, as for extract_claims).
    """
    score, d = _score(gold, pred, match)
    parts = [f"Review F1 {score:.2f}."]
    if d["missing"]:
        parts.append("Expected (kept or fixed) but absent: " + " | ".join(d["missing"]))
    if d["kept_bad"]:
        parts.append("Should have been dropped (adds what the paragraph does not say): " + " | ".join(d["kept_bad"]))
    elif d["extra"]:
        parts.append("Not expected (wrong subject, lost qualifier, or unsupported): " + " | ".join(d["extra"]))
    for note in getattr(gold, "notes", []) or []:
        parts.append(note)
    return dspy.Prediction(score=score, feedback=" ".join(parts))


def to_examples(case: dict) -> list[dspy.Example]:
    """One example per case with `review` gold: drafts + gold claims in, kept/fixed claims expected."""
    review = case.get("review") or []
    if not review:
        return []
    # Good gold claims are drafts too: the reviewer must keep them untouched.
    drafts = [c["text"] for c in case.get("claims", []) if c.get("checkworthy", True)]
    expected, dropped, notes = list(drafts), [], []
    for item in review:
        drafts.append(item["draft"])
        if item["action"] == "keep":
            expected.append(item["draft"])
        elif item["action"] == "fix":
            expected.append(item["fixed"])
            notes.append(f"{item['draft']!r} has flaw {item.get('flaw', '?')}: fix to {item['fixed']!r}.")
        else:
            dropped.append(item["draft"])
            notes.append(f"{item['draft']!r} has flaw {item.get('flaw', '?')}: drop it.")
    drafts, expected = list(dict.fromkeys(drafts)), list(dict.fromkeys(expected))
    return [
        dspy.Example(paragraph=case["text"], claims=drafts, reviewed_claims=expected, dropped=dropped, notes=notes,
                     case_id=case["case_id"], lang=case["lang"]).with_inputs("paragraph", "claims")
    ]
