"""Hybrid search over an index: BM25 + dense cosine fused by RRF, highest authority tier first.

    retriever = Retriever.build("datasets/bundled/corpus", "outputs/index", cfg.retrieval)
    evidence = retriever.search(["青霉素 发现 1928"], k=5, claim="青霉素于1928年由弗莱明发现。")

`search` reads the index and calls the encoder, nothing else: it is safe to wrap in a service.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from factlab.retrieval.compress import compress
from factlab.retrieval.encoders import Encoder, covers
from factlab.retrieval.fusion import lexical_coverage, reciprocal_rank_fusion
from factlab.retrieval.index import BuildReport, Index, build_index
from factlab.retrieval.ingest import check_folder
from factlab.retrieval.policy import (
    check_policy,
    check_relevance,
    prefer_tier,
    relevance_cut,
    tier_first_order,
    weak_below,
)
from factlab.retrieval.records import IngestIssue
from factlab.retrieval.store import Bm25Scorer, CorpusIdf, TokenSets, top_rows
from factlab.retrieval.tiers import TIERS, TierTables
from factlab.retrieval.tokenizer import tokenize
from factlab.runtime import cache_root
from factlab.schema import Evidence, normalise_text

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchSettings:
    """`retrieval.search` of the config (meanings in conf/retrieval/default.yaml)."""

    rrf_k: int
    depth: int
    min_evidence: int
    min_relevance: float | Mapping[str, float]  # one cut, or one per query language (policy.relevance_cut)
    policy: str = "tier_first"
    band: int | None = None
    margin: float | None = None
    strong_relevance: float | Mapping[str, float] | None = None  # below it (and >= min_relevance) a hit is `weak`

    def __post_init__(self) -> None:
        check_policy(self.policy, self.band)
        object.__setattr__(self, "min_relevance", check_relevance(self.min_relevance))
        if self.strong_relevance is not None:
            object.__setattr__(self, "strong_relevance",
                               check_relevance(self.strong_relevance, "retrieval.search.strong_relevance"))


@dataclass(frozen=True)
class CompressSettings:
    """`retrieval.compress` of the config (meanings in conf/retrieval/default.yaml)."""

    enabled: bool
    max_tokens: int
    lexical_weight: float


def _encoder_from_config(cfg) -> Encoder:
    from hydra.utils import instantiate

    return instantiate(cfg.encoder)


class Retriever:
    """Search an `Index` tier by tier; build one with `Retriever.build`, reopen it with `Retriever.open`."""

    def __init__(self, index: Index, encoder: Encoder, search: SearchSettings, compression: CompressSettings,
                 report: BuildReport | None = None):  # fmt: skip
        if index.chunks and encoder.name != index.manifest["encoder"]:
            raise ValueError(
                f"the index was embedded with encoder {index.manifest['encoder']!r}, got {encoder.name!r}; "
                "use the same encoder or rebuild the index with Retriever.build"
            )
        self.index = index
        self.encoder = encoder
        self.settings = search
        self.compression = compression
        self.report = report
        self._prepare()

    # construction -------------------------------------------------------------------------------------------

    @classmethod
    def build(cls, sources_dir: str | Path, index_dir: str | Path, cfg, encoder: Encoder | None = None) -> Retriever:
        """Ingest `sources_dir` into `index_dir` (incrementally when an index is already there) and open it.

        Args:
            sources_dir: folder of .md/.txt/.html/.pdf/.jsonl sources.
            index_dir: index folder (created when missing).
            cfg: the `retrieval` config node (conf/retrieval/default.yaml, composed with its tier tables).
            encoder: the dense encoder; None = `cfg.encoder` instantiated (MiniLM by default).

        Returns:
            The retriever; `retriever.report` tells what was re-read / re-embedded, `retriever.issues` what failed.
        """
        encoder = encoder if encoder is not None else _encoder_from_config(cfg)
        index, report = build_index(
            sources_dir,
            index_dir,
            encoder=encoder,
            tiers=TierTables.from_config(cfg.tiers),
            max_chars=cfg.ingest.max_chars,
            default_vertical=cfg.ingest.default_vertical,
            with_title=cfg.index.with_title,
            embed_batch_size=cfg.index.embed_batch_size,
            progress=cfg.index.progress,
        )
        return cls(index, encoder, SearchSettings(**cfg.search), CompressSettings(**cfg.compress), report)

    @classmethod
    def over_folder(cls, sources: str | Path, index_dir: str | Path | None, settings) -> Retriever:
        """The retriever of a checker (conf/pipeline/default.yaml `retriever`): a missing or empty `sources` folder is
        a clear error before any model loads; `index_dir` None = a cache folder keyed by the sources path."""
        check_folder(Path(sources))
        settings = OmegaConf.create(settings) if isinstance(settings, dict) else settings
        return cls.build(Path(sources), Path(index_dir) if index_dir else default_index_dir(sources), settings)

    @classmethod
    def open(cls, index_dir: str | Path, cfg, encoder: Encoder | None = None) -> Retriever:
        """Open an index folder written by `build` (memory-mapped: nothing is rebuilt; a later build does not change
        what this retriever sees)."""
        encoder = encoder if encoder is not None else _encoder_from_config(cfg)
        return cls(Index.load(index_dir), encoder, SearchSettings(**cfg.search), CompressSettings(**cfg.compress))

    @property
    def issues(self) -> list[IngestIssue]:
        """Ingest issues of the build that made this retriever ([] for an opened index)."""
        return self.report.issues if self.report is not None else []

    def _prepare(self) -> None:
        """Derived, read-only search structures: BM25, IDF, tiers, dedup groups and their domains.

        Nothing here reads every chunk: BM25, token sets and IDF answer from the memory-mapped segments on demand, and
        dedup groups come from the text keys stored per chunk (only groups of two or more chunks are decoded).
        """
        index = self.index
        self._tiers = index.tiers
        self._tier_rows = {tier: np.flatnonzero(self._tiers == tier) for tier in np.unique(self._tiers).tolist()}
        self._token_sets = TokenSets(index)
        self._idf, self._n_docs = CorpusIdf(index), index.n_docs
        self._bm25 = Bm25Scorer(index)
        # Dedup: chunks with the same normalised text form a group; its canonical copy is the highest tier one.
        self._canonical = np.arange(len(self._tiers))
        self._group_domains: dict[int, list[str]] = _NoGroup()  # a chunk alone has no corroborating domain
        if not len(self._tiers):
            return
        _, inverse, counts = np.unique(index.text_keys, return_inverse=True, return_counts=True)
        shared = np.flatnonzero(counts[inverse] > 1)
        shared = shared[np.argsort(inverse[shared], kind="stable")]
        for candidates in np.split(shared, np.flatnonzero(np.diff(inverse[shared])) + 1) if len(shared) else []:
            groups: dict[str, list[int]] = {}
            for row in candidates.tolist():
                groups.setdefault(normalise_text(index.chunks[row].text), []).append(row)
            for rows in groups.values():
                chunks = {row: index.chunks[row] for row in rows}
                best = min(rows, key=lambda row: (self._tiers[row], chunks[row].chunk_id))
                self._canonical[rows] = best
                domains = sorted({index.sources[chunks[row].source_id].domain for row in rows} - {""})
                self._group_domains[best] = domains

    # search -------------------------------------------------------------------------------------------------

    def search(self, queries: list[str], k: int, claim: str | None = None,
               max_tokens: int | None = None) -> list[Evidence]:
        """Find up to k evidence snippets, authority first (`search.policy`, factlab/retrieval/policy.py).

        The chunks are ranked by BM25 and by dense cosine for every query, the rankings fused by reciprocal rank
        fusion; a chunk is a hit when its relevance (max over queries of cosine and IDF-weighted query-token
        coverage) reaches `min_relevance`. `tier_first`: at each tier level t (1, then 2, then 3) only chunks of
        tier <= t are ranked, and the search stops at the first level with at least `min_evidence` hits.
        `prefer_tier`: all tiers are ranked together and the best `band` hits are ordered by tier. Duplicate content
        (same normalised text) counts once, as its highest-tier copy, listing the other domains that carry it in
        `corroborated_by`.

        Args:
            queries: search queries (empty ones are ignored); with none, the claim is the query.
            k: the most evidence returned.
            claim: the claim being checked; when given (and compression is enabled) each evidence text is cut to
                the claim's most relevant sentences, start/end being their offsets in the page text.
            max_tokens: the compression budget per snippet; None = `retrieval.compress.max_tokens`.

        Returns:
            Hits only (never chunks below `min_relevance`), ordered by tier then fused rank; `score` is the
            relevance in [0, 1].

        Raises:
            ValueError: no usable query and no claim, or k < 1.
        """
        queries = [query for query in queries if query and query.strip()] or ([claim] if claim else [])
        if not queries:
            raise ValueError("search needs at least one non-empty query, or a claim to use as the query")
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if not self.index.chunks:
            return []
        query_tokens = [tokenize(query) for query in queries]
        lexical = [self._bm25.get_scores(tokens) if tokens else None for tokens in query_tokens]
        dense = self._dense(np.asarray(self._encode_queries(queries), dtype=np.float32), lexical)  # (chunks, Q)
        covered = self._covered(queries)
        cut = relevance_cut(self.settings.min_relevance, claim or queries[0])
        dense[:, ~covered] = -np.inf  # a query the encoder's vocabulary does not cover: BM25 alone (Encoder)
        relevance: dict[int, float] = {}
        hits: list[int] = []
        fused: dict[int, float] = {}
        levels = sorted(set(self._tiers.tolist())) if self.settings.policy == "tier_first" else [max(TIERS)]
        for level in levels:  # prefer_tier: one level holding every tier
            allowed = self._tiers <= level
            fused = self._fuse(allowed, dense, lexical, covered)
            for row in fused:
                if row not in relevance:
                    relevance[row] = self._relevance(row, dense, query_tokens)
            hits = [row for row in fused if relevance[row] >= cut]
            if len(hits) >= self.settings.min_evidence:
                break
        tiers = {row: int(self._tiers[row]) for row in hits}
        if self.settings.policy == "tier_first":
            ranked = tier_first_order(hits, fused, tiers, k)
        else:
            ranked = prefer_tier({row: fused[row] for row in hits}, tiers, k, self.settings.band, relevance,
                                 self.settings.margin)
        claim_vector = None
        if claim and self.compression.enabled and ranked:
            claim_vector = np.asarray(self._encode_queries([claim]), dtype=np.float32)[0]
        budget = max_tokens or self.compression.max_tokens
        strong = weak_below(self.settings.strong_relevance, claim or queries[0])
        return [self._evidence(row, relevance[row], claim, claim_vector, budget, weak=relevance[row] < strong)
                for row in ranked]

    def _encode_queries(self, queries: list[str]) -> np.ndarray:
        """Queries through the encoder's query side (e5 reads "query: ") where it has one, else `encode`."""
        return getattr(self.encoder, "encode_queries", self.encoder.encode)(queries)

    def _covered(self, queries: list[str]) -> np.ndarray:
        """Per query, whether the encoder's vocabulary covers its language (`languages` on the encoder; none = all)."""
        return np.array([covers(self.encoder, query) for query in queries], dtype=bool)

    def _fuse(self, allowed: np.ndarray, dense: np.ndarray, lexical: list[np.ndarray | None],
              covered: np.ndarray) -> dict[int, float]:
        """RRF over every (query, BM25 | dense) ranking of the allowed chunks, duplicates mapped to their canonical;
        no dense ranking for a query whose language the encoder does not cover."""
        depth = self.settings.depth
        rankings = []
        for column, bm25_scores in enumerate(lexical):
            if covered[column]:
                rankings.append(self._top(np.where(allowed, dense[:, column], -np.inf), depth))
            if bm25_scores is not None:
                rankings.append(self._top(np.where(allowed & (bm25_scores > 0), bm25_scores, -np.inf), depth))
        return reciprocal_rank_fusion(rankings, k=self.settings.rrf_k)

    def _dense(self, queries: np.ndarray, lexical: list[np.ndarray | None]) -> np.ndarray:
        """(chunks, Q) cosines: exact for every chunk a ranking of any tier level can reach (each tier's top `depth`
        by cosine and by BM25, and their canonical copies), -inf for the rest, which no ranking reaches."""
        depth = self.settings.depth
        rows = [self.index.dense_candidates(queries, depth)]
        for scores in lexical:
            if scores is not None:
                for tier_rows in self._tier_rows.values():
                    tier_scores = scores[tier_rows]
                    rows.append(tier_rows[top_rows(np.where(tier_scores > 0, tier_scores, -np.inf), depth)])
        candidates = np.concatenate(rows)
        candidates = np.unique(np.concatenate([candidates, self._canonical[candidates]]))
        dense = np.full((len(self._tiers), len(queries)), -np.inf, dtype=np.float32)
        dense[candidates] = self.index.cosines(candidates, queries)
        return dense

    def _top(self, scores: np.ndarray, depth: int) -> list[int]:
        """The best `depth` rows with a finite score, as canonical rows, each once, best first (ties by row)."""
        n_finite, wanted = int(np.isfinite(scores).sum()), depth
        while True:
            candidates = top_rows(scores, wanted)  # a partial sort: the whole order of a million rows is not needed
            order = candidates[np.lexsort((candidates, -scores[candidates]))]
            ranking, seen = [], set()
            for row in order.tolist():
                if len(ranking) >= depth:
                    break
                canonical = int(self._canonical[row])
                if canonical not in seen:
                    seen.add(canonical)
                    ranking.append(canonical)
            if len(ranking) >= depth or len(candidates) >= n_finite:
                return ranking
            wanted *= 4  # duplicates took places: look deeper

    def _relevance(self, row: int, dense: np.ndarray, query_tokens: list[list[str]]) -> float:
        """max over queries of cosine and IDF-weighted query-token coverage, in [0, 1]."""
        best = float(np.clip(dense[row].max(), 0.0, 1.0))
        for tokens in query_tokens:
            if tokens:
                best = max(best, lexical_coverage(tokens, self._token_sets[row], self._idf, self._n_docs))
        return best

    def _evidence(self, row: int, relevance: float, claim: str | None, claim_vector: np.ndarray | None,
                  max_tokens: int, weak: bool = False) -> Evidence:
        chunk = self.index.chunks[row]
        source = self.index.sources[chunk.source_id]
        text, start, end = chunk.text, chunk.start, chunk.end
        if claim and self.compression.enabled:
            snippet = compress(
                chunk.text,
                claim,
                max_tokens=max_tokens,
                lexical_weight=self.compression.lexical_weight,
                encoder=self.encoder,
                claim_vector=claim_vector,
                offset=chunk.start,
            )
            text, start, end = snippet.text, snippet.start, snippet.end
        domains = self._group_domains[row]
        return Evidence(
            source_id=source.source_id,
            chunk_id=chunk.chunk_id,
            text=text,
            tier=int(self._tiers[row]),
            page=chunk.page,
            domain=source.domain,
            title=source.title,
            score=round(relevance, 4),
            start=start,
            end=end,
            corroborated_by=[domain for domain in domains if domain != source.domain] if len(domains) >= 2 else [],
            weak=bool(weak),
        )


class _NoGroup(dict):
    """row -> domains of its dedup group; a row in no group of two or more has none."""

    def __missing__(self, row: int) -> list[str]:
        return []


def default_index_dir(sources: str | Path) -> Path:
    """The index folder of a sources folder when none is configured: <cache root>/index/<hash of its path>."""
    key = hashlib.sha256(str(Path(sources).resolve()).encode()).hexdigest()[:12]
    return cache_root() / "index" / key
