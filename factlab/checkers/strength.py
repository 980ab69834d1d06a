"""The logic layer's model path for a correlation told as a cause: a sentence that asserts a DIRECT cause (the shipped
causal-strength head, `factlab:causal-strength-e5s-v1`, trained on public science sentences: docs/layers.md) in a
document whose design, as stated just before it, is observational (the rules' correlational-design cues: a survey,
a cohort, records, an association) with no experiment stated (the rules' experimental cues).

Why both: the design words are few and precise (a rule reads them well), while a causal conclusion can be phrased in
ways no verb list holds ("cutting screen time will lift grades"); the head reads the sentence's meaning. It was
trained on English alone: Chinese (e5 is multilingual) would be zero-shot, was measured, and is off by default
(`languages`). A hedged sentence (the rules' hedge cues: may, suggests, 可能) is never a finding. Text is untrusted:
it is only classified and matched, never followed.
"""

from __future__ import annotations

from collections.abc import Sequence

from factlab.matching.segment import sentence_spans
from factlab.matching.text import content_containment
from factlab.rules.logic import LogicIssue, LogicRules
from factlab.schema import detect_language


def head_from(ref: object) -> object:
    """A shipped or trained head as a classifier, loaded on first use: a string is a model reference (factlab:<name>,
    a head folder, an MLflow URI); anything else (a loaded classifier, a test's stand-in) is returned as it is."""
    if isinstance(ref, str):
        from factlab.judge.heads import HeadClassifier
        from factlab.tracking.refs import resolve_model

        return HeadClassifier(resolve_model(ref))
    return ref


def sentences(paragraph: str) -> list[str]:
    """The paragraph's sentences (`factlab.matching.segment.sentence_spans`: decimals and abbreviations kept whole).

    >>> sentences("Tea cut risk by 1.5 points. 喝茶有益。 ")
    ['Tea cut risk by 1.5 points.', '喝茶有益。']
    """
    return [paragraph[start:end] for start, end in sentence_spans(paragraph)]


PREMISES = ("design", "model", "either")


