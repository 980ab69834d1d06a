"""Process setup every entry point calls first (never at import time): offline hubs, DSPy's disk cache, and the one
place that reads $FACTLAB_CACHE (where models, indexes, the claim cache and server state live)."""

from __future__ import annotations

import os
from pathlib import Path

# Everything runs offline: the hub and litellm's price-map fetch fail here and only cost time.
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "true",
                "TOKENIZERS_PARALLELISM": "false"}


def prepare_offline_env() -> None:
    """Set the offline switches unless the user set them otherwise."""
    for key, value in _OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def configure_lm_cache(cache_dir: str | Path | None) -> None:
    """Point DSPy's disk cache at `cache_dir` (None keeps DSPy's default ~/.dspy_cache)."""
    if cache_dir is None:
        return
    import dspy

    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(cache_dir))


def cache_root() -> Path:
    """factlab's cache folder: $FACTLAB_CACHE, default ~/.cache/factlab (models/, index/, claims.sqlite, servers/).

    Every module asks here; nothing else reads the variable, so one setting moves every cache.
    """
    return Path(os.environ.get("FACTLAB_CACHE") or Path.home() / ".cache" / "factlab")
