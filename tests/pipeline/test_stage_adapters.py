"""A stage's own LoRA adapter on the student (conf/stage/<name>.yaml `lora`, issue 46): the stage carries it, its
identity holds the adapter's content, and the checker's meter runs that stage on the student served with it (one
server per distinct adapter); a remote LM refuses by name. The served path itself: tests/models/test_lora.py."""

from __future__ import annotations

import dspy
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from factlab.config import CONF_DIR
from factlab.models.lm import LMHandle
from factlab.pipeline.meter import StageMeter


def _stage(name: str, **overrides):
    cfg = OmegaConf.load(CONF_DIR / "stage" / f"{name}.yaml")
    cfg.compiled, cfg.store = None, None
    return instantiate(OmegaConf.merge(cfg, overrides))


def _adapter_folder(path, weight: float):
    import numpy as np
    from safetensors.numpy import save_file

    path.mkdir(parents=True)
    save_file({"w": np.full((2, 2), weight, dtype=np.float32)}, str(path / "adapter_model.safetensors"))
    return path


def test_a_program_stage_carries_its_adapter_and_its_identity_holds_the_content(tmp_path):
    folder = _adapter_folder(tmp_path / "a", 1.0)
    assert _stage("extract_claims").lora == "factlab:extract-claims-q05-v1"  # the shipped default
    plain, adapted = _stage("extract_claims", lora=None), _stage("extract_claims", lora=str(folder))
    assert plain.lora is None and adapted.lora == str(folder)
    assert "lora_sha256" not in plain.identity and adapted.identity["lora_sha256"]
    _adapter_folder(tmp_path / "b", 2.0)
    other = _stage("extract_claims", lora=str(tmp_path / "b"))
    assert other.identity["lora_sha256"] != adapted.identity["lora_sha256"]  # retrained in place = another stage


def test_a_classifier_stage_ignores_the_key(tmp_path):
    stage = _stage("extract_claims", backend="rules", lora=str(_adapter_folder(tmp_path / "a", 1.0)))
    assert stage.lora is None and "lora_sha256" not in stage.identity


def test_an_adapter_that_is_not_there_is_named():
    with pytest.raises(Exception, match="PEFT adapter folder"):
        _stage("extract_claims", lora="/nowhere/adapter")


def _handle(name: str, respawn=None) -> LMHandle:
    return LMHandle(name, dspy.LM("hosted_vllm/fake", api_base="http://127.0.0.1:9/v1", api_key="x"),
                    dspy.JSONAdapter(), {"backend": "local", "model": name}, None, respawn)


def test_the_meter_serves_each_distinct_adapter_once():
    spawned = []

    def respawn(lora):
        spawned.append(lora)
        return _handle(f"student+{lora}")

    meter = StageMeter(_handle("student", respawn), {"extract_claims": "x", "review_claims": "x", "query_rewrite": "y",
                                                     "judge": None})
    assert spawned == ["x", "y"]
    assert meter.handles["extract_claims"].info["model"] == "student+x"
    assert meter.handles["review_claims"].info["model"] == "student+x"
    assert meter.handles["query_rewrite"].info["model"] == "student+y"
    assert meter.handles["judge"].info["model"] == "student"
    assert meter.handles["extract_claims"].lm is not meter.handles["review_claims"].lm  # own call history each


def test_a_remote_lm_refuses_a_stage_adapter():
    with pytest.raises(ValueError, match="needs the local student"):
        StageMeter(_handle("remote"), {"extract_claims": "factlab:anything"})


def test_a_shipped_adapter_serves_only_its_own_base_model(tmp_path, monkeypatch, caplog):
    import json

    import factlab.models.lora as lora

    folder = _adapter_folder(tmp_path / "shipped-x", 1.0)
    (folder / "adapter.json").write_text(json.dumps({"base_gguf": "qwen-0.5b.gguf", "adapter_sha256": "0"}))
    monkeypatch.setattr(lora, "SHIPPED_DIR", tmp_path)
    spawned = []

    def student(file: str) -> LMHandle:
        handle = _handle("student", lambda lora: spawned.append(lora) or _handle("student+x"))
        handle.info["file"] = file
        return handle

    meter = StageMeter(student("/cache/qwen-0.5b.gguf"), {"extract_claims": "factlab:shipped-x"})
    assert spawned == ["factlab:shipped-x"] and meter.handles["extract_claims"].info["model"] == "student+x"
    meter = StageMeter(student("/cache/qwen-1.5b.gguf"), {"extract_claims": "factlab:shipped-x"})
    assert spawned == ["factlab:shipped-x"] and meter.handles["extract_claims"].info["model"] == "student"
    assert "was trained on qwen-0.5b.gguf" in caplog.text
    meter = StageMeter(_handle("remote"), {"extract_claims": "factlab:shipped-x"})  # a remote student: as it is
    assert meter.handles["extract_claims"].info["model"] == "remote"
