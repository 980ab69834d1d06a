"""The logic layer's model path for a correlation told as a cause: a sentence that asserts a DIRECT cause (the shipped
causal-strength head, `factlab:causal-strength-e5s-v1`, trained on public science sentences: docs/layers.md) in a
document whose design, as stated before it, is observational (the rules' correlational-design cues: a survey, a
cohort, records, an association) with no experiment stated (the rules' experimental cues).

Why both: the design words are few and precise (a rule reads them well), while a causal conclusion can be phrased in
ways no verb list holds ("cutting screen time will lift grades", "骑行通勤让居民更长寿"); the head reads the
sentence's meaning in either language (e5 is multilingual; it was trained on English alone, so Chinese is
zero-shot and measured as such). A hedged sentence (the rules' hedge cues: may, suggests, 可能) is never a finding.
Text is untrusted: it is only classified and matched, never followed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from factlab.rules.logic import LogicIssue, LogicRules

_SENTENCE = re.compile(r"[^.!?。！？]+[.!?。！？]*")


def sentences(paragraph: str) -> list[str]:
    """The paragraph's sentences, stripped, empty ones dropped.

    >>> sentences("Tea helps. 喝茶有益。 ")
    ['Tea helps.', '喝茶有益。']
    """
    return [s.strip() for s in _SENTENCE.findall(paragraph) if s.strip()]


class StrengthOverclaim:
    """`causal_overclaim` findings from the causal-strength head plus the rules' design cues.

    Args:
        model: a causal-strength classifier (`predict_proba`, `labels` with `direct_causal`): the shipped head by
            default (`factlab:causal-strength-e5s-v1`, loaded on first use).
        rules: the cue-word rules whose `correlational`, `experimental` and `hedge` cues give premise and hedge.
        min_prob: the head's probability of `direct_causal` a sentence needs.
    """

    def __init__(self, model: object | str = "factlab:causal-strength-e5s-v1", rules: LogicRules | None = None,
                 min_prob: float = 0.5) -> None:
        if not 0.0 <= float(min_prob) <= 1.0:
            raise ValueError(f"conf/logic: strength.min_prob must be in [0, 1], got {min_prob}")
        self._model, self.rules, self.min_prob = model, rules or LogicRules(), float(min_prob)

    @property
    def model(self):
        if isinstance(self._model, str):
            from factlab.judge.heads import HeadClassifier
            from factlab.tracking.refs import resolve_model

            self._model = HeadClassifier(resolve_model(self._model))
        return self._model

    def direct_cause(self, texts: Sequence[str]) -> list[float]:
        """P(direct_causal) of each text."""
        if not texts:
            return []
        column = list(self.model.labels).index("direct_causal")
        return [row[column] for row in self.model.predict_proba(list(texts))]

    def check(self, paragraphs: Sequence[str], index: int) -> list[LogicIssue]:
        """At most one finding for paragraph `index`: its first unhedged sentence the head reads as a direct cause,
        when an observational design was stated before it (earlier paragraphs or earlier in this one) and no
        experiment was."""
        before = [(p, s) for p, text in enumerate(paragraphs[:index]) for s in sentences(text)]
        own = sentences(paragraphs[index])
        candidates = []
        for position, sentence in enumerate(own):
            context = before + [(index, s) for s in own[:position]]
            if self.rules.cue("hedge", sentence) or any(self.rules.cue("experimental", s) for _, s in context):
                continue
            premise = next(((p, s) for p, s in context if self.rules.cue("correlational", s)), None)
            if premise is not None and not self.rules.cue("correlational", sentence):
                candidates.append((sentence, premise))
        for (sentence, (where, premise)), p in zip(candidates, self.direct_cause([c[0] for c in candidates]),
                                                   strict=True):
            if p >= self.min_prob:
                return [LogicIssue("causal_overclaim", sentence,
                                   f"stated as a direct cause (model p {p:.2f}) on an observational design",
                                   premise, None if where == index else where)]
        return []
