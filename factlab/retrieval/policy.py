"""How search hits of several authority tiers become the top k: the tier policy (`retrieval.search.policy`).

- `tier_first` (the seed's letter): search tier 1 alone, relax to tiers <= 2, then all, stopping at the first level
  with `min_evidence` hits; the hits are ordered by tier, then rank. A level that stops early drops every lower-tier
  chunk the rankers found, however relevant (measured: the bundled corpus lost 0.06-0.32 of recall@5 this way).
- `prefer_tier`: rank every tier together, take the `band` best hits by fused rank (band >= k), then order them by
  tier, then rank, and keep k. With band == k the top k are the rankers' own (recall unchanged) and the top hit is the
  highest tier among them; a wider band lets a higher-tier hit from deeper in the ranking displace a lower-tier one.

Both keep the relevance cut (`min_relevance`: a chunk below it is no evidence). Which is the default is measured in
`benchmarks/tier_policy.py` (docs/retrieval.md).

>>> tiers = {0: 3, 1: 1, 2: 2, 3: 1}
>>> fused = {0: 0.9, 2: 0.8, 1: 0.7, 3: 0.1}
>>> prefer_tier(fused, tiers, k=2, band=2)
[2, 0]
>>> prefer_tier(fused, tiers, k=2, band=3)
[1, 2]
"""

from __future__ import annotations

from collections.abc import Mapping

POLICIES = ("tier_first", "prefer_tier")


def relevance_cut(min_relevance: float | Mapping[str, float], text: str) -> float:
    """The relevance a hit needs for a query in the language of `text`: `min_relevance` is one number, or one per
    language (`factlab.schema.detect_language` codes; `default` for the others). A query the encoder does not cover
    is ranked by its words alone (factlab.retrieval.encoders.covers), so its relevance runs lower: hence a cut per
    language, each fitted on the bundled train split (benchmarks/tier_policy.py).

    >>> relevance_cut({"en": 0.47, "zh": 0.33}, "青霉素于1928年被发现"), relevance_cut(0.5, "Penicillin")
    (0.33, 0.5)
    """
    if isinstance(min_relevance, Mapping):
        from factlab.schema import detect_language

        language = detect_language(text)
        return float(min_relevance[language] if language in min_relevance else min_relevance["default"])
    return float(min_relevance)


def check_relevance(min_relevance, field: str = "retrieval.search.min_relevance") -> float | dict[str, float]:
    """`retrieval.search.min_relevance` (or another relevance cut, named by `field`) checked: a number in [0, 1], or a
    mapping of language -> such a number that names `en`, `zh` or `default` for each language it may meet.

    >>> check_relevance({"en": 0.5, "zh": 2})
    Traceback (most recent call last):
    ...
    ValueError: retrieval.search.min_relevance.zh: expected a number in [0, 1], got 2
    """
    if isinstance(min_relevance, Mapping):
        out = {str(k): float(v) for k, v in min_relevance.items()}
        for language, value in out.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{field}.{language}: expected a number in [0, 1], got {min_relevance[language]}")
        if "default" not in out and not {"en", "zh"} <= set(out):
            raise ValueError(f"{field}: a per-language mapping needs en and zh, or default")
        return out
    if not 0.0 <= float(min_relevance) <= 1.0:
        raise ValueError(f"{field}: expected a number in [0, 1], got {min_relevance}")
    return float(min_relevance)


def weak_below(strong_relevance: float | Mapping[str, float] | None, text: str) -> float:
    """The relevance under which a hit is `weak` evidence for a query in the language of `text` (0.0 when
    `strong_relevance` is None: no hit is weak). A weak hit is shown and judged, but the business rules never let
    it contradict a claim (factlab/rules/business.py, step 1): the cut for recall and the cut for deciding are two
    numbers (docs/retrieval.md, "Two cuts: one for recall, one for deciding").

    >>> weak_below({"en": 0.5, "zh": 0.165}, "Penicillin was found in 1928"), weak_below(None, "x")
    (0.5, 0.0)
    """
    return 0.0 if strong_relevance is None else relevance_cut(strong_relevance, text)


def check_policy(policy: str, band: int | None) -> None:
    """A clear error for an unknown policy or a band below 1.

    >>> check_policy("newest_first", None)
    Traceback (most recent call last):
    ...
    ValueError: retrieval.search.policy: expected one of tier_first, prefer_tier, got 'newest_first'
    """
    if policy not in POLICIES:
        raise ValueError(f"retrieval.search.policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
    if band is not None and int(band) < 1:
        raise ValueError(f"retrieval.search.band: expected a positive number of hits (or null = k), got {band}")


def prefer_tier(fused: Mapping[int, float], tiers: Mapping[int, int], k: int, band: int | None = None,
                relevance: Mapping[int, float] | None = None, margin: float | None = None) -> list[int]:
    """The `band` best rows by fused score (ties by row), reordered by (tier, -score), cut to k.

    With a `margin`, only the rows whose relevance is within `margin` of the best row's are ordered by tier (authority
    first among the equally relevant); the others follow in fused order.

    Args:
        fused: row -> fused score (higher is better) of the rows that passed the relevance cut.
        tiers: row -> authority tier (1 is highest).
        k: rows returned at most.
        band: rows considered (None = k; raised to k when smaller).
        relevance: row -> relevance in [0, 1] (needed with a margin).
        margin: None = every row in the band is ordered by tier.

    >>> prefer_tier({0: 0.9, 1: 0.8}, {0: 3, 1: 1}, k=2, relevance={0: 0.9, 1: 0.5}, margin=0.1)
    [0, 1]
    """
    band = max(k, band or k)
    best = sorted(fused, key=lambda row: (-fused[row], row))[:band]
    if margin is None or relevance is None or not best:
        return sorted(best, key=lambda row: (tiers[row], -fused[row], row))[:k]
    top = max(relevance[row] for row in best)
    return sorted(best, key=lambda row: (0 if relevance[row] >= top - margin else 1,
                                         tiers[row] if relevance[row] >= top - margin else 0, -fused[row], row))[:k]


def tier_first_order(hits: list[int], fused: Mapping[int, float], tiers: Mapping[int, int], k: int) -> list[int]:
    """The hits of the level where `tier_first` stopped, by (tier, -score), cut to k.

    >>> tier_first_order([0, 1], {0: 0.9, 1: 0.5}, {0: 2, 1: 1}, k=5)
    [1, 0]
    """
    return sorted(hits, key=lambda row: (tiers[row], -fused[row], row))[:k]
