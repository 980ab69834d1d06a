"""The models that ship in the repo load by name on a fresh clone (sha256-checked, no training, no MLflow store) and
answer as their stages. Slow: they load the real e5 base."""

from __future__ import annotations

import json
import shutil

import pytest

from factlab.judge import DEFAULT_JUDGE
from factlab.runtime import ModelSourceError
from factlab.stages.classifiers import load_stage_classifier
from factlab.tracking.refs import ModelRefError, resolve_model, shipped_names

SHIPPED = ["checkworthy-e5s-v1", "vertical-e5s-v1", "paragraph-type-e5s-v1", "judge-e5s-v1", "causal-strength-e5s-v1",
           "scope-e5s-v1"]


def test_every_shipped_model_has_a_card_its_weights_and_a_checksum():
    assert set(SHIPPED) <= set(shipped_names())
    total = 0
    for name in SHIPPED:
        folder = resolve_model(f"factlab:{name}")
        card = (folder / "MODEL_CARD.md").read_text(encoding="utf-8")
        assert "Command" in card and "python train.py" in card
        meta = json.loads(next(p for p in folder.glob("*.json")).read_text())
        assert meta.get("adapter_sha256") or meta.get("head_sha256")
        total += sum(p.stat().st_size for p in folder.iterdir())
    assert total < 12_000_000  # the judge and the three heads together stay within the ~12 MB budget


def test_unknown_shipped_name_lists_the_shipped_ones():
    with pytest.raises(ModelRefError, match="factlab:judge-e5s-v1"):
        resolve_model("factlab:no-such-model")


@pytest.mark.slow
def test_shipped_judge_reads_pairs_in_both_languages():
    judge = load_stage_classifier("judge", DEFAULT_JUDGE).classifier
    claims = ["The Eiffel Tower was completed in 1889.", "埃菲尔铁塔于1889年建成。"]
    evidence = ["The Eiffel Tower was completed in 1889 for the World's Fair.", "埃菲尔铁塔于1889年为世界博览会建成。"]
    rows = judge.score(claims, evidence)
    assert all(set(r) == {"relation", "probs", "p_support", "supported"} for r in rows)
    assert all(abs(sum(r["probs"].values()) - 1) < 1e-3 for r in rows)


@pytest.mark.slow
@pytest.mark.parametrize("stage,name,text", [("checkworthy", "checkworthy-e5s-v1", "埃菲尔铁塔于1889年建成。"),
                                             ("vertical", "vertical-e5s-v1", "Aspirin reduced stroke risk by 20%."),
                                             ("paragraph_type", "paragraph-type-e5s-v1", "We measured 40 patients.")])
def test_shipped_heads_answer_as_their_stage(stage, name, text):
    module = load_stage_classifier(stage, f"factlab:{name}")
    pred = module(**{"checkworthy": {"text": text}, "vertical": {"claim": text},
                     "paragraph_type": {"paragraph": text}}[stage])
    assert pred is not None


@pytest.mark.slow
def test_a_changed_weight_file_is_refused(tmp_path):
    copy = tmp_path / "judge"
    shutil.copytree(resolve_model(DEFAULT_JUDGE), copy)
    data = bytearray((copy / "adapter.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (copy / "adapter.safetensors").write_bytes(bytes(data))
    with pytest.raises(ModelSourceError, match="sha256"):
        load_stage_classifier("judge", copy)


@pytest.mark.slow
def test_calibration_is_a_setting_that_overrides_the_cards():
    fitted = load_stage_classifier("judge", DEFAULT_JUDGE).classifier
    meta = json.loads((resolve_model(DEFAULT_JUDGE) / "judge.json").read_text())
    assert fitted.support_threshold == meta["calibration"]["support_threshold"]
    strict = load_stage_classifier("judge", DEFAULT_JUDGE, support_threshold=0.999, temperature=2.0).classifier
    assert strict.support_threshold == 0.999 and strict.temperature == 2.0
    claim, evidence = "The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1889."
    assert strict.predict([claim], [evidence])[0][0] != "support"  # nothing reaches p(support) 0.999 at T=2


@pytest.mark.slow
@pytest.mark.parametrize(("name", "texts", "expected"), [
    ("factlab:causal-strength-e5s-v1", ["Daily aspirin prevents heart attacks in older adults.",
                                        "Coffee intake was associated with lower mortality."],
     ["direct_causal", "correlational"]),
    ("factlab:scope-e5s-v1", ["Treated mice gained less weight than controls.",
                              "The extract helps humans lose weight."], ["lab", "general"]),
])
def test_shipped_logic_heads_read_their_classes(name, texts, expected):
    from factlab.judge.heads import HeadClassifier

    head = HeadClassifier(resolve_model(name))
    assert [label for label, _ in head.predict(texts)] == expected
