"""llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`) with two settings of ours: whether ggml's CPU
backend may put weights in its extra buffer types (AMX tiles, repacked blocks), and a prompt-prefix cache that keeps
only the KV state.

Why: on a VM whose CPU advertises AMX (Intel Xeon, `amx_tile` in /proc/cpuinfo), the llama-cpp-python 0.3.36 wheel
built here with native flags dies at its first generation with a general protection fault at `ldtilecfg` in
`ggml_backend_amx_mul_mat` (seen 2026-12-02: `traps: python general protection fault ... in libggml-cpu.so`). Without
the extra buffers ggml never enters its AMX matmul. `auto` turns them off where the CPU advertises AMX and keeps them
(and their AVX2 repacking) everywhere else.

Prompt cache (`--prompt_cache_mb N`, 0 = off): the server answers one request at a time and reuses the KV of the
previous request's common token prefix only. The pipeline interleaves stages (4 claims in flight: vertical, queries,
judge...), so nearly every request re-reads its stage's whole prompt (instructions, field descriptions, demos) at
prompt-eval speed, which on a 2-core CPU is 39-57 tokens/s for the 0.5B: a 500-token judge prompt costs 9-13 s
before its first output token. llama_cpp's RAM cache keeps the state after every request and restores the one
sharing the longest prefix, but its `save_state` also copies the logits buffer (n_batch x n_vocab floats: 311 MB for
Qwen2.5's 151,936-token vocabulary) that the capacity does not count and that nothing reads when logits_all is off
(sampling happens in llama.cpp's sampler). `keep_kv_only` drops that copy, so N MB holds N MB of KV states.

logits_all: llama_cpp's server defaults to `logits_all=True`, which keeps (and makes llama.cpp compute) the logits of
every prompt token, not only the last: ~0.6 MB a token for Qwen2.5, and with the cache on each saved state carries
them (a 500-token prompt: ~300 MB that the capacity does not count). Until 2026-12-04 this wrapper left that default,
so `keep_kv_only` never applied in the server and a 512 MB cache grew past 23 GB in a 40-case evaluation (killed by
the kernel's OOM killer). Nothing in factlab asks for logprobs, so the server runs with `--logits_all false` unless
told otherwise, and refuses `--logits_all true` with the cache.

    python -m factlab.models.llama_server --extra_buffers auto --prompt_cache_mb 1024 --model m.gguf --port 8080
    # the rest of the arguments go to llama_cpp.server
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence

from factlab.runtime import cpu_flags

MODES = ("auto", "on", "off")
AMX_FLAGS = ("amx_tile", "amx_int8", "amx_bf16")


def use_extra_buffers(mode: str, flags: Iterable[str]) -> bool:
    """Whether ggml may use its extra weight buffers under `mode` on a CPU with these flags.

    >>> use_extra_buffers("auto", {"avx2", "fma"})
    True
    >>> use_extra_buffers("auto", {"avx512f", "amx_tile", "amx_int8"})
    False
    >>> use_extra_buffers("on", {"amx_tile"}), use_extra_buffers("off", {"avx2"})
    (True, False)
    >>> use_extra_buffers("maybe", set())
    Traceback (most recent call last):
    ...
    ValueError: extra_buffers='maybe': expected one of auto, on, off
    """
    if mode not in MODES:
        raise ValueError(f"extra_buffers={mode!r}: expected one of {', '.join(MODES)}")
    if mode == "auto":
        return not set(flags) & set(AMX_FLAGS)
    return mode == "on"


def disable_extra_buffers() -> None:
    """Make every model llama_cpp loads from now on use plain CPU buffers (`use_extra_bufts = False`)."""
    import llama_cpp.llama_cpp as lib

    default = lib.llama_model_default_params
    if hasattr(default, "__wrapped_default__"):
        return

    def plain_params():
        params = default()
        params.use_extra_bufts = False
        return params

    plain_params.__wrapped_default__ = default
    lib.llama_model_default_params = plain_params  # llama_cpp.Llama reads it through the module at load time


def keep_kv_only() -> None:
    """Make `Llama.save_state` / `load_state` skip the logits buffer of models without logits_all (what the RAM prompt
    cache stores per request), so a cached state is the KV cache and token ids only."""
    from contextlib import contextmanager

    import numpy as np
    from llama_cpp import llama as llama_mod

    Llama = llama_mod.Llama
    if getattr(Llama.save_state, "__kv_only__", False):
        return
    save, load = Llama.save_state, Llama.load_state

    @contextmanager
    def no_scores(model):  # `_scores`, a view of `scores`, is what save_state copies and load_state fills
        scores, model.scores = model.scores, np.empty((0, model._n_vocab), dtype=np.single)
        try:
            yield
        finally:
            model.scores = scores

    def save_state(self):
        if self._logits_all:
            return save(self)
        with no_scores(self):
            return save(self)

    def load_state(self, state):
        if self._logits_all or len(state.scores):
            return load(self, state)
        with no_scores(self):
            return load(self, state)

    save_state.__kv_only__ = True
    Llama.save_state, Llama.load_state = save_state, load_state


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--extra_buffers", choices=MODES, default="auto")
    parser.add_argument("--prompt_cache_mb", type=int, default=0)
    parser.add_argument("--logits_all", choices=("true", "false"), default="false")
    ours, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if ours.prompt_cache_mb < 0:
        parser.error(f"--prompt_cache_mb {ours.prompt_cache_mb}: expected >= 0 (0 = off)")
    rest = [*rest, "--logits_all", ours.logits_all]
    if ours.prompt_cache_mb:
        if ours.logits_all == "true":
            parser.error("--logits_all true with --prompt_cache_mb: every cached state would keep its prompt's logits "
                         "(~0.6 MB a token for Qwen2.5), which the cache's capacity does not count")
        keep_kv_only()
        rest = [*rest, "--cache", "true", "--cache_type", "ram", "--cache_size", str(ours.prompt_cache_mb << 20)]
    flags = cpu_flags()
    if not use_extra_buffers(ours.extra_buffers, flags):
        disable_extra_buffers()
        print("factlab: ggml extra weight buffers off (extra_buffers="
              f"{ours.extra_buffers}; AMX advertised: {bool(flags & set(AMX_FLAGS))})", file=sys.stderr)
    from llama_cpp.server.__main__ import main as serve

    sys.argv = [sys.argv[0], *rest]
    serve()


if __name__ == "__main__":
    main()
