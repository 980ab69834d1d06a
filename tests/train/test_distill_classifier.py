"""Tiny-step training of the distill_* recipes on a 2-layer BERT built locally: the weights move, the metrics and the
confusion matrix are produced, the saved model reloads through the plug-back loader and predicts the same, an
interrupted fit resumes from its checkpoint, and the classifier answers as its stage."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest
from train_support import safetensor_weights

from factlab.config import compose_config
from factlab.programs import judge as judge_program
from factlab.runtime import ModelSourceError
from factlab.schema import RELATIONS
from factlab.stages.build import build_program
from factlab.stages.classifiers import load_stage_classifier
from factlab.tracking.refs import ModelRefError
from factlab.train.job import run_recipe

FAST = ["recipe.max_steps=3", "recipe.batch_size=8", "recipe.eval_batch_size=16", "recipe.eval_every=2",
        "recipe.max_rows.train=48", "recipe.max_rows.val=16", "recipe.max_rows.test=24", "recipe.max_length=48",
        "recipe.bf16=false", "tracking=off"]


def recipe_cfg(name: str, base, *overrides: str):
    return compose_config("train", [f"recipe={name}", f"recipe.base_model={base}", *FAST, *overrides]).recipe


def changed(before: dict, after: dict, prefix: str = "bert.encoder") -> bool:
    """Whether any encoder weight differs between the base and the trained model (the head is new anyway)."""
    keys = [k for k in after if k.startswith(prefix)]
    assert keys, f"no {prefix} weights in the saved model"
    return any(not before[k.replace("bert.", "", 1)].equal(after[k]) for k in keys)


@pytest.mark.parametrize("peft", [False, True], ids=["full", "lora"])
def test_distill_judge_trains_evaluates_and_reloads(tiny_bert, make_job, peft):
    job = make_job(f"judge-{peft}")
    result = run_recipe(recipe_cfg("distill_judge", tiny_bert, f"recipe.peft.enabled={str(peft).lower()}",
                                    "recipe.peft.target_modules=[query,value]"), job)
    model_dir = job.work_dir / "model"
    assert changed(safetensor_weights(tiny_bert), safetensor_weights(model_dir)), "training did not move the weights"
    for key in ("test/accuracy", "test/macro_f1", "test/balanced_accuracy", "test/agreement_with_teacher",
                "test/items_per_s", "model/parameters", "model/size_mb", "train/wall_s",
                f"test/precision/{RELATIONS[0]}", f"test/recall/{RELATIONS[0]}"):
        assert key in result and key in job.tracker.metrics, key
    assert {"train/loss", "val/macro_f1"} <= set(job.tracker.metrics), "Trainer logs must reach the tracker"
    assert 0.0 <= result["test/macro_f1"] <= 1.0 and result["headline"] == result["test/macro_f1"]
    assert result["test/agreement_with_teacher"] == result["test/accuracy"], "teacher=gold: teacher is the gold"
    assert (job.work_dir / "confusion_matrix.png").stat().st_size > 1000
    assert job.tracker.figures == ["test/confusion_matrix.png"]
    assert result["model_uri"] == str(model_dir.resolve())
    # the plug-back loader predicts exactly what the evaluation recorded
    rows = [json.loads(line) for line in (job.work_dir / "test_predictions.jsonl").read_text().splitlines()]
    judge = load_stage_classifier("judge", result["model_uri"])
    again = judge.classifier.predict([r["text"] for r in rows], [r["pair"] for r in rows])
    assert [label for label, _ in again] == [r["predicted"] for r in rows]


def test_interrupted_fit_resumes_from_its_last_checkpoint(tiny_bert, make_job):
    job = make_job("resume")
    run_recipe(recipe_cfg("distill_judge", tiny_bert, "recipe.max_steps=2", "recipe.eval_every=1"), job)
    (job.work_dir / "model" / "COMPLETE").unlink()  # as if the run died after its checkpoint at step 2
    result = run_recipe(recipe_cfg("distill_judge", tiny_bert, "recipe.max_steps=4", "recipe.eval_every=1"), job)
    meta = json.loads((job.work_dir / "model" / "factlab_classifier.json").read_text())
    assert meta["resumed_from"].endswith("checkpoint-2") and meta["steps"] == 4
    assert result["train/steps"] == 4


def test_a_fit_interrupted_after_its_last_step_is_not_trained_further(tiny_bert, make_job):
    """The Trainer's resume loop trains one step before it checks max_steps: rerunning a run that died after its
    final checkpoint (during the test evaluation, say) must load that checkpoint, not train step max_steps + 1."""
    job = make_job("resume-done")
    first = run_recipe(recipe_cfg("distill_judge", tiny_bert, "recipe.max_steps=2", "recipe.eval_every=1"), job)
    (job.work_dir / "model" / "COMPLETE").unlink()
    again = run_recipe(recipe_cfg("distill_judge", tiny_bert, "recipe.max_steps=2", "recipe.eval_every=1"), job)
    meta = json.loads((job.work_dir / "model" / "factlab_classifier.json").read_text())
    assert meta["resumed_from"].endswith("checkpoint-2") and meta["steps"] == 2 and again["train/steps"] == 2
    assert again["test/macro_f1"] == first["test/macro_f1"]


@pytest.mark.parametrize(("recipe", "stage", "field"), [("distill_checkworthy", "checkworthy", "checkworthy"),
                                                         ("distill_vertical", "vertical", "vertical")])
def test_other_classifier_recipes_answer_as_their_stage(tiny_bert, make_job, recipe, stage, field):
    job = make_job(recipe)
    result = run_recipe(recipe_cfg(recipe, tiny_bert), job)
    assert "test/macro_f1" in result
    stage_cfg = compose_config("run_stage", [f"stage={stage}", "stage.backend=classifier",
                                             f"stage.model={result['model_uri']}"]).stage
    program = build_program(stage_cfg)
    assert isinstance(program, dspy.Module)
    pred = program(**({"text": "Penicillin was discovered in 1928."} if stage == "checkworthy"
                      else {"claim": "The bank raised interest rates by 0.25 percent."}))
    if stage == "checkworthy":
        assert isinstance(pred.checkworthy, bool) and "p(checkworthy)" in pred.reason
    else:
        assert pred.vertical in stage_cfg.program.verticals and 0.0 <= pred.confidence <= 1.0
    with pytest.raises(ModelSourceError, match=f"trained for stage '{stage}', not 'judge'"):
        load_stage_classifier("judge", result["model_uri"])


def test_classifier_judge_answers_with_the_program_fields(tiny_bert, make_job):
    job = make_job("judge-plug")
    result = run_recipe(recipe_cfg("distill_judge", tiny_bert), job)
    stage_cfg = compose_config("run_stage", ["stage=judge", "stage.backend=classifier",
                                             f"stage.model={result['model_uri']}"]).stage
    judge = build_program(stage_cfg)
    evidence = ["Fleming discovered penicillin in 1928.", "Bananas are yellow.", "It was mass produced from 1943."]
    pred = judge(claim="Penicillin was discovered in 1938.", evidence=evidence)
    assert len(pred.judgments) == 3 and pred.relation in RELATIONS and 0.0 <= pred.confidence <= 1.0
    assert all(j.relation in RELATIONS for j in pred.judgments)
    gold = dspy.Example(claim="c", evidence=evidence, relations=["contradict", "irrelevant", "insufficient"],
                        relation="contradict")
    assert 0.0 <= judge_program.metric(gold, pred).score <= 1.0
    assert judge(claim="x", evidence=[]).relation == "insufficient"


def test_missing_model_names_the_fix(tmp_path):
    with pytest.raises(ModelRefError, match="folder not found"):
        load_stage_classifier("judge", str(tmp_path / "nope"))
    with pytest.raises(ModelSourceError, match="no factlab_classifier.json"):
        load_stage_classifier("judge", str(tmp_path))


def test_time_budget_stops_training_and_keeps_a_model(tiny_bert, make_job):
    job = make_job("budget")
    result = run_recipe(recipe_cfg("distill_judge", tiny_bert, "recipe.max_steps=50", "recipe.max_train_seconds=0"),
                        job)
    assert result["train/steps"] == 1 and (job.work_dir / "model" / "COMPLETE").exists()


def test_a_judge_reads_long_evidence_in_windows_and_is_calibrated(tiny_bert, make_job):
    """window_stride > 0: a pair longer than max_length is judged window by window and the most decisive window
    answers; the val split fits a temperature and a p(support) threshold; freezing keeps the embedding table;
    keep_layers cuts the encoder to its lower layers."""
    job = make_job("judge-windows")
    result = run_recipe(recipe_cfg("distill_judge", tiny_bert, "recipe.window_stride=8",
                                   "recipe.freeze_embeddings=true", "recipe.keep_layers=1"), job)
    model_dir = Path(result["model_uri"])
    meta = json.loads((model_dir / "factlab_classifier.json").read_text())
    assert meta["window_stride"] == 8 and meta["freeze_embeddings"] is True and meta["layers"] == 1
    assert json.loads((model_dir / "config.json").read_text())["num_hidden_layers"] == 1
    assert 0.5 <= meta["temperature"] <= 5.0 and 0.0 <= meta["support_threshold"] <= 1.0
    before, after = safetensor_weights(tiny_bert), safetensor_weights(model_dir)
    assert before["embeddings.word_embeddings.weight"].equal(after["bert.embeddings.word_embeddings.weight"])
    judge = load_stage_classifier("judge", result["model_uri"]).classifier
    long_evidence = " ".join(["Unrelated words about the weather in spring."] * 30 + ["Penicillin was found in 1928."])
    windows = judge.window_logits(["Penicillin was found in 1928."], [long_evidence])[0]
    assert len(windows) > 1, "a pair longer than max_length must be read in several windows"
    probs = judge.predict_proba(["Penicillin was found in 1928."], [long_evidence])[0]
    assert abs(sum(probs) - 1.0) < 1e-5 and 0.0 <= judge.p_support(["c"], ["e"])[0] <= 1.0


def test_mean_pooling_head_ignores_padding_and_reloads(tiny_bert, make_job):
    """recipe.pooling=mean: the head reads the masked mean of the token states, so a pair's answer does not change
    with the padding of its batch, and the saved folder reloads with the same pooling."""
    job = make_job("judge-mean")
    result = run_recipe(recipe_cfg("distill_judge", tiny_bert, "recipe.pooling=mean"), job)
    model_dir = Path(result["model_uri"])
    assert json.loads((model_dir / "factlab_classifier.json").read_text())["pooling"] == "mean"
    judge = load_stage_classifier("judge", result["model_uri"]).classifier
    assert judge.pooling == "mean" and getattr(judge.model.base_model.pooler, "mean_pooling", False)
    claim, evidence = "Penicillin was found in 1928.", "Fleming found penicillin in 1928."
    alone = judge.window_logits([claim], [evidence])[0][0]
    padded = judge.window_logits([claim, claim], [evidence, " ".join(["Long evidence text."] * 6)])[0][0]
    assert max(abs(a - b) for a, b in zip(alone, padded, strict=True)) < 1e-4
    with pytest.raises(Exception, match="recipe.pooling"):
        run_recipe(recipe_cfg("distill_judge", tiny_bert, "recipe.pooling=max"), make_job("judge-bad-pooling"))
