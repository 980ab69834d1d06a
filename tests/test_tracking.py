"""The MLflow tracker on a real temporary sqlite store; secrets never reach params."""

from __future__ import annotations

import mlflow

from factlab.tracking.trackers import MLflowTracker, NullTracker


def test_mlflow_tracker_logs_params_metrics_and_artifacts(tmp_path):
    tracker = MLflowTracker(f"sqlite:///{tmp_path}/m.db", str(tmp_path / "art"))
    with tracker.run("optimize/judge", run_name="t", tags={"sweep_id": "s1"}) as t:
        t.log_params({"lm": {"api_key": "sk-secret", "api_key_env": "OPENAI_API_KEY"}, "seed": 0})
        t.log_metrics({"val/score": 0.5}, step=1)
        t.log_text("hello", "notes/x.txt")
        t.log_table([{"a": 1}], "tables/preds.jsonl")
        run_id = t.run_id
    client = mlflow.MlflowClient(tracking_uri=tracker.tracking_uri)
    run = client.get_run(run_id)
    assert run.data.params["lm.api_key"] == "***" and run.data.params["lm.api_key_env"] == "OPENAI_API_KEY"
    assert run.data.metrics["val/score"] == 0.5 and run.data.tags["sweep_id"] == "s1"
    names = {a.path for a in client.list_artifacts(run_id, "tables")}
    assert names == {"tables/preds.jsonl"}


def test_null_tracker_accepts_everything():
    with NullTracker().run("x") as t:
        t.log_params({"a": 1})
        t.log_metrics({"m": 1.0})
        assert t.run_id is None
