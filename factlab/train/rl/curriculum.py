"""A curriculum for the search-checker RL: the train rows whose answer one search can find come first.

A policy that has never searched cannot learn that searching pays if its first searches find nothing: the reward's
search half is earned, but the verdict stays a guess. So the curriculum (`recipe.curriculum`) sorts the train rows
by how hard the search is, measured once with the job's own retriever before training:

- `one_search`: the claim's own text, searched once with the recipe's `topk`, returns a gold chunk, and the claim
  is not multi-hop. One search is enough to see the decisive evidence.
- `no_gold`: a claim with no gold chunk ids (unverifiable, or public sets that give none): its reward is the verdict
  alone.
- `hard`: the rest (multi-hop, or one search misses the gold chunk).

`order="one_search_first"` keeps every row, easiest level first (train without shuffling, so the order holds), the
rows of a level in a seeded random order: the split is written sorted by case id, so a level kept in that order
starts with one language's claims (the 16-step run of 2026-12-05 trained on 14 English claims, then 2 Chinese ones);
`order="one_search_only"` keeps the one-search rows alone. Both recipes can use it; the CPU recipe does
(conf/recipe/grpo_search_cpu.yaml `curriculum`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence

LEVELS: tuple[str, ...] = ("one_search", "no_gold", "hard")
ORDERS: tuple[str, ...] = ("none", "one_search_first", "one_search_only")


def row_level(row: dict, search: Callable[[str, str, int], list[str]], topk: int) -> str:
    """The curriculum level of one VERL row.

    Args:
        row: a row of `factlab.train.rl.data.verl_rows`.
        search: (query, corpus key, k) -> chunk ids found.
        topk: hits per search, as the policy's tool returns them.

    >>> row = {"extra_info": {"claim": "c", "multi_hop": False, "tools_kwargs": {"search": {"create_kwargs":
    ...        {"corpus": "k"}}}}, "reward_model": {"ground_truth": {"chunk_ids": ["s#p1-c1"]}}}
    >>> row_level(row, lambda q, corpus, k: ["s#p1-c1"], 3), row_level(row, lambda q, corpus, k: ["t#p1-c1"], 3)
    ('one_search', 'hard')
    """
    info, truth = row["extra_info"], row["reward_model"]["ground_truth"]
    gold = set(truth.get("chunk_ids") or [])
    if not gold:
        return "no_gold"
    if info.get("multi_hop"):
        return "hard"
    corpus = info["tools_kwargs"]["search"]["create_kwargs"]["corpus"]
    return "one_search" if gold & set(search(info["claim"], corpus, topk)) else "hard"


def order_rows(rows: Sequence[dict], search: Callable[[str, str, int], list[str]], topk: int,
               order: str, seed: int = 0) -> tuple[list[dict], dict[str, int]]:
    """The train rows in curriculum order, each with `extra_info.curriculum` set, and the count per level.

    Args:
        rows: the train rows.
        search: (query, corpus key, k) -> chunk ids found.
        topk: hits per search.
        order: one of ORDERS (`none`: unchanged, no search).
        seed: the order of the rows within a level (a seeded shuffle; the job's seed).

    Raises:
        ValueError: an unknown order, or `one_search_only` with no one-search row.

    >>> rows = [{"extra_info": {"claim": c, "multi_hop": False, "tools_kwargs": {"search": {"create_kwargs":
    ...          {"corpus": "k"}}}}, "reward_model": {"ground_truth": {"chunk_ids": [c + "#p1-c1"]}}} for c in "ab"]
    >>> found = lambda q, corpus, k: ["b#p1-c1"]
    >>> ordered, counts = order_rows(rows, found, 3, "one_search_first")
    >>> [r["extra_info"]["claim"] for r in ordered], counts
    (['b', 'a'], {'one_search': 1, 'no_gold': 0, 'hard': 1})
    """
    if order not in ORDERS:
        raise ValueError(f"recipe.curriculum.order={order!r}: expected one of {', '.join(ORDERS)}")
    if order == "none":
        return list(rows), {}
    levelled = [{**row, "extra_info": {**row["extra_info"], "curriculum": row_level(row, search, topk)}}
                for row in rows]
    counts = Counter(row["extra_info"]["curriculum"] for row in levelled)
    random.Random(seed).shuffle(levelled)  # within a level: mixed languages and cases, the same for the same seed
    rank = {level: index for index, level in enumerate(LEVELS)}
    ordered = sorted(levelled, key=lambda row: rank[row["extra_info"]["curriculum"]])  # stable: keeps the shuffle
    if order == "one_search_only":
        ordered = [row for row in ordered if row["extra_info"]["curriculum"] == "one_search"]
        if not ordered:
            raise ValueError("recipe.curriculum.order=one_search_only: no train claim's gold chunk is found by one "
                             f"search of its own text (top {topk}); use one_search_first or a larger topk")
    return ordered, {level: counts.get(level, 0) for level in LEVELS}


def retriever_search(retrievers: dict) -> Callable[[str, str, int], list[str]]:
    """(query, corpus key, k) -> chunk ids, over the job's retrievers (`factlab.train.rl.setup.job_retrievers`)."""
    from factlab.train.rl.retrieval import search_hits

    def search(query: str, corpus: str, k: int) -> list[str]:
        return [hit["chunk_id"] for hit in search_hits(retrievers[corpus], query, k)]

    return search
