"""Turn `programs.<stage>=<ref>` into a JSON state file that `build_program(stage_cfg, compiled=...)` loads.

A ref is a path (a program JSON, or a run dir of optimize.py), an MLflow run id of an optimize.py run, or a
`runs:/<run id>/<artifact path>` URI. Run ids are looked up on `tracking_uri` (default: $FACTLAB_MLFLOW_URI, else
the store of conf/tracking/mlflow.yaml, sqlite:///mlruns/mlflow.db).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

PROGRAM_ARTIFACT_DIR = "program"  # optimize.py logs the compiled program as program/<stage>.json
DEFAULT_TRACKING_URI = "sqlite:///mlruns/mlflow.db"
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


class CompiledRefError(ValueError):
    """A `programs.<stage>=` reference that is neither a file nor a known MLflow run."""


def program_file_name(stage: str) -> str:
    """The file name of a stage's compiled program.

    >>> program_file_name("judge")
    'judge.json'
    """
    return f"{stage}.json"


def _tracking_uri(tracking_uri: str | None) -> str:
    from factlab.tracking.trackers import MLflowTracker

    uri = tracking_uri or os.environ.get("FACTLAB_MLFLOW_URI") or DEFAULT_TRACKING_URI
    return MLflowTracker(uri, "mlruns/artifacts").tracking_uri  # makes a relative sqlite path absolute


def resolve_compiled(ref: str | Path, stage: str, tracking_uri: str | None = None,
                     download_dir: str | Path | None = None) -> Path:
    """The local JSON state file of the compiled `stage` program that `ref` names.

    Args:
        ref: a JSON file, an optimize.py run dir (holding program/<stage>.json), an MLflow run id, or a
            `runs:/` URI.
        stage: the stage the program must be for (checked against the run's `stage` tag for run ids).
        tracking_uri: MLflow store to look run ids up in.
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
        return _download(text, None, stage, tracking_uri, download_dir)
    if _RUN_ID.match(text):
        return _download(None, text, stage, tracking_uri, download_dir)
    raise CompiledRefError(f"programs.{stage}={text}: no such file, and not an MLflow run id (32 hex digits) or a "
                           "runs:/<run id>/<path> URI; pass the JSON written by optimize.py or its MLflow run id")


def _download(uri: str | None, run_id: str | None, stage: str, tracking_uri: str | None,
              download_dir: str | Path | None) -> Path:
    import tempfile

    import mlflow
    from mlflow.exceptions import MlflowException

    store = _tracking_uri(tracking_uri)
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
