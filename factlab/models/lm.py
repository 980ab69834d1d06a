"""LM backends built from conf/lm/*.yaml: an OpenAI-compatible endpoint, or a packaged local GGUF model
served by llama.cpp on 127.0.0.1 through the same OpenAI-compatible path.

Nothing here touches global state: a builder returns an `LMHandle`; callers scope it with
`with handle.context(): ...`.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import dspy

from factlab.models.assemble import assemble
from factlab.models.errors import LMBreaker, LMUnavailableError, register_secret
from factlab.models.server import LocalServer, ensure_server, server_alive
from factlab.runtime import prepare_offline_env


class MissingAPIKeyError(RuntimeError):
    """The env var that should hold an API key is unset."""


@dataclass
class LMHandle:
    """A configured LM plus the DSPy adapter that parses its outputs."""

    name: str
    lm: dspy.LM
    adapter: dspy.Adapter
    info: dict = field(default_factory=dict)  # loggable description: never holds secrets
    breaker: LMBreaker | None = None  # shared by every fork: one dead server is detected once
    respawn: Callable[..., LMHandle] | None = field(default=None, repr=False)  # local LMs: the builder, for with_lora

    @contextlib.contextmanager
    def context(self) -> Iterator[LMHandle]:
        with dspy.context(lm=self.lm, adapter=self.adapter):
            yield self

    def fork(self, name: str) -> LMHandle:
        """A copy with its own call history (same server, same disk cache): meters one stage or role."""
        lm = self.lm.copy()
        lm.history = []  # its own list: the optimizers' copies of the fork then share the fork's (MeteredLM.copy)
        return LMHandle(name, lm, self.adapter, dict(self.info), self.breaker, self.respawn)

    def with_lora(self, lora: str) -> LMHandle:
        """The same local model served with the LoRA adapter `lora` (its own llama.cpp server: llama-cpp-python's
        server applies one adapter set to every request), for a stage with its own adapter.

        Raises:
            ValueError: this LM is not a local GGUF model (a remote endpoint serves adapters under its own names).
        """
        if self.respawn is None:
            raise ValueError(f"LM {self.name!r} ({self.info.get('backend', '?')}): a stage's `lora` needs the local "
                             "student (conf/lm/local_*.yaml); for a remote endpoint name the adapter's model instead")
        return self.respawn(lora=lora)

    def usage(self) -> dict[str, int]:
        """LM calls, cache hits and tokens so far, from this LM's history (DSPy keeps its last 10,000 calls).

        Tokens count real calls only; a cache hit costs nothing.
        """
        calls = cache_hits = prompt = completion = 0
        for entry in self.lm.history:
            calls += 1
            usage = entry.get("usage") or {}
            if getattr(entry.get("response"), "cache_hit", False) or not usage:  # served from DSPy's cache
                cache_hits += 1
                continue
            prompt += int(usage.get("prompt_tokens") or 0)
            completion += int(usage.get("completion_tokens") or 0)
        return {"calls": calls, "cache_hits": cache_hits, "prompt_tokens": prompt, "completion_tokens": completion}


# DSPy's route decides how the generation cap is spelled on the wire. `openai/` sends `max_completion_tokens`, which
# llama.cpp's server (llama-cpp-python) ignores: the cap is dropped and a small model can generate until the context
# is full (measured: 3,802 tokens, two minutes, one query_rewrite call; llama-cpp-python issue #1907).
# `hosted_vllm/` (DSPy's vLLM dialect) sends `max_tokens`, which llama.cpp, vLLM and SGLang all read.
LOCAL_ROUTE = "hosted_vllm"


class MeteredLM(dspy.LM):
    """A dspy.LM whose copies record their calls in its history too, so `LMHandle.usage` counts them. MIPROv2's
    instruction proposer calls `prompt_model.copy(rollout_id=..., temperature=...)`, and DSPy gives every copy an
    empty history of its own: the judge's MIPROv2 run logged 0 reflector calls and tokens although the 1.5B wrote its
    three instructions (MLflow run 1194afef)."""

    def copy(self, **kwargs):
        new = super().copy(**kwargs)
        new.history = self.history
        return new


def _lm(model: str, api_base: str, api_key: str, temperature: float, max_tokens: int, cache: bool,
        timeout_s: float, num_retries: int) -> dspy.LM:
    return MeteredLM(model, api_base=api_base, api_key=api_key, temperature=temperature, max_tokens=max_tokens,
                     cache=cache, timeout=timeout_s, num_retries=num_retries)


def openai_lm(name: str, model: str, api_base: str, api_key_env: str, adapter: dspy.Adapter,
              temperature: float = 0.0, max_tokens: int = 1024, cache: bool = True, timeout_s: float = 120.0,
              num_retries: int = 2, route: str = "openai") -> LMHandle:
    """Any OpenAI-compatible endpoint (vLLM, SGLang, a hosted API).

    Args:
        api_key_env: the NAME of the env var holding the key; the key never enters config, logs or MLflow.
        route: DSPy's provider route: `openai` (OpenAI's API and servers that read `max_completion_tokens`) or
            `hosted_vllm` (vLLM, SGLang, llama.cpp: the cap goes as `max_tokens`).
    """
    prepare_offline_env()
    key = os.environ.get(api_key_env)
    if not key:
        raise MissingAPIKeyError(f"LM {name!r}: set the env var {api_key_env} to the API key of {api_base}")
    register_secret(key)  # an endpoint that echoes the key back in an error must not put it on a card
    breaker = LMBreaker(api_base)
    if not breaker._probe():  # unreachable at the start: say so once, before any document is read
        raise LMUnavailableError(f"LM {name!r}: no answer from {api_base} within {breaker.probe_timeout_s:g} s; "
                                 "check lm.*.api_base and that the server is up")
    lm = _lm(f"{route}/{model}", api_base, key, temperature, max_tokens, cache, timeout_s, num_retries)
    return LMHandle(name, lm, adapter, {"backend": "openai", "model": model, "api_base": api_base}, breaker)


def local_lm(name: str, alias: str, packages: list[str], filename: str, sha256: str | None,
             adapter: dspy.Adapter, n_ctx: int = 4096, n_threads: int | None = None, port: int | None = None,
             temperature: float = 0.0, max_tokens: int = 512, cache: bool = True, timeout_s: float = 120.0,
             num_retries: int = 1, start_timeout_s: float = 180.0, reuse_running: bool = False,
             extra_buffers: str = "auto", prompt_cache_mb: int = 0, lora: str | None = None) -> LMHandle:
    """A packaged GGUF model: assemble its chunk packages (sha256-checked), serve it, talk OpenAI to it.

    `lora`: a LoRA adapter served with the model (`factlab:<shipped name>`, a PEFT adapter folder or a .gguf file;
    factlab.models.lora). The served alias gains the adapter file's name (`<alias>+<adapter>-<sha12>`), so DSPy's
    cache and a reused server never mix the base model's answers with the adapter's."""
    prepare_offline_env()
    respawn = functools.partial(local_lm, name, alias, packages, filename, sha256, adapter, n_ctx=n_ctx,
                                n_threads=n_threads, port=None, temperature=temperature, max_tokens=max_tokens,
                                cache=cache, timeout_s=timeout_s, num_retries=num_retries,
                                start_timeout_s=start_timeout_s, reuse_running=reuse_running,
                                extra_buffers=extra_buffers, prompt_cache_mb=prompt_cache_mb)
    path = assemble(list(packages), filename, sha256)
    lora_path = None
    if lora:
        from factlab.models.lora import lora_gguf

        lora_path = lora_gguf(lora, path)
        alias = f"{alias}+{lora_path.stem}"
    server = ensure_server(path, alias, n_ctx=n_ctx, n_threads=n_threads, port=port, start_timeout_s=start_timeout_s,
                           reuse_running=reuse_running, extra_buffers=extra_buffers, prompt_cache_mb=prompt_cache_mb,
                           lora_path=lora_path)
    lm = _lm(f"{LOCAL_ROUTE}/{alias}", server.api_base, "local", temperature, max_tokens, cache, timeout_s, num_retries)
    info = {"backend": "local", "model": alias, "file": str(path), "port": server.port}
    return LMHandle(name, lm, adapter, info | ({"lora": str(lora_path)} if lora_path else {}), local_breaker(server),
                    respawn)


def local_breaker(server: LocalServer) -> LMBreaker:
    """The breaker of a server factlab runs: down only when its process is gone or its port closed. A call that times
    out on a busy server (other requests queued, the CPU shared) leaves it up: an HTTP probe would get no answer
    there either, and calling it down stopped a 40-case evaluation (2026-12-04)."""
    return LMBreaker(server.api_base, probe=lambda: server_alive(server),
                     probe_failed=f"its process {server.pid} is gone or port {server.port} is closed")
