"""The KV-only prompt cache of the llama.cpp server (factlab/models/llama_server.py) on the real 0.5B, against
llama_cpp as it comes: interleaved prompts that share prefixes (as the pipeline's stages do) give the same greedy
completions, token for token, free-form and JSON-constrained, and the cached states hold no logits buffer. Marked
`llm` (run in CI)."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

pytestmark = pytest.mark.llm

JUDGE = "You judge whether the evidence supports the claim. Answer support, contradict or insufficient, then why."
QUERY = "You rewrite the claim into one short web search query. Keep its names, numbers and dates."
PROMPTS = [(JUDGE, "Claim: Penicillin was found in 1938. Evidence: Fleming found penicillin in 1928."),
           (QUERY, "Claim: China's GDP grew 5.2% in 2023."),
           (JUDGE, "Claim: 青霉素于1928年被发现。 Evidence: 弗莱明于1928年发现了青霉素。"),
           (QUERY, "Claim: The Eiffel Tower was completed in 1889.")]
SCHEMA = {"type": "object", "required": ["reasoning", "relation"],
          "properties": {"reasoning": {"type": "string"},
                         "relation": {"type": "string", "enum": ["support", "contradict", "insufficient"]}}}


def _completions(model, max_tokens: int = 16, schema: dict | None = None) -> list[str]:
    fmt = {"type": "json_object", "schema": schema} if schema else None
    return [model.create_chat_completion(messages=[{"role": "system", "content": system},
                                                   {"role": "user", "content": user}], response_format=fmt,
                                         temperature=0.0, max_tokens=max_tokens,
                                         repeat_penalty=1.1)["choices"][0]["message"]["content"]
            for system, user in PROMPTS]


def _model_path() -> Path:
    from factlab.models.assemble import assemble

    conf = OmegaConf.load(Path(__file__).resolve().parents[2] / "conf" / "lm" / "local_qwen05.yaml")
    return assemble(list(conf.packages), conf.filename, conf.sha256)


def test_the_kv_only_prompt_cache_changes_no_completion(monkeypatch):
    llama_mod = pytest.importorskip("llama_cpp.llama")
    import llama_cpp.llama_cpp as lib
    from llama_cpp.llama_cache import LlamaRAMCache

    from factlab.models import llama_server
    from factlab.runtime import cpu_flags

    path = _model_path()
    monkeypatch.setattr(llama_mod.Llama, "save_state", llama_mod.Llama.save_state)  # undone after the test
    monkeypatch.setattr(llama_mod.Llama, "load_state", llama_mod.Llama.load_state)
    monkeypatch.setattr(lib, "llama_model_default_params", lib.llama_model_default_params)
    if not llama_server.use_extra_buffers("auto", cpu_flags()):
        llama_server.disable_extra_buffers()  # on an AMX CPU ggml's AMX matmul faults in-process too, as in the server

    plain = llama_mod.Llama(model_path=str(path), n_ctx=1024, verbose=False)
    expected = _completions(plain) + _completions(plain, max_tokens=32, schema=SCHEMA)
    del plain

    llama_server.keep_kv_only()
    cached = llama_mod.Llama(model_path=str(path), n_ctx=1024, verbose=False)
    cache = LlamaRAMCache(capacity_bytes=64 << 20)
    cached.set_cache(cache)
    assert _completions(cached) + _completions(cached, max_tokens=32, schema=SCHEMA) == expected
    states = list(cache.cache_state.values())
    assert len(states) == 2 * len(PROMPTS)  # one state per request, none evicted at 64 MB
    assert all(s.scores.shape[0] == 0 and s.llama_state_size < 16 << 20 for s in states)


def _rss_anon_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no RssAnon in /proc/{pid}/status")


def test_the_servers_prompt_cache_holds_kv_states_only(tmp_path):
    """The server factlab starts (llama_cpp's defaults: logits_all=True) with the cache on: each request's saved
    state must not carry its prompt's logits (~0.6 MB a token for Qwen2.5). Until 2026-12-04 it did, and a 512 MB
    cache grew past 23 GB in a 40-case evaluation. Four ~200-token prompts: with logits the server's anonymous memory
    grows by ~0.5 GB, without by a few MB."""
    import httpx

    from factlab.models.server import ensure_server, stop_server

    server = ensure_server(_model_path(), "kv-only-check", n_ctx=1024, state_dir=tmp_path, reuse_running=False,
                           prompt_cache_mb=64)
    try:
        def ask(i: int) -> None:
            filler = " ".join(f"item{i}-{j}" for j in range(60))  # ~200 tokens, a different prefix each time
            httpx.post(f"{server.api_base}/chat/completions", timeout=300, json={
                "model": "kv-only-check", "max_tokens": 2, "temperature": 0.0,
                "messages": [{"role": "user", "content": f"{i}. Repeat the first word: {filler}"}]}).raise_for_status()

        ask(0)  # warm: buffers allocated, model pages touched
        before = _rss_anon_mb(server.pid)
        for i in range(1, 5):
            ask(i)
        grown = _rss_anon_mb(server.pid) - before
    finally:
        stop_server(server)
    assert grown < 100, f"the server's anonymous memory grew {grown:.0f} MB over 4 cached requests"
