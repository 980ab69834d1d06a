"""Experiment tracking: MLflow on a sqlite store (conf/tracking/mlflow.yaml) or nothing (tracking=off).

One run per job (factlab.tracking.run.tracked_run opens it the same way for every entry point). Params are the
resolved config with anything secret-looking redacted; metric names are `split/metric`; artifacts are files, text,
dicts, tables and figures.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from factlab.atomic import build_lock
from factlab.tracking.store import sqlite_path
from factlab.tracking.store import tracking_uri as store_uri

_SECRET_KEY = re.compile(r"(api_?key|token|secret|password|passwd|authorization)(?!_env)", re.IGNORECASE)


def flatten(d: Mapping, prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts to dotted keys.

    >>> flatten({"a": {"b": 1}, "c": [1, 2]})
    {'a.b': 1, 'c': '[1, 2]'}
    """
    out: dict[str, Any] = {}
    for key, value in d.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        elif isinstance(value, list | tuple):
            out[name] = json.dumps(list(value), ensure_ascii=False, default=str)
        else:
            out[name] = value
    return out


def redact(params: Mapping[str, Any]) -> dict[str, Any]:
    """Replace the value of any key that looks secret (but not `*_env`, which names an env var).

    >>> redact({"lm.api_key": "sk-123", "lm.api_key_env": "OPENAI_API_KEY", "lr": 0.1})
    {'lm.api_key': '***', 'lm.api_key_env': 'OPENAI_API_KEY', 'lr': 0.1}
    """
    return {k: ("***" if _SECRET_KEY.search(k.rsplit(".", 1)[-1]) else v) for k, v in params.items()}


class NullTracker:
    """tracking=off: every call is accepted and nothing is stored."""

    run_id: str | None = None
    tracking_uri: str | None = None

    @contextlib.contextmanager
    def run(self, experiment: str, run_name: str | None = None, tags: Mapping[str, str] | None = None,
            run_id: str | None = None) -> Iterator[NullTracker]:
        yield self

    def log_params(self, params: Mapping[str, Any]) -> None: ...
    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None: ...
    def set_tags(self, tags: Mapping[str, str]) -> None: ...
    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None: ...
    def log_text(self, text: str, name: str) -> None: ...
    def log_dict(self, data: Any, name: str) -> None: ...
    def log_figure(self, figure, name: str) -> None: ...
    def log_table(self, rows: list[dict], name: str) -> None: ...


class MLflowTracker(NullTracker):
    """MLflow with a sqlite backend store and a local artifact folder.

    Args:
        tracking_uri: e.g. `sqlite:///mlruns/mlflow.db`; None = the store rule of factlab/tracking/store.py. A
            relative sqlite path is made absolute and its folder created.
        artifact_root: folder for run artifacts (used when an experiment is created).
    """

    def __init__(self, tracking_uri: str | None, artifact_root: str) -> None:
        tracking_uri = store_uri(tracking_uri)
        database = sqlite_path(tracking_uri)
        if database is not None:
            database.parent.mkdir(parents=True, exist_ok=True)
        self.tracking_uri = tracking_uri
        self.artifact_root = Path(artifact_root).resolve()
        self.run_id = None

    def _client(self):
        import mlflow

        mlflow.set_tracking_uri(self.tracking_uri)
        return mlflow

    def _experiment_id(self, mlflow, experiment: str) -> str:
        """The experiment's id, created if missing. Under a file lock beside a sqlite store: jobs of a parallel sweep
        (submitit, Ray) that open a new store at once would otherwise race its schema migration ("duplicate column")
        and the experiment's creation."""
        database = sqlite_path(self.tracking_uri)
        lock = build_lock(database) if database is not None else contextlib.nullcontext()
        with lock:
            exp = mlflow.get_experiment_by_name(experiment)
            if exp is not None:
                return exp.experiment_id
            self.artifact_root.mkdir(parents=True, exist_ok=True)
            return mlflow.create_experiment(experiment, artifact_location=(self.artifact_root / experiment).as_uri())

    @contextlib.contextmanager
    def run(self, experiment: str, run_name: str | None = None, tags: Mapping[str, str] | None = None,
            run_id: str | None = None) -> Iterator[MLflowTracker]:
        """Start (or, with `run_id`, resume) a run in `experiment`; sets MLFLOW_* env vars for child libraries."""
        mlflow = self._client()
        exp_id = self._experiment_id(mlflow, experiment)
        # one set of MLFLOW_* vars for DSPy, TRL and VERL while the run is open; the previous values come back after
        saved = {key: os.environ.get(key) for key in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME")}
        os.environ["MLFLOW_TRACKING_URI"] = self.tracking_uri
        os.environ["MLFLOW_EXPERIMENT_NAME"] = experiment
        try:
            with mlflow.start_run(run_id=run_id, experiment_id=None if run_id else exp_id, run_name=run_name,
                                  tags=dict(tags or {})) as active:
                self.run_id = active.info.run_id
                try:
                    yield self
                finally:
                    self.run_id = None
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def log_params(self, params: Mapping[str, Any]) -> None:
        mlflow = self._client()
        flat = redact(flatten(params))
        items = [(k, str(v)[:6000]) for k, v in flat.items()]
        for i in range(0, len(items), 90):
            mlflow.log_params(dict(items[i:i + 90]))

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        clean = {re.sub(r"[^\w\-./ ]", "_", k): float(v) for k, v in metrics.items() if v is not None}
        self._client().log_metrics(clean, step=step)

    def set_tags(self, tags: Mapping[str, str]) -> None:
        self._client().set_tags({k: str(v) for k, v in tags.items()})

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        path = Path(path)
        if path.is_dir():
            self._client().log_artifacts(str(path), artifact_path=artifact_path)
        else:
            self._client().log_artifact(str(path), artifact_path=artifact_path)

    def log_text(self, text: str, name: str) -> None:
        self._client().log_text(text, name)

    def log_dict(self, data: Any, name: str) -> None:
        self._client().log_text(json.dumps(data, ensure_ascii=False, indent=2, default=str), name)

    def log_figure(self, figure, name: str) -> None:
        self._client().log_figure(figure, name)

    def log_table(self, rows: list[dict], name: str) -> None:
        """A list of dicts as a JSONL artifact (`name` should end in .jsonl)."""
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / Path(name).name
            path.write_text("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows))
            parent = str(Path(name).parent)
            self.log_artifact(path, None if parent == "." else parent)
