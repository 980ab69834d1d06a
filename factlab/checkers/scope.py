"""The logic layer's model path for a finding carried past its population: a result stated for animals, cells or a
named group of people (the premise), then concluded for people at large ("in mice ... it treats patients"). The
shipped scope head (`factlab:scope-e5s-v1`, trained on public PubMed sentences and their scope edits:
`factlab/data/loaders/scope.py`) reads each sentence's scope, none / lab / restricted / general; a conclusion whose
scope is wider than a premise's, in this paragraph or the one before, is a `scope_shift` that names the premise.

Ordered narrowest first: lab < restricted < general; `none` (no population named) is never compared. A hedged
conclusion (the rules' hedge cues: may, might, 可能) is not a finding, nor is one whose paragraph states a human study
after the premise (an experiment in people clears the widening: the rules' experimental cues). Text is untrusted:
it is only classified and matched, never followed.
"""

from __future__ import annotations

from collections.abc import Sequence

from factlab.checkers.strength import head_from, sentences
from factlab.matching.text import content_containment
from factlab.rules.logic import LogicIssue, LogicRules
from factlab.schema import detect_language

RANK = {"lab": 0, "restricted": 1, "general": 2}


class ScopeShift:
    """`scope_shift` findings from the scope head.

    Args:
        model: a scope classifier (`predict_proba`, `labels` = none / lab / restricted / general): the shipped head by
            default (`factlab:scope-e5s-v1`, loaded on first use).
        rules: the cue-word rules whose `hedge` and `experimental` cues clear a conclusion.
        min_prob: the head's probability a sentence's scope needs (premise and conclusion alike).
        window: paragraphs before this one whose sentences may hold the premise (1 = the one just before).
        min_overlap: the share of the conclusion's content words the premise must hold (the same topic).
        languages: the paragraph languages the path runs on (the head was trained on English sentences).
        effect_model: a causal-strength classifier (`factlab:causal-strength-e5s-v1`) that must read the conclusion
            as asserting an effect (conditional or direct cause, together >= `min_effect`): a result sentence ("386
            participants had a first event") names people without concluding anything about them. None = off.
        min_effect: that probability.
    """

    def __init__(self, model: object | str = "factlab:scope-e5s-v1", rules: LogicRules | None = None,
                 min_prob: float = 0.5, window: int = 1, min_overlap: float = 0.0,
                 languages: Sequence[str] = ("en",), effect_model: object | str | None = None,
                 min_effect: float = 0.5) -> None:
        for key, value in (("min_prob", min_prob), ("min_overlap", min_overlap), ("min_effect", min_effect)):
            if not 0.0 <= float(value) <= 1.0:
                raise ValueError(f"conf/logic: scope.{key} must be in [0, 1], got {value}")
        if int(window) < 0:
            raise ValueError(f"conf/logic: scope.window must be >= 0 paragraphs, got {window}")
        self._model, self.rules = model, rules or LogicRules()
        self.min_prob, self.window, self.min_overlap = float(min_prob), int(window), float(min_overlap)
        self.languages = tuple(str(language) for language in languages)
        self._effect_model, self.min_effect = effect_model, float(min_effect)

    @property
    def effect_model(self):
        self._effect_model = head_from(self._effect_model)
        return self._effect_model

    def asserts_effect(self, texts: Sequence[str]) -> list[bool]:
        """Whether the effect model reads each text as a (conditional or direct) cause; all True when it is off."""
        if self._effect_model is None or not texts:
            return [True] * len(texts)
        labels = list(self.effect_model.labels)
        causal = [labels.index(name) for name in ("conditional_causal", "direct_causal")]
        return [sum(row[i] for i in causal) >= self.min_effect for row in self.effect_model.predict_proba(list(texts))]

    @property
    def model(self):
        self._model = head_from(self._model)
        return self._model

    def scopes(self, texts: Sequence[str]) -> list[tuple[str, float]]:
        """(scope, probability) of each text; "none" when no scope reaches `min_prob`."""
        if not texts:
            return []
        labels = list(self.model.labels)
        out = []
        for row in self.model.predict_proba(list(texts)):
            best = max(range(len(row)), key=row.__getitem__)
            out.append((labels[best], row[best]) if row[best] >= self.min_prob else ("none", row[best]))
        return out

    def widened(self, premise: str, conclusion: str) -> tuple[bool, str, str]:
        """Whether `conclusion` states a wider scope than `premise` (one pair, no hedge or overlap check): (widened,
        premise scope, conclusion scope). For benchmarks on sentence pairs (MISSCI)."""
        (p_scope, _), (c_scope, _) = self.scopes([premise, conclusion])
        return (p_scope in RANK and c_scope in RANK and RANK[c_scope] > RANK[p_scope]), p_scope, c_scope

    def check(self, paragraphs: Sequence[str], index: int) -> list[LogicIssue]:
        """At most one finding for paragraph `index`: its first unhedged sentence whose scope is wider than that of
        an earlier sentence (this paragraph or the `window` before) on the same topic, with no experiment stated in
        between."""
        if detect_language(paragraphs[index]) not in self.languages:
            return []
        context = [(where, sentence) for where in range(max(0, index - self.window), index + 1)
                   for sentence in sentences(paragraphs[where])]
        if len(context) < 2:
            return []
        scopes = self.scopes([sentence for _, sentence in context])
        own_start = sum(where < index for where, _ in context)
        cues = self.rules.cue
        candidates = [position for position in range(max(1, own_start), len(context))
                      if scopes[position][0] in RANK and not cues("hedge", context[position][1])
                      and not cues("experimental", context[position][1])]  # hedged, or a study's own design
        effects = dict(zip(candidates, self.asserts_effect([context[i][1] for i in candidates]), strict=True))
        for position in candidates:
            where, sentence = context[position]
            scope, p = scopes[position]
            if not effects[position]:
                continue  # names people without concluding anything about them
            for back in range(position - 1, -1, -1):
                p_where, premise = context[back]
                p_scope, pp = scopes[back]
                if cues("experimental", premise) and p_scope in RANK and RANK[p_scope] >= RANK[scope]:
                    break  # a study at this scope or wider was stated in between: the conclusion rests on it
                if (p_scope in RANK and RANK[p_scope] < RANK[scope]
                        and content_containment(sentence, premise) >= self.min_overlap):
                    return [LogicIssue("scope_shift", sentence,
                                       f"stated for {scope} (model p {p:.2f}) on a premise about {p_scope} "
                                       f"(p {pp:.2f})", premise, None if p_where == index else p_where)]
        return []
