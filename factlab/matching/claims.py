"""Semantic matching of predicted claims to gold claims: one-to-one, greedy by similarity, above a threshold.

The similarity is the cosine of the retriever's encoder (MiniLM) when one is given, else
`factlab.matching.text.similarity` (token / CJK-bigram F1), each with its own threshold (conf/matcher/claims.yaml).
evaluate.py scores claims with it and optimize.py's extract_claims metric matches with it, so the optimizer maximises
what the evaluation counts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from factlab.matching import text as text_match
from factlab.matching.text import similarity

logger = logging.getLogger(__name__)

Encode = Callable[[list[str]], np.ndarray]


def usable_encode(encoder) -> Encode | None:
    """`encoder.encode` when the encoder works (one probe call), else None (the matcher falls back to lexical
    similarity, with a warning): evaluation must not die because MiniLM's weights are missing."""
    try:
        encoder.encode(["probe"])
    except Exception as exc:  # no weights, no package: lexical matching with its own threshold
        logger.warning("claim matcher: encoder %s unavailable (%s); using text_match.similarity", encoder, exc)
        return None
    return encoder.encode


def greedy_pairs(scores: np.ndarray, threshold: float) -> list[tuple[int, int, float]]:
    """One-to-one pairs (row, column, score) taken best score first, each at least `threshold`, sorted by row.

    >>> greedy_pairs(np.array([[0.9, 0.8], [0.85, 0.1]]), 0.5)
    [(0, 0, 0.9)]
    >>> greedy_pairs(np.array([[0.9, 0.8], [0.95, 0.1]]), 0.5)
    [(0, 1, 0.8), (1, 0, 0.95)]
    >>> greedy_pairs(np.zeros((0, 3)), 0.5)
    []
    """
    rows, cols = scores.shape
    scored = ((float(scores[i, j]), i, j) for i in range(rows) for j in range(cols))
    return [(i, j, round(score, 4)) for i, j, score in text_match.greedy_pairs(scored, threshold)]


class ClaimMatcher:
    """Match predicted claims to gold claims.

    Args:
        threshold: encoder cosine at which a predicted claim counts as the gold claim.
        lexical_threshold: `text_match.similarity` at which it counts, when no encoder is given (or it fails).
        encode: texts -> L2-normalised rows (the retriever's `encoder.encode`); None = lexical similarity.
    """

    def __init__(self, threshold: float, lexical_threshold: float, encode: Encode | None = None) -> None:
        for name, value in (("threshold", threshold), ("lexical_threshold", lexical_threshold)):
            if not 0.0 < float(value) <= 1.0:
                raise ValueError(f"matcher.{name} must be in (0, 1], got {value!r} (conf/evaluate.yaml)")
        self.threshold, self.lexical_threshold, self.encode = float(threshold), float(lexical_threshold), encode
        self._cache: dict[str, np.ndarray] = {}

    @property
    def active_threshold(self) -> float:
        return self.threshold if self.encode is not None else self.lexical_threshold

    def scores(self, gold: Sequence[str], pred: Sequence[str]) -> np.ndarray:
        """Similarity matrix (gold x pred)."""
        gold, pred = list(gold), list(pred)
        if not gold or not pred:
            return np.zeros((len(gold), len(pred)), dtype=np.float32)
        if self.encode is None:
            return np.array([[similarity(g, p) for p in pred] for g in gold], dtype=np.float32)
        missing = [t for t in dict.fromkeys(gold + pred) if t not in self._cache]
        if missing:
            for text, row in zip(missing, np.asarray(self.encode(missing), dtype=np.float32), strict=True):
                self._cache[text] = row
        g = np.stack([self._cache[t] for t in gold])
        p = np.stack([self._cache[t] for t in pred])
        return np.clip(g @ p.T, 0.0, 1.0)

    def match(self, gold: Sequence[str], pred: Sequence[str]) -> list[tuple[int, int, float]]:
        """One-to-one (gold index, pred index, similarity) pairs at or above the active threshold."""
        return greedy_pairs(self.scores(gold, pred), self.active_threshold)

    def best(self, text: str, candidates: Sequence[str]) -> tuple[int | None, float]:
        """The most similar candidate's index and similarity (None, 0.0 when there is none)."""
        if not candidates:
            return None, 0.0
        row = self.scores([text], candidates)[0]
        index = int(np.argmax(row))
        return index, round(float(row[index]), 4)

    def same(self, a: str, b: str) -> bool:
        """Whether two texts count as the same claim."""
        return bool(self.match([a], [b]))
