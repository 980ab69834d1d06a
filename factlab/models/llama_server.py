"""llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`) with one setting of ours: whether ggml's CPU
backend may put weights in its extra buffer types (AMX tiles, repacked blocks).

Why: on a VM whose CPU advertises AMX (Intel Xeon, `amx_tile` in /proc/cpuinfo), the llama-cpp-python 0.3.36 wheel
built here with native flags dies at its first generation with a general protection fault at `ldtilecfg` in
`ggml_backend_amx_mul_mat` (seen 2026-12-02: `traps: python general protection fault ... in libggml-cpu.so`). Without
the extra buffers ggml never enters its AMX matmul. `auto` turns them off where the CPU advertises AMX and keeps them
(and their AVX2 repacking) everywhere else.

    python -m factlab.models.llama_server --extra_buffers auto --model m.gguf --port 8080   # the rest: llama_cpp.server
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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--extra_buffers", choices=MODES, default="auto")
    ours, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
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
