"""The one resolver of references to things in a store: a compiled program (`programs.<stage>=<ref>`) and a trained
model (`stage.<name>.model=<ref>`) both become local files, looked up in the store of factlab/tracking/store.py.

- A program ref is a JSON state file, an optimize.py run dir (holding program/<stage>.json), an MLflow run id of an
  optimize.py run, or a `runs:/<run id>/<artifact path>` URI.
- A model ref is a local folder, `models:/<name>/<version>` (the registry), `models:/<name>@<alias>` or
  `runs:/<run id>/model`. Immutable URIs are downloaded once into <cache root>/models/mlflow.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from pathlib import Path

from factlab.runtime import cache_root
from factlab.tracking.store import sqlite_path, tracking_uri

SHIPPED_SCHEME = "factlab:"  # factlab:<name> = a model shipped in the repo, factlab/models/shipped/<name>/
SHIPPED_ROOT = Path(__file__).resolve().parent.parent / "models" / "shipped"
PROGRAM_ARTIFACT_DIR = "program"  # optimize.py logs the compiled program as program/<stage>.json
MLFLOW_SCHEMES = ("models:/", "runs:/")
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


class CompiledRefError(ValueError):
    """A `programs.<stage>=` reference that is neither a file nor a known MLflow run."""


class ModelRefError(RuntimeError):
    """A trained-model reference that leads to no model folder."""


def program_file_name(stage: str) -> str:
    """The file name of a stage's compiled program.

    >>> program_file_name("judge")
    'judge.json'
    """
    return f"{stage}.json"


def resolve_compiled(ref: str | Path, stage: str, store: str | None = None,
                     download_dir: str | Path | None = None) -> Path:
    """The local JSON state file of the compiled `stage` program that `ref` names.

    Args:
        ref: a JSON file, an optimize.py run dir, an MLflow run id, or a `runs:/` URI.
        stage: the stage the program must be for (checked against the run's `stage` tag for run ids).
        store: MLflow store to look run ids up in; None = the store rule.
        download_dir: where MLflow artifacts are downloaded; None = a fresh temporary folder.

    Raises:
        CompiledRefError: the ref names no file, no run, a run of another stage, or a run without the program.
    """
    text = str(ref).strip()
    path = Path(text).expanduser()
    if path.is_file():
        return path
    if path.is_dir():
        inside = path / PROGRAM_ARTIFACT_DIR / program_file_name(stage)
        if inside.is_file():
            return inside
        raise CompiledRefError(f"programs.{stage}={text}: the folder has no {PROGRAM_ARTIFACT_DIR}/"
                               f"{program_file_name(stage)}; pass the program JSON file or the optimize.py run dir")
    if text.startswith("runs:/"):
        return _download_program(text, None, stage, store, download_dir)
    if _RUN_ID.match(text):
        return _download_program(None, text, stage, store, download_dir)
    raise CompiledRefError(f"programs.{stage}={text}: no such file, and not an MLflow run id (32 hex digits) or a "
                           "runs:/<run id>/<path> URI; pass the JSON written by optimize.py or its MLflow run id")


def _download_program(uri: str | None, run_id: str | None, stage: str, store: str | None,
                      download_dir: str | Path | None) -> Path:
    import mlflow
    from mlflow.exceptions import MlflowException

    store = tracking_uri(store)
    client = mlflow.MlflowClient(tracking_uri=store)
    if uri is None:
        try:
            run = client.get_run(run_id)
        except MlflowException as exc:
            raise CompiledRefError(f"programs.{stage}={run_id}: no such MLflow run on {store} ({exc}); set "
                                   "FACTLAB_MLFLOW_URI to the store optimize.py logged to") from None
        run_stage = run.data.tags.get("stage")
        if run_stage != stage:
            raise CompiledRefError(f"programs.{stage}={run_id}: that run compiled stage {run_stage!r}, not {stage!r}")
        uri = f"runs:/{run_id}/{PROGRAM_ARTIFACT_DIR}/{program_file_name(stage)}"
    target = Path(download_dir) if download_dir is not None else Path(tempfile.mkdtemp(prefix="factlab-program-"))
    target.mkdir(parents=True, exist_ok=True)
    try:
        local = mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=str(target), tracking_uri=store)
    except (MlflowException, OSError) as exc:
        raise CompiledRefError(f"programs.{stage}: cannot download {uri} from {store}: {exc}") from None
    return Path(local)


def shipped_names() -> list[str]:
    """The models shipped in the repo (folders with a MODEL_CARD.md under factlab/models/shipped/)."""
    if not SHIPPED_ROOT.is_dir():
        return []
    return sorted(p.name for p in SHIPPED_ROOT.iterdir() if p.is_dir() and (p / "MODEL_CARD.md").is_file())


def shipped_path(ref: str) -> Path:
    """The folder of `factlab:<name>`.

    Raises:
        ModelRefError: no shipped model has that name (the message lists those that do).
    """
    name = str(ref)[len(SHIPPED_SCHEME):].strip().strip("/")
    folder = SHIPPED_ROOT / name
    if not name or not (folder / "MODEL_CARD.md").is_file():
        raise ModelRefError(f"model {ref!r}: no shipped model of that name; shipped: "
                            f"{', '.join(SHIPPED_SCHEME + n for n in shipped_names()) or 'none'}")
    return folder


def resolve_model(model: str | Path, store: str | None = None, cache_dir: str | Path | None = None) -> Path:
    """The local folder of a trained model: a path as given, or an MLflow URI downloaded once into `cache_dir`.

    Args:
        model: a folder, `factlab:<name>` (a model shipped in the repo, factlab/models/shipped/),
            `models:/<name>/<version>`, `models:/<name>@<alias>` or `runs:/<run id>/<path>`.
        store: MLflow store to look URIs up in; None = the store rule.
        cache_dir: where downloads of immutable URIs are kept; default <cache root>/models/mlflow.

    Raises:
        ModelRefError: the folder does not exist, or the URI is not in the store.
    """
    text = str(model)
    if text.startswith(SHIPPED_SCHEME):
        return shipped_path(text)
    if not text.startswith(MLFLOW_SCHEMES):
        path = Path(text).expanduser()
        if not path.is_dir():
            raise ModelRefError(f"model {text!r}: folder not found; pass the model folder or URI that "
                                "`python train.py` printed (model_uri)")
        return path
    store = tracking_uri(store)
    database = sqlite_path(store)
    if database is not None and not database.exists():
        raise ModelRefError(f"model {text!r}: MLflow store {store} does not exist; set FACTLAB_MLFLOW_URI (or "
                            "MLFLOW_TRACKING_URI) to the store the model was registered in")
    import mlflow.artifacts

    text = _pin_latest(text, store)
    immutable = text.startswith("runs:/") or text.rstrip("/").rsplit("/", 1)[-1].isdigit()  # not an alias
    root = Path(cache_dir) if cache_dir is not None else cache_root() / "models" / "mlflow"
    target = root / hashlib.sha256(f"{store}|{text}".encode()).hexdigest()[:16]
    if immutable and (target / ".complete").exists():
        return target
    try:
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=_artifact_uri(text, store), tracking_uri=store))
    except Exception as exc:  # MLflow raises several types for an unknown model / run
        raise ModelRefError(f"model {text!r}: not found in MLflow store {store} ({exc}); list versions with "
                            "`mlflow models` / the MLflow UI, or set FACTLAB_MLFLOW_URI") from exc
    if not immutable:
        return local
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(local, target)
    (target / ".complete").write_text(text)
    return target


def _pin_latest(uri: str, store: str) -> str:
    """`models:/<name>/latest` as the newest registered version's `models:/<name>/<N>` (other URIs unchanged)."""
    if not (uri.startswith("models:/") and uri.rstrip("/").endswith("/latest")):
        return uri
    name = uri.removeprefix("models:/").rstrip("/").removesuffix("/latest")
    from mlflow.tracking import MlflowClient

    try:
        versions = [int(v.version) for v in MlflowClient(tracking_uri=store).search_model_versions(f"name='{name}'")]
    except Exception as exc:  # MLflow raises several types for a store without a registry
        raise ModelRefError(f"model {uri!r}: cannot list versions of {name!r} in MLflow store {store} ({exc})") from exc
    if not versions:
        raise ModelRefError(f"model {uri!r}: no version of {name!r} is registered in MLflow store {store}; train one "
                            f"(`python train.py recipe=...`, docs/small_models.md) or set the model to a folder")
    return f"models:/{name}/{max(versions)}"


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
