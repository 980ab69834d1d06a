"""Retrieval: ingest sources, index them (BM25 + dense embeddings), search tier by tier, compress evidence.

Entry points: `Retriever.build` / `Retriever.open` / `Retriever.search` (factlab.retrieval.retriever),
`ingest` (factlab.retrieval.ingest), `compress` (factlab.retrieval.compress), `load_retrieval_config`
(factlab.retrieval.config). Nothing here runs at import time.
"""
