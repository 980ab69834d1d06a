"""One tracked run per job, opened the same way by every entry point (verify.py, evaluate.py, optimize.py, train.py):
the whole config resolved first (a missing `???` value fails before any work), the configured tracker's run opened
before the work starts, the resolved config logged as the run's params (secrets redacted) and Hydra's `.hydra/`
folder as its `hydra/` artifact."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf


def resolved_config(cfg: DictConfig) -> dict:
    """The whole config as plain values; raises on any missing (`???`) value, naming it."""
    return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)


def hydra_output_dir() -> Path | None:
    """The Hydra run's output folder, or None outside a Hydra app (tests calling `run(cfg)` directly)."""
    from hydra.core.hydra_config import HydraConfig

    return Path(HydraConfig.get().runtime.output_dir) if HydraConfig.initialized() else None


@contextlib.contextmanager
def tracked_run(cfg: DictConfig, experiment: str, *, run_name: str | None = None,
                tags: Mapping[str, str] | None = None, run_id: str | None = None,
                params: Mapping[str, Any] | None = None, tracker=None) -> Iterator[Any]:
    """Open `experiment`'s run on `cfg.tracking` (or on `tracker`, when the job needed it earlier) and yield it.

    Args:
        cfg: the job's composed config (it must have a `tracking` group).
        experiment: the MLflow experiment, e.g. `optimize/judge`.
        run_name: the run's name; tags: its tags.
        run_id: resume this MLflow run (its params are already logged and MLflow refuses changed values).
        params: job facts logged beside the config (dataset content hash, split sizes, ...).
        tracker: an already built tracker of `cfg.tracking`.
    """
    resolved = resolved_config(cfg)
    tracker = tracker if tracker is not None else _build(cfg)
    with tracker.run(experiment, run_name=run_name, tags=tags, run_id=run_id) as track:
        if run_id is None:
            track.log_params({**resolved, **dict(params or {})})
        output = hydra_output_dir()
        if output is not None and (output / ".hydra").is_dir():
            track.log_artifact(output / ".hydra", "hydra")
        yield track


def _build(cfg: DictConfig):
    from hydra.utils import instantiate

    return instantiate(cfg.tracking)