class StrengthOverclaim:
    """`causal_overclaim` findings from the causal-strength head plus the rules' design cues.

    Args:
        model: a causal-strength classifier (`predict_proba`, `labels` with `direct_causal`): the shipped head by
            default (`factlab:causal-strength-e5s-v1`, loaded on first use).
        rules: the cue-word rules whose `correlational`, `experimental` and `hedge` cues give premise and hedge.
        min_prob: the head's probability of `direct_causal` a sentence needs.
        window: paragraphs before this one whose sentences may hold the design premise (1 = the one just before, as
            the rules: a design five paragraphs up is another topic; on the long bundled report the whole document
            as the window raised four false alarms); None = the whole document before.
        min_overlap: the share of the sentence's content words (CJK bigrams) the design sentence must hold
            (`factlab.matching.text.content_containment`): the premise must be about the same thing.
        languages: the paragraph languages (`factlab.schema.detect_language`) the path runs on; the head was trained
            on English only, and read zero-shot in Chinese it raised 6 flags, none right, on the independent gold
            (docs/layers.md), so the default is English.
        premise: what makes an earlier sentence the premise. `design` (the default): the rules' observational-design
            cues. `model`: the head itself reads it as `correlational` (an association reported, whatever the words),
            so the finding is a conclusion asserting more causal strength than the result it rests on, as the
            exaggeration data frames it (strength(conclusion) > strength(premise)). `either`: both.
    """

    def __init__(self, model: object | str = "factlab:causal-strength-e5s-v1", rules: LogicRules | None = None,
                 min_prob: float = 0.5, window: int | None = 1, min_overlap: float = 0.0,
                 languages: Sequence[str] = ("en",), premise: str = "design") -> None:
        if premise not in PREMISES:
            raise ValueError(f"conf/logic: strength.premise must be one of {', '.join(PREMISES)}, got {premise!r}")
        self.premise = premise
        if not 0.0 <= float(min_prob) <= 1.0:
            raise ValueError(f"conf/logic: strength.min_prob must be in [0, 1], got {min_prob}")
        if window is not None and int(window) < 0:
            raise ValueError(f"conf/logic: strength.window must be >= 0 paragraphs (or null), got {window}")
        self._model, self.rules, self.min_prob = model, rules or LogicRules(), float(min_prob)
        self.window = None if window is None else int(window)
        if not 0.0 <= float(min_overlap) <= 1.0:
            raise ValueError(f"conf/logic: strength.min_overlap must be in [0, 1], got {min_overlap}")
        self.min_overlap = float(min_overlap)
        self.languages = tuple(str(language) for language in languages)

    @property
    def model(self):
        self._model = head_from(self._model)
        return self._model

    def direct_cause(self, texts: Sequence[str]) -> list[float]:
        """P(direct_causal) of each text."""
        return [row[0] for row in self.read(texts)]

    def read(self, texts: Sequence[str]) -> list[tuple[float, str]]:
        """(P(direct_causal), the argmax class) of each text."""
        if not texts:
            return []
        labels = list(self.model.labels)
        column = labels.index("direct_causal")
        out = []
        for row in self.model.predict_proba(list(texts)):
            row = list(row)
            out.append((row[column], labels[max(range(len(row)), key=row.__getitem__)]))
        return out

    def check(self, paragraphs: Sequence[str], index: int) -> list[LogicIssue]:
        """At most one finding for paragraph `index`: its first unhedged sentence the head reads as a direct cause,
        when a premise (`premise`: an observational design, or a sentence the head reads as correlational) was
        stated before it (in the `window` paragraphs before or earlier in this one) and no experiment is stated in
        the window or anywhere in this paragraph."""
        if detect_language(paragraphs[index]) not in self.languages:
            return []
        first = 0 if self.window is None else max(0, index - self.window)
        cues = self.rules.cue
        # (paragraph, sentence, correlational-design cue, experimental cue) in document order, each cue read once
        context = [(where, sentence, bool(cues("correlational", sentence)), bool(cues("experimental", sentence)))
                   for where in range(first, index + 1) for sentence in sentences(paragraphs[where])]
        own_start = sum(where < index for where, *_ in context)
        # an experiment stated anywhere in the window, this paragraph included, clears it: a study's design is a
        # property of the study, whichever sentence names it ("Here we generated knockout mice", after the result)
        if any(exp for _, _, _, exp in context):
            return []
        by_model = self.premise in ("model", "either")
        # the head's reading of every earlier sentence (a premise by meaning) and of this paragraph's; design only:
        # just the candidate conclusions, read below
        readings = self.read([c[1] for c in context]) if by_model else None
        premise_ok = [(cue and self.premise != "model") or (by_model and readings[i][1] == "correlational")
                      for i, (_, _, cue, _) in enumerate(context)]
        candidates = []
        for position in range(own_start, len(context)):
            _, sentence, correlational, _ = context[position]
            if not (correlational or cues("hedge", sentence)):
                premise = next(((i, p, s) for i, (p, s, _, _) in enumerate(context[:position])
                                if premise_ok[i] and content_containment(sentence, s) >= self.min_overlap), None)
                if premise is not None:
                    candidates.append((position, sentence, premise))
        if readings is None:
            probs = self.direct_cause([c[1] for c in candidates])
        else:
            probs = [readings[c[0]][0] for c in candidates]
        for (_, sentence, (i, where, premise)), p in zip(candidates, probs, strict=True):
            if p >= self.min_prob:
                why = ("an observational design" if context[i][2] and self.premise != "model"
                       else "a result it reads as correlational")
                return [LogicIssue("causal_overclaim", sentence, f"stated as a direct cause (model p {p:.2f}) on {why}",
                                   premise, None if where == index else where)]
        return []
