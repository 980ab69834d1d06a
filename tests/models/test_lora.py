"""PEFT LoRA -> llama.cpp GGUF adapter (factlab.models.lora, issue 46).

Offline: the file's keys, tensor names and shapes on a two-tensor template GGUF written here, and every refusal.
Slow: a LoRA on the packaged Qwen2.5-Coder-0.5B, exported and loaded by llama.cpp next to the base GGUF, gives the
next-token logits PEFT's own forward pass gives (and not the base model's).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from factlab.models.lora import GGUFExportError, export_lora_gguf, lora_gguf_alpha


def _template(path, shapes: dict[str, tuple[int, int]]):
    import gguf

    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_block_count(1)
    for name, (out_dim, in_dim) in shapes.items():
        writer.add_tensor(name, np.zeros((out_dim, in_dim), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _adapter(folder, weights: dict[str, np.ndarray], **config):
    from safetensors.numpy import save_file

    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"r": 2, "lora_alpha": 4, **config}))
    save_file(weights, str(folder / "adapter_model.safetensors"))
    return folder


PREFIX = "base_model.model.model.layers.0.self_attn"


def test_the_adapter_file_is_what_llama_cpp_reads(tmp_path):
    import gguf

    template = _template(tmp_path / "base.gguf", {"blk.0.attn_q.weight": (8, 6), "blk.0.attn_v.weight": (4, 6)})
    rng = np.random.default_rng(0)
    weights = {f"{PREFIX}.q_proj.lora_A.weight": rng.normal(size=(2, 6)).astype(np.float32),
               f"{PREFIX}.q_proj.lora_B.weight": rng.normal(size=(8, 2)).astype(np.float32),
               f"{PREFIX}.v_proj.lora_A.weight": rng.normal(size=(2, 6)).astype(np.float32),
               f"{PREFIX}.v_proj.lora_B.weight": rng.normal(size=(4, 2)).astype(np.float32)}
    out = export_lora_gguf(_adapter(tmp_path / "adapter", weights), template, tmp_path / "lora.gguf", "t")
    reader = gguf.GGUFReader(str(out))
    fields = {key: reader.fields[key].contents() for key in ("general.type", "adapter.type", "adapter.lora.alpha",
                                                             "general.architecture")}
    assert fields == {"general.type": "adapter", "adapter.type": "lora", "adapter.lora.alpha": 4.0,
                      "general.architecture": "qwen2"}
    tensors = {t.name: t for t in reader.tensors}
    assert sorted(tensors) == ["blk.0.attn_q.weight.lora_a", "blk.0.attn_q.weight.lora_b",
                               "blk.0.attn_v.weight.lora_a", "blk.0.attn_v.weight.lora_b"]
    # GGUF lists dimensions innermost first: A (r, in) -> [in, r], B (out, r) -> [r, out], as llama.cpp checks them
    assert tensors["blk.0.attn_q.weight.lora_a"].shape.tolist() == [6, 2]
    assert tensors["blk.0.attn_q.weight.lora_b"].shape.tolist() == [2, 8]
    stored = np.asarray(tensors["blk.0.attn_q.weight.lora_b"].data, dtype=np.float32).reshape(8, 2)
    np.testing.assert_allclose(stored, weights[f"{PREFIX}.q_proj.lora_B.weight"], rtol=1e-3, atol=1e-3)
    assert out.with_suffix(".gguf.sha256").read_text().strip()


@pytest.mark.parametrize("weights, config, message", [
    ({f"{PREFIX}.q_proj.lora_A.weight": np.zeros((2, 5), np.float32),
      f"{PREFIX}.q_proj.lora_B.weight": np.zeros((8, 2), np.float32)}, {}, r"do not fit the base's \(8, 6\)"),
    ({f"{PREFIX}.q_proj.lora_A.weight": np.zeros((2, 6), np.float32)}, {}, "not both LoRA matrices"),
    ({f"{PREFIX}.q_proj.bias": np.zeros(8, np.float32)}, {}, "is not a LoRA A or B matrix"),
    ({f"{PREFIX}.k_proj.lora_A.weight": np.zeros((2, 6), np.float32),
      f"{PREFIX}.k_proj.lora_B.weight": np.zeros((8, 2), np.float32)}, {}, "no tensor 'blk.0.attn_k.weight'"),
    ({f"{PREFIX}.q_proj.lora_A.weight": np.zeros((2, 6), np.float32),
      f"{PREFIX}.q_proj.lora_B.weight": np.zeros((8, 2), np.float32)}, {"use_dora": True}, "DoRA"),
    ({f"{PREFIX}.q_proj.lora_A.weight": np.zeros((2, 6), np.float32),
      f"{PREFIX}.q_proj.lora_B.weight": np.zeros((8, 2), np.float32)}, {"rank_pattern": {"q_proj": 4}},
     "rank_pattern"),
])
def test_what_llama_cpp_cannot_read_is_refused_by_name(tmp_path, weights, config, message):
    template = _template(tmp_path / "base.gguf", {"blk.0.attn_q.weight": (8, 6)})
    with pytest.raises(GGUFExportError, match=message):
        export_lora_gguf(_adapter(tmp_path / "adapter", weights, **config), template, tmp_path / "lora.gguf", "t")
    assert not (tmp_path / "lora.gguf").exists()


def test_rslora_alpha_is_rescaled_for_llama_cpp():
    assert lora_gguf_alpha({"r": 4, "lora_alpha": 8, "use_rslora": True}) == 16.0


@pytest.fixture(scope="module")
def random_adapter(tmp_path_factory):
    """A seeded random LoRA (r=8 on q/k/v/o) on the packaged 0.5B: (PEFT model, its adapter folder, base GGUF, the
    base's Hugging Face folder)."""
    import torch
    from omegaconf import OmegaConf
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from factlab.config import CONF_DIR
    from factlab.models.assemble import assemble
    from factlab.train.gguf import hf_from_gguf

    lm = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "lm" / "local_qwen05.yaml"))
    base = assemble(lm["packages"], lm["filename"], lm["sha256"])
    torch.manual_seed(0)
    hf = hf_from_gguf(lm)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32),
                           LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                                      init_lora_weights=False, lora_dropout=0.0))
    with torch.no_grad():  # random A and B, scaled so the adapter moves the logits clearly but not chaotically
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.mul_(0.3)
    folder = tmp_path_factory.mktemp("lora") / "random-test-adapter"
    model.save_pretrained(folder)
    return model, folder, base, hf


