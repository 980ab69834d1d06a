"""Stage `query_rewrite`: claim -> 1..k search queries, with explicit handling of time qualifiers.

    python -m factlab.cli stage query_rewrite --text "2023年中国GDP增长5.2%"
"""

from __future__ import annotations

import re
from collections.abc import Callable

import dspy

from factlab.matching.text import similarity
from factlab.untrusted import neutralise

_YEAR = re.compile(r"(?<!\d)(19|20)\d{2}(?!\d)\s*年?")


class RewriteQueries(dspy.Signature):
    """Write short search queries that would find evidence to confirm or refute the claim. Each query names
    the claim's key entities and the fact to check (a number, a date, an attribution), not the whole claim.
    Use different wordings across queries. Write the queries in the claim's language."""

    claim: str = dspy.InputField()
    max_queries: int = dspy.InputField(desc="write at most this many queries")
    queries: list[str] = dspy.OutputField(desc="search queries, most useful first")


def without_years(query: str) -> str:
    """Drop year mentions so a search can find sources that state the fact without the year.

    >>> without_years("China GDP growth 2023")
    'China GDP growth'
    >>> without_years("2023年中国GDP增长")
    '中国GDP增长'
    """
    return re.sub(r"\s+", " ", _YEAR.sub(" ", query)).strip()


class QueryRewriter(dspy.Module):
    """Rewrite a claim into search queries.

    Args:
        max_queries: the k in 1..k.
        yearless_variant: also search without the year when the claim has one (recall for time-qualified
            facts whose sources state the year elsewhere).
    """

    def __init__(self, max_queries: int = 3, yearless_variant: bool = True) -> None:
        super().__init__()
        self.max_queries = max_queries
        self.yearless_variant = yearless_variant
        self.rewrite = dspy.Predict(RewriteQueries)

    def forward(self, claim: str) -> dspy.Prediction:
        pred = self.rewrite(claim=neutralise(claim), max_queries=self.max_queries)
        queries = [q.strip() for q in (pred.queries or []) if isinstance(q, str) and q.strip()][: self.max_queries]
        if not queries:
            queries = [claim]  # a rewrite that says nothing must not starve retrieval
        if self.yearless_variant and _YEAR.search(claim):
            queries += [without_years(q) for q in queries if _YEAR.search(q)]
        return dspy.Prediction(queries=list(dict.fromkeys(q for q in queries if q)))


FEEDBACK_CHARS = 240  # of a missed evidence chunk shown in the metric's feedback


def _lexical_hits(queries: list[str], evidence: list[dict], threshold: float = 0.25) -> list[str]:
    """Chunk ids of gold evidence that some query overlaps with (the offline stand-in for a retriever)."""
    return [e["chunk_id"] for e in evidence if any(similarity(q, e["text"]) >= threshold for q in queries)]


def _score(gold: dspy.Example, pred: dspy.Prediction,
           retrieve: Callable[[list[str]], list[str]] | None = None) -> tuple[float, dict]:
    queries = [q for q in (getattr(pred, "queries", None) or []) if isinstance(q, str) and q.strip()]
    evidence = list(gold.evidence)
    wanted = [e["chunk_id"] for e in evidence]
    if not queries:
        return 0.0, {"found": [], "missed": wanted, "queries": [], "n_queries": 0}
    found_ids = set(retrieve(queries)) if retrieve else set(_lexical_hits(queries, evidence))
    found = [c for c in wanted if c in found_ids]
    missed = [c for c in wanted if c not in found_ids]
    recall = len(found) / len(wanted) if wanted else 1.0
    copies = sum(1 for q in queries if similarity(q, gold.claim) > 0.95)
    return recall - 0.05 * copies, {"found": found, "missed": missed, "queries": queries, "copies": copies,
                                    "n_queries": len(queries)}


def metric(gold, pred, trace=None, pred_name=None, pred_trace=None, retrieve=None) -> dspy.Prediction:
    """Recall of the gold evidence chunks that the queries retrieve; feedback names found and missed chunks.

    `retrieve` (queries -> chunk ids) plugs in a real retriever; without it a lexical overlap with the gold
    evidence text stands in.
    """
    score, d = _score(gold, pred, retrieve)
    by_id = {e["chunk_id"]: e["text"] for e in gold.evidence}
    parts = [f"Evidence recall {score:.2f} with {d['n_queries']} queries {d['queries']}."]
    if d["found"]:
        parts.append("Retrieved: " + ", ".join(d["found"]) + ".")
    for cid in d["missed"]:  # the chunk's opening, not all of it: a small reflector's context holds six examples
        text = by_id[cid]
        if len(text) > FEEDBACK_CHARS:
            text = text[:FEEDBACK_CHARS].rsplit(" ", 1)[0] + " ..."
        parts.append(f"Missed {cid}: {text!r}; a query should use its key terms.")
    if d.get("copies"):
        parts.append("Do not copy the claim verbatim as a query; name entities and the fact to check.")
    if getattr(gold, "queries", None):
        parts.append("Reference queries: " + " | ".join(gold.queries))
    return dspy.Prediction(score=max(0.0, score), feedback=" ".join(parts))


def to_examples(case: dict) -> list[dspy.Example]:
    """One example per claim with gold evidence."""
    return [
        dspy.Example(claim=c["text"], evidence=c["evidence"], queries=c.get("queries", []),
                     case_id=case["case_id"], lang=case["lang"]).with_inputs("claim")
        for c in case.get("claims", [])
        if c.get("evidence")
    ]

