"""Compose the Hydra config tree under conf/ from code (CLIs and tests); apps use @hydra.main directly."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"


@contextlib.contextmanager
def _hydra_of_our_own() -> Iterator[None]:
    """Compose inside a running Hydra app too (train.py loading a dataset mix, a reward reading business rules): the
    app's global Hydra state is set aside and put back."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.initialize import get_gh_backup, restore_gh_from_backup

    backup = get_gh_backup()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            yield
    finally:
        restore_gh_from_backup(backup)


def compose_config(config_name: str, overrides: list[str] | None = None) -> DictConfig:
    """Compose `conf/<config_name>.yaml` with Hydra overrides; every interpolation is checked to resolve (fails on a
    reference to nothing) but kept, as under `@hydra.main`: a value set after composing (tests, evaluate.py's
    sources) reaches every node that refers to it (a checker's parts interpolate the shared ones)."""
    with _hydra_of_our_own():
        cfg = compose(config_name=config_name, overrides=list(overrides or []))
    OmegaConf.to_container(cfg, resolve=True)
    return cfg


def compose_option(group: str, option: str) -> DictConfig:
    """One option of a config group composed on its own, its defaults list applied (conf/business/medical.yaml
    inherits conf/business/default.yaml this way), resolved.

    Raises:
        ValueError: no such option, naming the ones there are.
    """
    if option not in config_names(group):
        options = ", ".join(config_names(group))
        raise ValueError(f"{group}={option!r}: no conf/{group}/{option}.yaml; options: {options}")
    with _hydra_of_our_own():
        cfg = compose(config_name=f"{group}/{option}")
    OmegaConf.resolve(cfg)
    return cfg[group]


def config_names(group: str) -> list[str]:
    """The option names of a config group (the yaml files under conf/<group>/)."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))
