"""evaluate's `run(cfg)` on the synthetic world with a temporary MLflow store, then compare_runs.py and reflow.py on
what it logged, and the `dataset.extra` hook that reads reflowed rows back."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest
from conftest import fake_config
from omegaconf import OmegaConf

from factlab.data.cases import load_cases
from factlab.data.registry import load_dataset
from factlab.data.splits import LeakageError, split_cases
from factlab.evals.compare import main as compare_main
from factlab.evals.job import run
from factlab.evals.reflow import main as reflow_main
from factlab.stages.examples import stage_examples


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mlruns")


@pytest.fixture(scope="module")
def runs(world, store, tmp_path_factory):
    """A healthy run and a broken-judge run of the test split, and a broken-judge run of the train split."""
    healthy = run(fake_config(world, tmp_path_factory.mktemp("healthy"), store))
    broken = run(fake_config(world, tmp_path_factory.mktemp("broken"), store, broken={"judge": "always_support"}))
    train = run(fake_config(world, tmp_path_factory.mktemp("train"), store, broken={"judge": "always_support"},
                            overrides=["splits.train=1.0", "splits.test=0.0", "split=train"]))
    return {"healthy": healthy, "broken": broken, "train": train}


def test_run_logs_metrics_attribution_and_artifacts(runs):
    client = mlflow.MlflowClient(tracking_uri=runs["broken"]["tracking_uri"])
    logged = client.get_run(runs["broken"]["mlflow_run_id"])
    metrics = logged.data.metrics
    assert metrics["attr/bad_items"] == 4 and metrics["attr/first_failure/judge/count"] == 4
    assert metrics["attr/counterfactual/judge/share"] == 1.0 and metrics["attr/first_failure/vertical/count"] == 0
    assert metrics["test/retrieval/recall_at_k"] == 1.0 and metrics["test/judge/macro_f1"] < 1.0
    assert metrics["test/label/accuracy_ci_low"] <= metrics["test/label/accuracy"] <= metrics[
        "test/label/accuracy_ci_high"]
    assert "cost/pipeline/judge/items" in metrics and "cost/attribution/rules/items" in metrics
    assert client.get_experiment(logged.info.experiment_id).name == "evaluate/synthetic"
    assert logged.data.params["split"] == "test" and logged.data.tags["compiled"] == "none"
    names = {a.path for a in client.list_artifacts(logged.info.run_id, "eval")}
    assert {"eval/attribution.jsonl", "eval/items.jsonl", "eval/config.json", "eval/label_confusion.json"} <= names
    assert [a.path for a in client.list_artifacts(logged.info.run_id, "plots")] == ["plots/attribution.png"]
    rows = [json.loads(line) for line in (Path(runs["broken"]["output_dir"]) / "attribution.jsonl").read_text()
            .splitlines()]
    assert {r["first_failure"] for r in rows} == {"judge"} and all(r["first_failure_evidence"] for r in rows)
    healthy = client.get_run(runs["healthy"]["mlflow_run_id"]).data.metrics
    assert healthy["attr/bad_items"] == 0 and healthy["test/label/accuracy"] == 1.0


def test_compare_runs_tables_deltas_and_logs_the_chart(runs, tmp_path):
    base, new = runs["healthy"]["mlflow_run_id"], runs["broken"]["mlflow_run_id"]
    uri = runs["broken"]["tracking_uri"]
    result = compare_main([base, new, "--tracking-uri", uri, "--out", str(tmp_path), "--log"])
    assert result["runs"] == [base, new]
    line = next(row for row in result["table"].splitlines() if row.startswith("| attr/counterfactual/judge/share "))
    assert line.split(" | ")[-1].strip(" |") == "+1.000"
    label_row = next(row for row in result["table"].splitlines() if row.startswith("| test/label/accuracy "))
    assert "| 1.000 |" in label_row and "-" in label_row.split(" | ")[-1]
    assert (tmp_path / "distributions.png").stat().st_size > 0
    client = mlflow.MlflowClient(tracking_uri=uri)
    logged = {a.path for a in client.list_artifacts(new, f"compare/{base}")}
    assert logged == {f"compare/{base}/comparison.md", f"compare/{base}/distributions.png"}
    by_filter = compare_main(["tags.split = 'test'", "--tracking-uri", uri, "--out", str(tmp_path)])
    assert by_filter["runs"][:2] == [base, new]  # oldest first
    with pytest.raises(ValueError, match="matches no run"):
        compare_main(["tags.split = 'nope'", "--tracking-uri", uri, "--out", str(tmp_path)])


def reflow_config(runs, out_dir: Path, run_id: str):
    from factlab.config import compose_config

    uri = runs["train"]["tracking_uri"]
    return compose_config("evaluate", [f"reflow.run={run_id}", f"reflow.out_dir={out_dir}",
                                       f"tracking.tracking_uri={uri}", "reflow.test_datasets=[bundled]"])


def test_reflow_exports_blamed_cases_in_the_stage_format_once_and_never_test_ones(runs, world, tmp_path):
    from factlab.evals.reflow import reflow_run

    train_run = runs["train"]["mlflow_run_id"]
    out = tmp_path / "reflow"
    prepared = tmp_path / "prepared"
    (prepared / "synthetic").mkdir(parents=True)
    held_out = [c for c in load_cases(world / "cases.jsonl") if c["case_id"] == "syn-fin-1"]
    (prepared / "synthetic" / "test.jsonl").write_text("".join(
        json.dumps({k: v for k, v in c.items() if k != "sources"}) + "\n" for c in held_out))
    (prepared / "synthetic" / "corpus").mkdir()
    (prepared / "synthetic" / "corpus" / "world.jsonl").write_text((world / "corpus" / "world.jsonl").read_text())

    result = reflow_run(reflow_config(runs, out, train_run), prepared)
    judge = result["counts"]["judge"]
    assert judge == {"exported": 2, "no_training_format": 0, "in_test": 2, "duplicate": 0}  # fin-1's two are test
    path = out / "judge" / f"{train_run}.jsonl"
    rows = load_cases(path)  # valid case files
    assert {r["provenance"]["case_id"] for r in rows} == {"syn-med-1", "syn-sci-1"}
    for row in rows:
        assert row["split"] == "train" and row["provenance"]["run_id"] == train_run
        assert row["provenance"]["methods"] == ["counterfactual", "first_failure"]
        assert set(row["claims"][0]) == {"claim_id", "text", "evidence", "relation", "label"}
        assert len(stage_examples([row], "judge")) == 1 and stage_examples([row], "vertical") == []

    again = reflow_run(reflow_config(runs, out, train_run), prepared)  # idempotent: its own file is not a duplicate
    assert again["counts"]["judge"]["exported"] == 2 and len(load_cases(path)) == 2
    other = reflow_run(reflow_config(runs, out, runs["broken"]["mlflow_run_id"]), prepared)
    assert other["counts"]["judge"]["in_test"] == 4 and other["files"] == {}  # the test split never reflows

    cli = reflow_main([f"run={train_run}", f"reflow.out_dir={out}",
                      f"tracking.tracking_uri={runs['train']['tracking_uri']}"])
    assert cli["counts"]["judge"]["exported"] == 4 - cli["counts"]["judge"]["in_test"]


def test_dataset_extra_adds_reflowed_rows_to_train_only_and_moves_no_case(runs, world, tmp_path):
    from factlab.evals.reflow import reflow_run

    out = tmp_path / "reflow"
    reflow_run(reflow_config(runs, out, runs["train"]["mlflow_run_id"]), tmp_path / "no-prepared")
    base_cfg = OmegaConf.create({"_target_": "factlab.data.loaders.case_files.load", "name": "synthetic",
                                 "data_root": str(world), "files": ["cases.jsonl"], "max_rows": None})
    plain = load_dataset(base_cfg)
    extra = load_dataset(OmegaConf.merge(base_cfg, {"extra": str(out)}))
    added = [c for c in extra.cases if c["case_id"].startswith("reflow-")]
    assert len(added) == 4 and extra.content_hash != plain.content_hash
    fractions = {"train": 0.34, "val": 0.33, "test": 0.33}
    before = split_cases(plain.cases, fractions, 0)
    in_train = {c["case_id"] for c in before["train"]}
    kept = [c for c in added if c["provenance"]["case_id"] in in_train]
    assert kept and len(kept) < len(added)
    after = split_cases(plain.cases + kept, fractions, 0)
    for name in ("val", "test"):
        assert [c["case_id"] for c in after[name]] == [c["case_id"] for c in before[name]]
    assert {c["case_id"] for c in kept} <= {c["case_id"] for c in after["train"]}
    with pytest.raises(LeakageError, match="reflow-judge"):  # a reflowed claim of a test case is refused
        split_cases(extra.cases, fractions, 0)
    with pytest.raises(Exception, match="no case files"):
        load_dataset(OmegaConf.merge(base_cfg, {"extra": str(tmp_path / "empty")}))