@pytest.mark.slow
def test_llama_cpp_with_the_exported_adapter_computes_what_peft_computes(tmp_path, random_adapter):
    import torch
    from llama_cpp import Llama
    from transformers import AutoTokenizer

    model, folder, base, hf = random_adapter
    out = export_lora_gguf(folder, base, tmp_path / "adapter.gguf", "test")
    assert out.stat().st_size < 2.5 * 2**20  # r=8 on q/k/v/o of 24 layers, float16
    tokenizer = AutoTokenizer.from_pretrained(hf)
    ids = tokenizer("Penicillin was discovered in 1928 by Alexander Fleming, who noticed that")["input_ids"]
    with torch.no_grad():
        peft_logits = model(torch.tensor([ids])).logits[0, -1].numpy()

    def llama_logits(lora_path):
        llm = Llama(model_path=str(base), lora_path=lora_path, n_ctx=128, logits_all=True, verbose=False)
        llm.eval(ids)
        logits = np.array(llm.scores[len(ids) - 1])
        llm.close()
        return logits

    with_adapter, without = llama_logits(str(out)), llama_logits(None)
    assert np.corrcoef(with_adapter, peft_logits)[0, 1] > 0.99
    assert with_adapter.argmax() == peft_logits.argmax()
    assert np.corrcoef(without, peft_logits)[0, 1] < 0.9  # the adapter is what made the difference


@pytest.mark.llm
def test_the_lm_config_serves_a_lora_under_its_own_alias(tmp_path, random_adapter):
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from factlab.config import CONF_DIR
    from factlab.models.lora import lora_gguf

    _, folder, base, _ = random_adapter
    cfg = OmegaConf.load(CONF_DIR / "lm" / "local_qwen05.yaml")
    cfg.cache, cfg.max_tokens = False, 24
    plain = instantiate(cfg)
    adapted = instantiate(OmegaConf.merge(cfg, {"lora": str(folder)}))
    exported = lora_gguf(folder, base)
    assert lora_gguf(folder, base) == exported  # written once, then found by the adapter's sha256
    assert adapted.info["model"] == f"{cfg.alias}+{exported.stem}" and adapted.info["lora"] == str(exported)
    assert adapted.info["port"] != plain.info["port"]  # another adapter is another server, never a reused one
    assert plain.with_lora(str(folder)).info["model"] == adapted.info["model"]  # a stage's `lora` (StageMeter)
    messages = [{"role": "user", "content": "Name three colours."}]
    assert adapted.lm(messages=messages)[0] != plain.lm(messages=messages)[0]


def test_an_unknown_lora_is_named(tmp_path):
    from factlab.models.lora import lora_gguf

    with pytest.raises(FileNotFoundError, match="no shipped adapter .*nope"):
        lora_gguf("factlab:nope", tmp_path / "base.gguf")
    with pytest.raises(FileNotFoundError, match="PEFT adapter folder"):
        lora_gguf(tmp_path, tmp_path / "base.gguf")


SHIPPED_ADAPTERS = ["extract-claims-q05-v1"]


def test_every_shipped_adapter_has_a_card_a_checksum_and_fits_the_budget():
    from factlab.models.lora import SHIPPED_DIR, lora_source

    total = 0
    for name in SHIPPED_ADAPTERS:
        folder = SHIPPED_DIR / name
        card = (folder / "MODEL_CARD.md").read_text(encoding="utf-8")
        assert "Command" in card and "python train.py" in card
        assert lora_source(f"factlab:{name}") == folder / "adapter_model.safetensors"  # sha256 checked
        total += sum(p.stat().st_size for p in folder.iterdir())
    assert total < 10_000_000  # the stage adapters together stay within their ~10 MB of the shipped budget


def test_a_changed_shipped_adapter_is_refused(tmp_path, monkeypatch):
    import shutil

    import factlab.models.lora as lora

    copy = tmp_path / SHIPPED_ADAPTERS[0]
    shutil.copytree(lora.SHIPPED_DIR / SHIPPED_ADAPTERS[0], copy)
    monkeypatch.setattr(lora, "SHIPPED_DIR", tmp_path)
    assert lora.lora_source(f"factlab:{copy.name}").exists()
    with open(copy / "adapter_model.safetensors", "r+b") as handle:
        handle.seek(-4, 2)
        handle.write(b"\x00\x01\x02\x03")
    with pytest.raises(GGUFExportError, match="does not match the sha256"):
        lora.lora_source(f"factlab:{copy.name}")
    (copy / "adapter.json").unlink()
    with pytest.raises(GGUFExportError, match="no adapter_sha256"):
        lora.lora_source(f"factlab:{copy.name}")
