"""The retrieval service, the VERL tool through verl's own tool loading, and VERL's ToolAgentLoop driving it with a
scripted generator (no GPU, no vLLM: the generator stands in for the rollout server)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from factlab.train.rl.format import TOOL_NAME
from factlab.train.rl.retrieval import RetrievalServiceError, retrieve
from factlab.train.rl.reward import compute_score

QUERY = "Fleming penicillin mould 1928 St Mary's Hospital"


def test_service_answers_query_lists_with_chunk_ids(service, rl_data):
    results = retrieve(service.url, [QUERY, "Halvard Pharma founded Basel", "  "], corpus=rl_data["corpus"], k=2)
    assert len(results) == 3 and results[2] == []
    assert results[0][0]["chunk_id"].startswith("ena-penicillin") and len(results[0]) <= 2
    assert {"chunk_id", "source_id", "text", "tier", "score"} <= set(results[0][0])
    assert any(hit["source_id"].startswith("ena-halvard") for hit in results[1])


def test_service_names_unknown_corpora_and_bad_requests(service):
    with pytest.raises(RetrievalServiceError, match="unknown corpus 'nope'"):
        retrieve(service.url, [QUERY], corpus="nope")
    assert httpx.post(service.url, json={"queries": []}).status_code == 422
    assert httpx.get(service.url.replace("/retrieve", "/health")).json()["status"] == "ok"


def write_tool_config(tmp_path, url):
    from factlab.train.rl.search_r1 import write_tool_config as write

    return write(url, 2, tmp_path / "search_tool.yaml")


def test_tool_loads_through_verl_and_searches(service, rl_data, tmp_path):
    pytest.importorskip("verl", reason="verl is not installed: pip install verl==0.9.1")
    from verl.tools.tool_registry import load_all_tools

    from factlab.train.rl.tool import SearchTool

    (tool,) = load_all_tools(str(write_tool_config(tmp_path, service.url)), None)
    assert isinstance(tool, SearchTool) and tool.name == TOOL_NAME

    async def call(parameters):
        instance, _ = await tool.create(create_kwargs={"corpus": rl_data["corpus"]})
        try:
            return await tool.execute(instance, parameters)
        finally:
            await tool.release(instance)

    response, reward, metrics = asyncio.run(call({"query": QUERY}))
    assert response.text.startswith("[ena-penicillin") and metrics["hits"] >= 1 and reward == 0.0
    response, _, metrics = asyncio.run(call({"q": "wrong argument"}))
    assert "needs" in response.text and metrics["hits"] == 0


class ScriptedServer:
    """Stands in for VERL's rollout server: answers each generate call with the next scripted assistant turn."""

    def __init__(self, tokenizer, turns):
        self.tokenizer = tokenizer
        self.turns = list(turns)
        self.prompts = []

    async def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.prompts.append(list(prompt_ids))
        text = self.turns.pop(0) + self.tokenizer.eos_token
        return TokenOutput(token_ids=self.tokenizer(text, add_special_tokens=False)["input_ids"],
                           stop_reason="completed")


def test_tool_agent_loop_rollout_with_scripted_generator(service, rl_data, tiny_qwen, tmp_path):
    pytest.importorskip("verl", reason="verl is not installed: pip install verl==0.9.1")
    import pandas as pd
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
    from verl.tools.tool_registry import load_all_tools
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from factlab.train.rl.search_r1 import compose_verl_config, verl_overrides

    tool_config = write_tool_config(tmp_path, service.url)
    config = compose_verl_config(verl_overrides(rl_data, tiny_qwen, tool_config, 1, 2, "ckpt"))
    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen)
    row = pd.read_parquet(rl_data["files"]["train"]).iloc[0]
    call = {"name": "search", "arguments": {"query": QUERY}}
    final = '<answer>{"relation": "support", "label": "correct", "chunk_ids": ["ena-penicillin-nlm#p1-c1"]}</answer>'
    server = ScriptedServer(tokenizer, [f"<tool_call>\n{json.dumps(call)}\n</tool_call>", final])

    async def rollout():
        loop = ToolAgentLoop(trainer_config=DictConfigWrap(config), server_manager=server, tokenizer=tokenizer,
                             processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data),
                             hf_model_type="qwen2", tools=ToolListWrap(load_all_tools(str(tool_config), None)))
        return await loop.run({"temperature": 1.0}, raw_prompt=list(row["prompt"]),
                              tools_kwargs=row["extra_info"]["tools_kwargs"], extra_info=dict(row["extra_info"]))

    output = asyncio.run(rollout())
    assert output.num_turns == 4  # user, assistant (tool call), tool, assistant (answer)
    assert len(server.prompts) == 2 and len(server.prompts[1]) > len(server.prompts[0])
    response = tokenizer.decode(output.response_ids, skip_special_tokens=True)  # what VERL's reward manager sees
    assert "[ena-penicillin" in response  # the tool's search results were fed back into the context
    mask = output.response_mask
    assert 0 in mask and 1 in mask  # tool-response tokens are masked out of the policy loss, model tokens are not
    gt = row["reward_model"]["ground_truth"]
    assert compute_score(row["data_source"], response, gt, dict(row["extra_info"]))["score"] == 1.0
