"""train.py end to end: `recipe=distill_judge` on the bundled dataset for one short epoch with the packaged MiniLM,
logged and registered in a throwaway MLflow store; then the registered judge answers through the stage loader
(slow) and runs as the judge of the full verify pipeline (llm: the other stages need the local 0.5B model).

    pytest -m "slow or llm" tests/train/test_train_integration.py
"""

from __future__ import annotations

import pytest

from factlab.config import compose_config
from factlab.schema import RELATIONS
from factlab.stages.classifiers import JudgeClassifier, load_stage_classifier
from factlab.train.job import run as run_training


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One short epoch of distill_judge on bundled (packaged MiniLM), tracked in a temporary MLflow store."""
    root = tmp_path_factory.mktemp("train_integration")
    patch = pytest.MonkeyPatch()
    store = f"sqlite:///{root / 'mlflow.db'}"
    for key, value in {"FACTLAB_MLFLOW_URI": store, "FACTLAB_MLFLOW_ARTIFACTS": str(root / "artifacts"),
                       "MLFLOW_TRACKING_URI": store, "FACTLAB_CACHE": str(root / "cache")}.items():
        patch.setenv(key, value)
    # a few hundred rows: the test checks the loop, the logging and the registry, not the judge's quality
    cfg = compose_config("train", ["recipe=distill_judge", "recipe.epochs=1", "recipe.min_steps=0",
                                   "recipe.eval_every=8",
                                   "recipe.max_rows.train=256", "recipe.max_rows.val=64", "recipe.max_rows.test=128",
                                   f"output_root={root / 'out'}", "threads=1"])
    result = run_training(cfg)  # what train.py's run(cfg) calls
    yield result
    patch.undo()


@pytest.mark.slow
def test_train_py_registers_a_measured_judge(trained):
    assert trained["model_uri"].startswith("models:/factlab-distill_judge/"), trained["model_uri"]
    assert trained["run_id"] and trained["train/steps"] >= 1
    for key in ("test/macro_f1", "test/balanced_accuracy", "test/accuracy", "test/agreement_with_teacher",
                "test/items_per_s", "model/parameters", "model/size_mb"):
        assert key in trained, key
    assert trained["model/parameters"] > 20_000_000  # MiniLM-L6 + a 5-way head
    assert 0.0 <= trained["test/macro_f1"] <= 1.0 and trained["headline"] == trained["test/macro_f1"]


@pytest.mark.slow
def test_registered_judge_answers_as_the_stage(trained):
    judge = load_stage_classifier("judge", trained["model_uri"])
    assert isinstance(judge, JudgeClassifier)
    pred = judge(claim="Penicillin was discovered by Alexander Fleming in 1938.",
                 evidence=["Alexander Fleming discovered penicillin in 1928.", "弗莱明于1928年发现了青霉素。"])
    assert pred.relation in RELATIONS and len(pred.judgments) == 2 and 0.0 <= pred.confidence <= 1.0


@pytest.mark.llm
def test_verify_pipeline_runs_with_the_trained_judge(trained, penicillin_world, tmp_path):
    from hydra.utils import instantiate

    from factlab.checkers.job import run

    document, sources = penicillin_world  # the smallest real input: the point is the plugged-in judge
    cfg = compose_config("verify", [
        f"input={document}", f"sources={sources}", f"output_dir={tmp_path / 'verify'}",
        "stage.judge.backend=classifier", f"stage.judge.model={trained['model_uri']}", "claim_cache.enabled=false",
        "progress=false"])
    assert isinstance(instantiate(cfg.stage.judge).module, JudgeClassifier)
    summary = run(cfg)
    assert summary["summary"]["claims"] >= 1
    assert summary["costs"]["judge"]["items"] >= 1, "the trained judge never ran"
    assert (tmp_path / "verify" / "cards.json").stat().st_size > 0
