"""Where trained models go: logged as the run's `model` artifact and registered in the MLflow registry, with their
size and parameter count. (Where they come back from: factlab.tracking.refs.resolve_model.)
"""

from __future__ import annotations

from pathlib import Path


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
