"""The committed blind labels (datasets/layers/blind) stay whole and scoreable without the data: every labelled id is
in the key, every key row names a known path, and the scorer's numbers come from the labels."""

from __future__ import annotations

import json
import sys
from argparse import Namespace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import blind_layer_labels as blind  # noqa: E402

PATHS = {"logic_rules", "strength_design", "strength_model_premise", "scope", "consistency_default",
         "consistency_restated_value", "decoy", "planted"}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("folder", [blind.BLIND, blind.BLIND / "pilot"])
def test_the_labels_match_their_key(folder):
    key = {row["id"]: row for row in _rows(folder / "key.jsonl")}
    assert key and {row["path"] for row in key.values()} <= PATHS
    for name in ("labels_1.jsonl", "labels_2.jsonl"):
        labels = _rows(folder / name)
        assert sorted(row["id"] for row in labels) == sorted(key)  # each id once
        assert {row["label"] for row in labels} <= {"yes", "no", "unsure"} and all(row["reason"] for row in labels)
    assert all("abstract" not in row and "SENTENCE" not in row for row in _rows(folder / "key.jsonl"))  # no text


def test_the_scorer_counts_the_labels(tmp_path, monkeypatch):
    monkeypatch.setattr(blind, "OUT", tmp_path)
    args = Namespace(labels=[str(p) for p in blind.LABELS], key=str(blind.KEY), recheck=False)
    blind.score(args)
    results = json.loads((tmp_path / "scored" / "results.json").read_text())
    planted = results["labellers"]["labels_1"]["planted"]
    yes = sum(row["label"] == "yes" for row in _rows(blind.LABELS[0])
              if {r["id"]: r for r in _rows(blind.KEY)}[row["id"]]["path"] == "planted")
    assert planted["yes"] == yes and planted["yes"] + planted["no"] + planted["unsure"] == 15
    assert -1.0 <= results["kappa"] <= 1.0


def test_a_bad_label_is_named(tmp_path):
    bad = tmp_path / "labels.jsonl"
    bad.write_text(json.dumps({"id": "b000", "label": "maybe", "reason": "x"}) + "\n")
    key = {row["id"]: row for row in _rows(blind.KEY)}
    with pytest.raises(SystemExit, match="line 1: field label"):
        blind.read_labels(bad, key)
    bad.write_text(json.dumps({"id": "zzz", "label": "yes", "reason": "x"}) + "\n")
    with pytest.raises(SystemExit, match="not in the key"):
        blind.read_labels(bad, key)


def test_kappa():
    assert blind.kappa(["yes", "no"], ["yes", "no"]) == 1.0
    assert blind.kappa(["yes", "no", "no", "yes"], ["yes", "no", "yes", "yes"]) == pytest.approx(0.5)
