"""Evidence compression: keep the sentences of a chunk most relevant to the claim, within a token budget.

Kept sentences stay in their original order and keep their character offsets. Adjacent kept sentences are
joined by the original text between them; a gap (dropped sentences) is shown as " … ". A chunk that already
fits the budget is returned whole: compression only shortens what is too long.

>>> chunk = "Penicillin was discovered in 1928. The weather was fine. Fleming worked at St Mary's."
>>> snippet = compress(chunk, "Fleming discovered penicillin in 1928", max_tokens=8, offset=100)
>>> snippet.text
'Penicillin was discovered in 1928.'
>>> snippet.start, snippet.end
(100, 134)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from factlab.matching.segment import sentence_spans
from factlab.matching.text import count_tokens
from factlab.retrieval.encoders import Encoder
from factlab.retrieval.tokenizer import content_tokens

GAP = " … "  # shown where dropped sentences were


@dataclass
class Snippet:
    """A compressed piece of a chunk: `spans` are page offsets of each kept sentence, start/end the outer ones."""

    text: str
    start: int
    end: int
    spans: list[tuple[int, int]]


def lexical_overlap(sentence: str, claim_tokens: set[str]) -> float:
    """Share of the claim's content tokens present in the sentence, in [0, 1].

    >>> lexical_overlap("青霉素于1928年被发现", {"青霉素", "1928", "弗莱明"})
    0.6666666666666666
    """
    if not claim_tokens:
        return 0.0
    return len(content_tokens(sentence) & claim_tokens) / len(claim_tokens)


def score_sentences(
    sentences: list[str],
    claim: str,
    *,
    lexical_weight: float,
    encoder: Encoder | None = None,
    claim_vector: np.ndarray | None = None,
) -> list[float]:
    """Relevance of each sentence to the claim: lexical overlap, mixed with cosine similarity given an encoder.

    Args:
        sentences: the candidate sentences.
        claim: the claim being checked.
        lexical_weight: weight of lexical overlap; the cosine gets 1 - lexical_weight (ignored without encoder).
        encoder: when given, sentences (and the claim, unless `claim_vector` is given) are embedded.
        claim_vector: the claim's embedding, to avoid re-encoding it for every chunk.
    """
    claim_tokens = content_tokens(claim)
    lexical = [lexical_overlap(sentence, claim_tokens) for sentence in sentences]
    if encoder is None or not sentences:
        return lexical
    if claim_vector is None:
        claim_vector = encoder.encode([claim])[0]
    cosine = encoder.encode(sentences) @ claim_vector
    return [
        lexical_weight * lex + (1.0 - lexical_weight) * float(cos) for lex, cos in zip(lexical, cosine, strict=True)
    ]


def compress(
    chunk_text: str,
    claim: str,
    *,
    max_tokens: int,
    lexical_weight: float = 0.5,
    encoder: Encoder | None = None,
    claim_vector: np.ndarray | None = None,
    offset: int = 0,
) -> Snippet:
    """Keep the sentences of `chunk_text` most relevant to `claim` within `max_tokens` (see `count_tokens`).

    The best sentence is always kept, even when it alone exceeds the budget (a judge needs whole sentences);
    sentences with no relevance at all are never added.

    Args:
        chunk_text: the chunk, verbatim.
        claim: the claim the evidence is for.
        max_tokens: token budget (CJK characters and latin words count 1 each).
        lexical_weight: weight of lexical overlap against embedding similarity.
        encoder: optional encoder for embedding similarity.
        claim_vector: the claim's embedding when already computed.
        offset: page offset of `chunk_text` (the chunk's `start`), added to every returned offset.

    Returns:
        The snippet; `page_text[span[0]:span[1]]` is each kept sentence verbatim.
    """
    spans = sentence_spans(chunk_text)
    if not spans:
        return Snippet("", offset, offset, [])
    if count_tokens(chunk_text) <= max_tokens:
        start, end = spans[0][0], spans[-1][1]
        return Snippet(chunk_text[start:end], offset + start, offset + end, [(offset + start, offset + end)])
    sentences = [chunk_text[s:e] for s, e in spans]
    scores = score_sentences(
        sentences, claim, lexical_weight=lexical_weight, encoder=encoder, claim_vector=claim_vector
    )
    order = sorted(range(len(spans)), key=lambda i: (-scores[i], i))
    kept, used = [order[0]], count_tokens(sentences[order[0]])
    for index in order[1:]:
        cost = count_tokens(sentences[index])
        if scores[index] > 0 and used + cost <= max_tokens:
            kept.append(index)
            used += cost
    kept.sort()
    pieces = [sentences[kept[0]]]
    for previous, index in zip(kept, kept[1:], strict=False):
        pieces.append(chunk_text[spans[previous][1] : spans[index][0]] if index == previous + 1 else GAP)
        pieces.append(sentences[index])
    kept_spans = [(offset + spans[i][0], offset + spans[i][1]) for i in kept]
    return Snippet("".join(pieces), kept_spans[0][0], kept_spans[-1][1], kept_spans)
