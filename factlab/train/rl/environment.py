"""The search environment of a TRL rollout (`environment_factory` of the GRPOTrainer, factlab/train/rl/grpo_trainer.py):
the `search` tool over the retrieval service (factlab/train/rl/retrieval.py), on the corpus the row names, as VERL's
tool (factlab/train/rl/tool.py) searches it.
"""

from __future__ import annotations

from factlab.train.rl.format import format_hits
from factlab.train.rl.retrieval import retrieve


class SearchEnvironment:
    """One rollout's tools for TRL (`environment_factory`): `search` on the row's corpus through the service.

    Args:
        url: the retrieval service's /retrieve URL.
        topk: passages per search call.
    """

    def __init__(self, url: str, topk: int) -> None:
        self.url = url
        self.topk = topk
        self.corpus: str | None = None
        self.queries: list[str] = []

    def reset(self, **row) -> None:
        """Take the corpus key from the row's tools kwargs (as VERL's tool does) and forget earlier queries."""
        tools_kwargs = (row.get("extra_info") or {}).get("tools_kwargs") or {}
        self.corpus = ((tools_kwargs.get("search") or {}).get("create_kwargs") or {}).get("corpus")
        self.queries = []

    def search(self, query: str) -> str:
        """Search the evidence corpus. Returns the best matching passages, each starting with its [chunk id].

        Args:
            query: One short keyword query for one open question about the claim.
        """
        self.queries.append(query)
        return format_hits(retrieve(self.url, [query], self.corpus, self.topk)[0])
