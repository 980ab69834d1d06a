"""Claims without an LM: a check-worthy sentence becomes its claim, decontextualised deterministically, and the guard
that keeps every checker's claims grounded in their own paragraph.

What the deterministic path does (`sentence_claim`):
- a sentence opening with a pronoun ("It", "They", "Its", 它, 其, 该药 ...) gets the subject of the paragraph's
  first sentence in its place ("Aspirin is a drug. It reduces fever." -> "Aspirin reduces fever.");
- "that year" / "the same year" / 同年 / 当年 gets the year the sentence before it named;
- anything else stays the sentence, verbatim.

What it loses against the LM extraction (measured in docs/checkers.md): a compound sentence stays one claim (the LM
splits "A rose 5% and B fell 3%" into two); a pronoun in mid-sentence, a subject named only in an earlier paragraph
and a place carried implicitly are not resolved; nothing is paraphrased into a standalone statement.

The grounding guard (`factlab.matching.text.grounded`) is applied to the claims of every checker: a claim whose
content words are mostly not in its paragraph (it restates an earlier paragraph, or the context summary an LM was
shown) is dropped, never checked as if the paragraph said it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import dspy

from factlab.matching.segment import sentence_spans
from factlab.matching.text import grounded

_EN_PRONOUN = re.compile(r"^(It|They|He|She|This|These|Its|Their|His|Her)\b\s*")
_EN_IMPERSONAL = re.compile(r"^(It|This)\s+(is|was|has been|had been|seems|appears)\s+(\w+\s+)?(that|to|not)\b", re.I)
_EN_VERB = re.compile(r"\s(is|are|was|were|has|have|had|can|could|will|would|may|might|must|should|does|did|do|"
                      r"reduces?|reduced|increases?|increased|causes?|caused|shows?|showed|found|reported|became|"
                      r"makes?|made|remains?|remained|contains?|contained|uses?|used|lowers?|lowered|raises?|"
                      r"raised|improves?|improved|affects?|affected|works?|worked|rose|fell|grew|won|led|"
                      r"developed|discovered|invented|founded|published|announced|launched|opened)\b")
_ZH_PRONOUN = re.compile(r"^(它们|他们|她们|它|他|她|其|该药|此药)")
_ZH_VERB = re.compile(r"(是|为|于|在|由|被|已|将|可|能|会|使|把|对|有|从|自|曾|并|也|还|研究|发现|显示|表明|成立|发布)")
_EN_SAME_YEAR = re.compile(r"\b(that|the same) year\b", re.I)
_ZH_SAME_YEAR = re.compile(r"(同年|当年)")
_YEAR = re.compile(r"(?<![\d.,])(1[5-9]\d\d|20\d\d)(?![\d]|[.,]\d)")  # not part of 1935.3 or 1,935
_ZH_YEAR = re.compile(r"(?<![\d.,])(1[5-9]\d\d|20\d\d)(?=\s*年)")  # 同年 takes a year written as a year: 2024年
MAX_SUBJECT_CHARS = 60


def sentences(text: str) -> list[str]:
    """The sentences of a text, stripped.

    >>> sentences("Aspirin is a drug. It reduces fever.")
    ['Aspirin is a drug.', 'It reduces fever.']
    """
    return [text[a:b].strip() for a, b in sentence_spans(text) if text[a:b].strip()]


def subject(sentence: str) -> str | None:
    """The subject noun phrase a sentence opens with (the words before its first verb), or None.

    >>> subject("Aspirin is a widely used drug."), subject("The X1 phone was launched in 2019.")
    ('Aspirin', 'The X1 phone')
    >>> subject("阿司匹林是一种常用药物。"), subject("It rains.")
    ('阿司匹林', None)
    """
    if _EN_PRONOUN.match(sentence) or _ZH_PRONOUN.match(sentence):
        return None
    match = _EN_VERB.search(sentence)
    if match and re.match(r"[A-Za-z0-9]", sentence):
        found = sentence[:match.start()].strip(" ,")
    else:
        match = _ZH_VERB.search(sentence)
        found = sentence[:match.start()].strip(" ，,") if match and match.start() > 0 else ""
    if not found or len(found) > MAX_SUBJECT_CHARS or re.search(r"[,，;；:：]", found):
        return None
    return found


def sentence_claim(sentence: str, before: Sequence[str]) -> tuple[str, str]:
    """The claim a sentence states, decontextualised from the sentences `before` it in its paragraph, and what was
    done ("" when the sentence is the claim as it stands).

    >>> sentence_claim("It reduces fever in adults.", ["Aspirin is a widely used drug."])
    ('Aspirin reduces fever in adults.', 'pronoun It -> Aspirin')
    >>> sentence_claim("Its patent expired that year.", ["Aspirin was patented in 1900.", "Bayer sold it."])
    ("Aspirin's patent expired in 1900.", "pronoun Its -> Aspirin's; that year -> 1900")
    >>> sentence_claim("它可以降低发烧。", ["阿司匹林是一种常用药物。"])
    ('阿司匹林可以降低发烧。', 'pronoun 它 -> 阿司匹林')
    >>> sentence_claim("It is likely that prices rise.", ["Oil is scarce."])
    ('It is likely that prices rise.', '')
    """
    claim, done = sentence, []
    found = next((s for s in (subject(b) for b in before) if s), None)
    en, zh = _EN_PRONOUN.match(claim), _ZH_PRONOUN.match(claim)
    if found and en and not _EN_IMPERSONAL.match(claim):
        word = en.group(1)
        replacement = f"{found}'s" if word in ("Its", "Their", "His", "Her") else found
        claim = replacement + " " + claim[en.end():]
        done.append(f"pronoun {word} -> {replacement}")
    elif found and zh:
        word = zh.group(1)
        replacement = found + "的" if word == "其" else found
        claim = replacement + claim[zh.end():]
        done.append(f"pronoun {word} -> {replacement}")
    years = [y for b in before for y in _YEAR.findall(b)]
    zh_years = [y for b in before for y in _ZH_YEAR.findall(b)]
    if years and _EN_SAME_YEAR.search(claim):
        claim = _EN_SAME_YEAR.sub(f"in {years[-1]}", claim, count=1).replace(" in in ", " in ")
        done.append(f"that year -> {years[-1]}")
    elif zh_years and _ZH_SAME_YEAR.search(claim):
        claim = _ZH_SAME_YEAR.sub(f"{zh_years[-1]}年", claim, count=1)
        done.append(f"同年 -> {zh_years[-1]}")
    return claim, "; ".join(done)


def sentence_claims(rows: Sequence[str], worthy: Sequence[bool] | None = None,
                    before: Sequence[str] = ()) -> list[tuple[int, str, str]]:
    """(index, claim, what was done) for each worthy sentence of `rows`, decontextualised from every sentence before
    it (`before`, then the earlier rows, worthy or not).

    >>> sentence_claims(["Aspirin is a drug.", "I love it.", "It reduces fever."], [False, False, True])
    [(2, 'Aspirin reduces fever.', 'pronoun It -> Aspirin')]
    """
    seen, out = list(before), []
    for index, sentence in enumerate(rows):
        if worthy is None or worthy[index]:
            out.append((index, *sentence_claim(sentence, seen)))
        seen.append(sentence)
    return out


class SentenceClaims(dspy.Module):
    """The extract_claims stage without an LM: every sentence of the text becomes its claim, decontextualised from
    the sentences before it (`sentence_claims`). `paragraph` is the text to take claims from; `context` (the text
    before it in the paragraph, or "") supplies subjects and years."""

    def forward(self, paragraph: str, context: str = "") -> dspy.Prediction:
        return dspy.Prediction(claims=[c for _, c, _ in sentence_claims(sentences(paragraph),
                                                                         before=sentences(context))])


class GroundedReview(dspy.Module):
    """The review_claims stage without an LM: the claims grounded in the paragraph, in order, duplicates dropped."""

    def __init__(self, min_share: float = 0.5) -> None:
        super().__init__()
        self.min_share = min_share

    def forward(self, paragraph: str, claims: list[str]) -> dspy.Prediction:
        kept = [c for c in dict.fromkeys(claims) if grounded(c, paragraph, self.min_share)]
        return dspy.Prediction(reviewed_claims=kept)


class ClaimQueries(dspy.Module):
    """The query_rewrite stage without an LM: the claim is the query (BM25 + dense retrieval read it as it is)."""

    def forward(self, claim: str) -> dspy.Prediction:
        return dspy.Prediction(queries=[claim])
