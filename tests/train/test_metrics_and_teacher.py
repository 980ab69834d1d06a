"""Classification metrics (table-driven), class weights, and the teachers: gold, and the LM teacher's cache."""

from __future__ import annotations

import json

import pytest
import train_support
from omegaconf import OmegaConf

from factlab.config import compose_config
from factlab.metrics import classification_metrics, confusion, per_class
from factlab.train.distill.classifier import class_weights
from factlab.train.tasks import checkworthy_task, judge_task
from factlab.train.teacher import GoldTeacher, LMTeacher, agreement, read_cache


@pytest.mark.parametrize(("gold", "pred", "expected"), [
    (["a", "b", "c"], ["a", "b", "c"], {"accuracy": 1.0, "macro_f1": 1.0, "balanced_accuracy": 1.0}),
    (["a", "a", "a", "b"], ["a", "a", "a", "a"], {"accuracy": 0.75, "balanced_accuracy": 0.5}),
    (["a", "b"], ["b", "a"], {"accuracy": 0.0, "macro_f1": 0.0, "balanced_accuracy": 0.0}),
    (["a", "a", "b", "b"], ["a", "b", "b", "b"], {"accuracy": 0.75, "balanced_accuracy": 0.75}),
])
def test_classification_metrics(gold, pred, expected):
    got = classification_metrics(gold, pred, ["a", "b", "c"])
    for key, value in expected.items():
        assert got[key] == pytest.approx(value), key


def test_per_class_and_confusion_agree():
    gold, pred = ["a", "a", "b", "c"], ["a", "b", "b", "a"]
    matrix = confusion(gold, pred, ["a", "b", "c"])
    assert matrix == [[1, 1, 0], [0, 1, 0], [1, 0, 0]]
    classes = per_class(gold, pred, ["a", "b", "c"])
    assert classes["a"]["precision"] == 0.5 and classes["b"]["recall"] == 1.0 and classes["c"]["f1"] == 0.0
    with pytest.raises(ValueError, match="'z' is not one of a, b, c"):
        confusion(["z"], ["a"], ["a", "b", "c"])


def test_class_weights_up_weight_the_rare_class():
    weights = class_weights(["x"] * 9 + ["y"], ["x", "y"])
    assert weights[1] == pytest.approx(9 * weights[0])


def test_gold_teacher_returns_the_gold(bundled_splits):
    rows = checkworthy_task().rows(bundled_splits["test"])
    labels = GoldTeacher().label(None, rows, checkworthy_task().target)
    assert [label.target for label in labels] == [row.gold for row in rows]


def _lm_teacher(tmp_path, answers, max_items=None):
    lm = OmegaConf.create({"_target_": "train_support.fake_teacher_lm", "name": "dummy", "answers": answers})
    return LMTeacher(lm=lm, compiled=None, cache_dir=str(tmp_path / "teacher"), max_items=max_items)


def test_lm_teacher_labels_caches_with_provenance_and_resumes(tmp_path, bundled_splits):
    stage = compose_config("train", ["recipe=distill_judge"]).recipe.stage
    task = judge_task(["evidence"])
    rows = task.rows(bundled_splits["test"])[:4]
    answers = [{"relation": "contradict", "confidence": "0.8", "reason": "dates differ"}]
    teacher = _lm_teacher(tmp_path, answers)
    train_support.CALLS["n"] = 0
    labels = teacher.label(stage, rows, task.target)
    assert [label.target for label in labels] == ["contradict"] * 4
    assert train_support.CALLS["n"] == 4
    path = teacher.cache_path(stage)
    records = read_cache(path)
    assert len(records) == 4
    record = next(iter(records.values()))
    assert record["teacher"]["lm"]["backend"] == "dummy" and record["output"]["relation"] == "contradict"
    assert record["gold"] in task.labels and record["inputs"]["claim"]
    # interrupted: keep two records and a torn line; a rerun labels only the two missing rows
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:20])
    train_support.CALLS["n"] = 0
    again = teacher.label(stage, rows, task.target)
    assert [label.target for label in again] == ["contradict"] * 4 and train_support.CALLS["n"] == 2
    train_support.CALLS["n"] = 0
    teacher.label(stage, rows, task.target)
    assert train_support.CALLS["n"] == 0, "a complete cache must cost no LM call"


def test_lm_teacher_failures_and_cap_give_no_target(tmp_path, bundled_splits):
    stage = compose_config("train", ["recipe=distill_judge"]).recipe.stage
    task = judge_task(["evidence"])
    rows = task.rows(bundled_splits["test"])[:3]
    labels = _lm_teacher(tmp_path, [{"nonsense": "x"}], max_items=2).label(stage, rows, task.target)
    assert [label.target for label in labels] == [None, None, None]
    assert labels[2].provenance["error"] == "not labelled"
    cached = read_cache(_lm_teacher(tmp_path, [{"nonsense": "x"}]).cache_path(stage))
    assert all(record["error"] for record in cached.values())
    assert json.loads(json.dumps(labels[0].provenance))["teacher"] == "lm"


def test_agreement_counts_only_rows_with_both():
    assert agreement(["a", None, "b"], ["a", "b", None]) == (1.0, 1)
