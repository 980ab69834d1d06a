"""Real retrieval for metrics that take `retrieve=` (query_rewrite): the claim's queries searched in its own case's
corpus with the hybrid retriever (factlab/retrieval), one index per distinct corpus, cached by content hash."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import dspy

from factlab.atomic import write_text
from factlab.data.registry import content_hash
from factlab.optimize.scoring import Retrieve

logger = logging.getLogger(__name__)


class CorpusSearch:
    """Retrievers over the corpora of `cases`; `for_example(example)` searches that example's case's corpus.

    Args:
        cases: the cases whose examples will be scored (each with `sources`, as loaded by factlab.data).
        retrieval_cfg: the `retrieval` config node (conf/retrieval/default.yaml).
        index_root: folder for the indexes, one subfolder per corpus content hash (reused across runs).
        k: evidence retrieved per claim.
    """

    def __init__(self, cases: list[dict], retrieval_cfg, index_root: str | Path, k: int) -> None:
        from hydra.utils import instantiate

        from factlab.retrieval.retriever import Retriever

        self.k = k
        index_root = Path(index_root)
        encoder = instantiate(retrieval_cfg.encoder)  # one encoder shared by every index
        keys_by_list: dict[int, str] = {}
        self.case_corpus: dict[str, str] = {}
        self.retrievers: dict[str, Retriever] = {}
        for case in cases:
            sources = case.get("sources") or []
            if not sources:
                continue
            if id(sources) not in keys_by_list:  # cases of one corpus file share the list object
                keys_by_list[id(sources)] = content_hash(sources)[:16]
            key = keys_by_list[id(sources)]
            self.case_corpus[case["case_id"]] = key
            if key not in self.retrievers:
                folder = index_root / key
                source_dir = folder / "sources"
                corpus = source_dir / "corpus.jsonl"
                if not corpus.is_file():  # content-addressed: the same key always means the same bytes
                    write_text(corpus, "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in sources))
                self.retrievers[key] = Retriever.build(source_dir, folder / "index", retrieval_cfg, encoder=encoder)
        logger.info("query metric: %d corpora indexed under %s", len(self.retrievers), index_root)

    def for_example(self, example: dspy.Example) -> Retrieve:
        """`retrieve(queries) -> chunk ids` over the example's case's corpus (nothing for a case without one)."""
        key = self.case_corpus.get(example.get("case_id"))
        if key is None:
            return lambda queries: []
        retriever = self.retrievers[key]
        return lambda queries: [hit.chunk_id for hit in retriever.search(queries, k=self.k)]
