"""Tiny-step SFT of a 2-layer Qwen2 built locally (sft_* recipes), the tokenizer round-trip check, and the GGUF
export checked tensor by tensor against a template GGUF written here."""

from __future__ import annotations

import json

import numpy as np
import pytest
from train_support import safetensor_weights, tiny_bpe_tokenizer

from factlab.config import compose_config
from factlab.models.lora import GGUFExportError, gguf_tensor_names
from factlab.train.gguf import TokenizerRoundTripError, check_round_trip, export_gguf
from factlab.train.job import run_recipe
from factlab.train.sft.causal_lm import generate

FAST = ["recipe.max_steps=2", "recipe.batch_size=2", "recipe.gradient_accumulation=1", "recipe.eval_every=1",
        "recipe.max_rows.train=6", "recipe.max_rows.val=2", "recipe.max_rows.test=3", "recipe.max_new_tokens=12",
        "recipe.bf16=false", "recipe.learning_rate=0.01", "recipe.peft.target_modules=[q_proj,v_proj]",
        "tracking=off"]


@pytest.mark.parametrize("recipe", ["sft_query_rewrite", "sft_extract_claims"])
def test_sft_recipe_trains_evaluates_and_reloads(tiny_qwen, make_job, recipe):
    job = make_job(recipe)
    cfg = compose_config("train", [f"recipe={recipe}", f"recipe.base_model={tiny_qwen}", *FAST]).recipe
    result = run_recipe(cfg, job)
    model_dir = job.work_dir / "model"
    base, trained = safetensor_weights(tiny_qwen), safetensor_weights(model_dir)
    moved = [k for k in trained if "q_proj.weight" in k and not base[k].equal(trained[k].to(base[k].dtype))]
    assert moved, "LoRA training + merge did not change the q_proj weights"
    assert not any("lora" in k for k in trained), "the saved model must be merged (no adapter weights)"
    for key in ("test/score", "test/parse_rate", "test/items_per_s", "train/wall_s", "model/parameters",
                "base/test/score", "test/paired_gain_over_base"):
        assert key in result and key in job.tracker.metrics, key
    assert result["headline"] == result["test/score"] and result["test/n"] == 3
    assert "gguf" not in result and "lora_gguf" not in result, "a base that is not a GGUF has no template"
    adapter = safetensor_weights(job.work_dir / "adapter")
    assert adapter and all("lora_" in k for k in adapter), "the LoRA adapter alone is kept next to the merged model"
    rows = [json.loads(line) for line in (job.work_dir / "test_predictions.jsonl").read_text().splitlines()]
    from factlab.train.sft.causal_lm import Prompter
    from factlab.train.tasks import extract_claims_task, query_rewrite_task

    task = query_rewrite_task(3) if recipe == "sft_query_rewrite" else extract_claims_task()
    prompter = Prompter.for_stage(cfg.stage, cfg.base_lm.adapter, task)
    answers, _, _ = generate(model_dir, [prompter.messages(r["inputs"]) for r in rows], 12, bf16=False)
    assert answers == [r["answer"] for r in rows], "the reloaded model must answer as evaluated"


def test_round_trip_accepts_a_real_bpe_and_rejects_single_characters():
    check_round_trip(tiny_bpe_tokenizer())
    with pytest.raises(TokenizerRoundTripError, match="single-character tokens"):
        check_round_trip(tiny_bpe_tokenizer(vocab_size=260), source="char-level")


def _write_template(path, state: dict, n_blocks: int) -> None:
    import gguf

    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_block_count(n_blocks)
    writer.add_string("tokenizer.ggml.model", "gpt2")
    writer.add_array("tokenizer.ggml.tokens", ["a", "b"])
    writer.add_name("template")
    for hf_name, gguf_name in gguf_tensor_names(list(state), "qwen2", n_blocks).items():
        writer.add_tensor(gguf_name, np.zeros(tuple(state[hf_name].shape), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_export_gguf_copies_metadata_and_writes_the_trained_weights(tiny_qwen, tmp_path):
    import gguf

    state = safetensor_weights(tiny_qwen)
    template = tmp_path / "template.gguf"
    _write_template(template, state, n_blocks=2)
    out = export_gguf(tiny_qwen, template, tmp_path / "out" / "tiny.gguf", "tiny-trained")
    assert out.with_suffix(".gguf.sha256").read_text().strip()
    reader = gguf.GGUFReader(str(out))
    assert reader.fields["general.name"].contents() == "tiny-trained"
    assert reader.fields["tokenizer.ggml.tokens"].contents() == ["a", "b"]
    names = gguf_tensor_names(list(state), "qwen2", 2)
    by_gguf = {v: k for k, v in names.items()}
    assert {t.name for t in reader.tensors} == set(by_gguf)
    for tensor in reader.tensors:
        expected = state[by_gguf[tensor.name]].float().numpy()
        got = gguf.quants.dequantize(tensor.data, tensor.tensor_type).reshape(expected.shape)
        assert np.allclose(got, expected, atol=2e-2 * max(1e-6, float(np.abs(expected).max()))), tensor.name


def test_export_refuses_architectures_whose_tensors_are_permuted(tiny_qwen, tmp_path):
    import gguf

    template = tmp_path / "llama.gguf"
    writer = gguf.GGUFWriter(str(template), "llama")
    writer.add_block_count(1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(GGUFExportError, match="'llama' is not supported"):
        export_gguf(tiny_qwen, template, tmp_path / "x.gguf", "x")


def test_a_second_run_in_the_same_work_folder_waits_for_the_first(tmp_path):
    import threading
    import time

    from factlab.train.job import work_lock

    order = []

    def second():
        with work_lock(tmp_path / "work"):
            order.append("second")

    with work_lock(tmp_path / "work"):
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.5)
        order.append("first done")
    thread.join(5)
    assert order == ["first done", "second"]


def test_a_rerun_reads_back_the_test_answers_of_the_same_model(tmp_path):
    import json
    from types import SimpleNamespace

    from factlab.train.sft.causal_lm import _STAMP, _cached_answers, _model_stamp

    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights")
    rows = [SimpleNamespace(case_id="a"), SimpleNamespace(case_id="b")]
    (tmp_path / "test_predictions.jsonl").write_text("".join(json.dumps({"case_id": c, "answer": f"[{c!r}]"}) + "\n"
                                                             for c in "ab"))
    (tmp_path / "metrics.json").write_text(json.dumps({"test/items_per_s": 0.5, "test/generated_tokens": 9}))
    assert _cached_answers(tmp_path, model, rows, 256)[0] is None  # no stamp: never written by this code
    (tmp_path / _STAMP).write_text(_model_stamp(model, 256))
    assert _cached_answers(tmp_path, model, rows, 256) == (["['a']", "['b']"], 0.5, 9)
    assert _cached_answers(tmp_path, model, rows, 128)[0] is None  # another answer length
    assert _cached_answers(tmp_path, model, rows[::-1], 256)[0] is None  # other rows
    (model / "model.safetensors").write_bytes(b"retrained weights")
    assert _cached_answers(tmp_path, model, rows, 256)[0] is None  # another model
