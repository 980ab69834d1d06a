"""Compose the `retrieval` config outside a Hydra app (scripts, notebooks, tests).

Inside a Hydra app use `cfg.retrieval` directly; this composes the same node from `conf/`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig


def default_conf_dir() -> Path:
    """The repository's `conf/` folder (factlab is installed editable from the repository)."""
    return Path(__file__).resolve().parents[2] / "conf"


def load_retrieval_config(overrides: Sequence[str] = (), conf_dir: str | Path | None = None) -> DictConfig:
    """Compose `conf/retrieval/default.yaml` with its tier tables and return the `retrieval` node, resolved.

    Args:
        overrides: Hydra overrides, e.g. `["retrieval.search.min_evidence=1"]`.
        conf_dir: the config root; None = the repository's `conf/`.

    Raises:
        FileNotFoundError: no `retrieval/default.yaml` under the config root.
    """
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    root = Path(conf_dir) if conf_dir is not None else default_conf_dir()
    if not (root / "retrieval" / "default.yaml").exists():
        raise FileNotFoundError(f"no retrieval/default.yaml under {root.resolve()}; pass conf_dir=<the conf folder>")
    with initialize_config_dir(version_base=None, config_dir=str(root.resolve())):
        cfg = compose(config_name="retrieval/default", overrides=list(overrides))
    OmegaConf.resolve(cfg)
    return cfg.retrieval
