"""Rank fusion and lexical relevance: pure functions over rankings and token lists.

>>> reciprocal_rank_fusion([["a", "b", "c"], ["b", "a"]], k=60)["b"] > reciprocal_rank_fusion([["a"]], k=60)["a"]
True
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence


def reciprocal_rank_fusion(rankings: Iterable[Sequence[Hashable]], k: int) -> dict[Hashable, float]:
    """Fuse rankings (best first) into one score per item: the sum of 1 / (k + rank), ranks from 1.

    Args:
        rankings: each a sequence of item ids, best first; an item absent from a ranking gets nothing from it.
        k: the RRF constant; larger k flattens the advantage of top ranks (60 is the usual choice).

    Returns:
        item -> fused score (higher is better), not sorted.

    >>> fused = reciprocal_rank_fusion([["x", "y"], ["y", "z"]], k=1)
    >>> sorted(fused.items(), key=lambda item: -item[1])
    [('y', 0.8333333333333333), ('x', 0.5), ('z', 0.3333333333333333)]
    """
    fused: dict[Hashable, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return fused


def inverse_document_frequencies(documents: Iterable[Iterable[str]]) -> tuple[dict[str, float], int]:
    """Smoothed IDF `log((N + 1) / (df + 0.5))` of every token, and N, for IDF-weighted coverage.

    >>> idf, n = inverse_document_frequencies([["a", "b"], ["a"]])
    >>> n, round(idf["a"], 3), round(idf["b"], 3)
    (2, 0.182, 0.693)
    """
    frequencies: dict[str, int] = {}
    count = 0
    for tokens in documents:
        count += 1
        for token in set(tokens):
            frequencies[token] = frequencies.get(token, 0) + 1
    return {token: math.log((count + 1) / (df + 0.5)) for token, df in frequencies.items()}, count


def lexical_coverage(query_tokens: Iterable[str], doc_tokens: set[str], idf: Mapping[str, float], n_docs: int) -> float:
    """IDF-weighted share of the query's distinct tokens found in the document, in [0, 1].

    Tokens unknown to the corpus weigh as if they occurred in no document, so a query about something the
    corpus never mentions scores low even when its common words match.

    >>> idf, n = inverse_document_frequencies([["penicillin", "fleming"], ["penicillin", "mould"], ["bank"]])
    >>> round(lexical_coverage(["penicillin", "fleming"], {"penicillin", "fleming"}, idf, n), 2)
    1.0
    >>> round(lexical_coverage(["penicillin", "fleming"], {"penicillin", "mould"}, idf, n), 2)
    0.32
    """
    unknown = math.log((n_docs + 1) / 0.5)
    distinct = set(query_tokens)
    total = sum(idf.get(token, unknown) for token in distinct)
    if total <= 0:
        return 0.0
    return sum(idf.get(token, unknown) for token in distinct if token in doc_tokens) / total
