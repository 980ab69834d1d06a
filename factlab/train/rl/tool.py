"""The VERL tool of the search checker: `search(query)` through the factlab retrieval service.

verl >= 0.8 ships no search tool, so this subclasses verl's `BaseTool`. It is declared in
conf/verl/tool_config/search_tool.yaml (VERL loads it by class name in every agent-loop worker); each rollout's
corpus comes from the row's `extra_info.tools_kwargs.search.create_kwargs.corpus` (factlab/train/rl/data.py).
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from factlab.train.rl.format import SEARCH_TOOL_SCHEMA, format_hits
from factlab.train.rl.retrieval import RetrievalServiceError, aretrieve


class SearchTool(BaseTool):
    """`search(query)` -> the top-k trimmed passages of the rollout's corpus, as `[chunk_id] (tier t) text` lines.

    Config (the tool config YAML's `config`): `retrieval_url` (the service's /retrieve URL), `topk`, `timeout_s`.
    """

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        missing = [key for key in ("retrieval_url", "topk", "timeout_s") if key not in config]
        if missing:
            raise ValueError(f"SearchTool config: missing {', '.join(missing)}; see "
                             "conf/verl/tool_config/search_tool.yaml")
        super().__init__(config, tool_schema or OpenAIFunctionToolSchema.model_validate(SEARCH_TOOL_SCHEMA))
        self.url = str(config["retrieval_url"])
        self.topk = int(config["topk"])
        self.timeout_s = float(config["timeout_s"])
        self._corpus: dict[str, str | None] = {}

    async def create(self, instance_id: str | None = None, **kwargs) -> tuple[str, ToolResponse]:
        instance_id = instance_id or str(uuid4())
        self._corpus[instance_id] = (kwargs.get("create_kwargs") or {}).get("corpus")
        return instance_id, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        query = parameters.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolResponse(text='search needs {"query": "<keywords>"}'), 0.0, {"hits": 0}
        try:
            hits = (await aretrieve(self.url, [query], self._corpus.get(instance_id), self.topk, self.timeout_s))[0]
        except RetrievalServiceError as exc:  # a bad request reads as a tool error to the model, not a crash
            return ToolResponse(text=f"search failed: {exc}"), 0.0, {"hits": 0}
        return ToolResponse(text=format_hits(hits)), 0.0, {"hits": len(hits)}

    async def release(self, instance_id: str, **kwargs) -> None:
        self._corpus.pop(instance_id, None)
