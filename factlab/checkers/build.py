"""The one place a checker is made from config: `build_checker(cfg)` instantiates `cfg.checker` (conf/checker/<name>
.yaml: `_target_` and nested parts: stages, retriever, verdict, layers, student) in one call. The whole `cfg` stops
here: what the checker holds afterwards is built objects, never config.

Callers that pass a built part (tests pass a retriever or a student) give it as an override of that node.
"""

from __future__ import annotations

from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

CHECKERS = ("fast", "professional", "funnel", "nearline")


class CheckerConfigError(ValueError):
    """A checker's config names something that cannot be built."""


def checker_name(cfg: DictConfig) -> str:
    """The configured checker's name (conf/checker/<name>.yaml `name`)."""
    name = str(OmegaConf.select(cfg, "checker.name"))
    if name not in CHECKERS:
        raise CheckerConfigError(f"checker={name!r}: expected one of {', '.join(CHECKERS)} (conf/checker/)")
    return name


def build_checker(cfg: DictConfig, **parts: Any):
    """The checker `cfg.checker` describes, built in one `instantiate` call.

    Args:
        cfg: a composed verify / evaluate config (its `checker` node; the parts it interpolates: `stage`, `retriever`,
            `student`, `business`, `layers`, ... from conf/pipeline/default.yaml).
        parts: built objects that replace a node of the checker (e.g. `retriever=`, `student=` in tests).

    Raises:
        CheckerConfigError: `checker=nearline` (a job over many documents: factlab.checkers.nearline.run).
    """
    if checker_name(cfg) == "nearline":
        raise CheckerConfigError("checker=nearline checks a folder or JSONL of documents: run it with verify.py "
                                 "checker=nearline input=<folder or .jsonl> (factlab.checkers.nearline.run)")
    try:
        return instantiate(cfg.checker, **parts)
    except InstantiationException as exc:  # the part's own error names the setting and the fix: raise that
        if isinstance(exc.__cause__, ValueError | FileNotFoundError | RuntimeError | KeyError):
            raise exc.__cause__ from exc
        raise
