"""Helpers of the RL tests: a tiny Qwen2 with a byte-level BPE trained here and Qwen2.5's tool-calling chat template
(TRL's copy, so TRL and VERL recognise it), the bundled cases as RL data, and a retriever on a hashing encoder."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOL_WORDS = ('<tool_call>\n{"name": "search", "arguments": {"query": "penicillin discovered 1928"}}\n</tool_call> '
              '<tool_response> </tool_response> <answer>{"relation": "support", "label": "correct", "chunk_ids": '
              '["ena-penicillin-nlm#p1-c1"]}</answer> system user assistant tool Search the corpus claim evidence')


def tiny_tokenizer(vocab_size: int = 600):
    """A byte-level BPE that round-trips any text, with Qwen's special tokens and <tool_call> tags."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe.train_from_iterator([TOOL_WORDS] * 20, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    bpe.add_tokens([AddedToken("<tool_call>", special=False), AddedToken("</tool_call>", special=False)])
    return PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=qwen2_5_chat_template)


def write_tiny_qwen(folder: Path) -> Path:
    """A 2-layer, 32-wide Qwen2 causal LM with the tiny tokenizer; random weights."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = tiny_tokenizer()
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                         tie_word_embeddings=False, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    Qwen2ForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def bundled_cases() -> list[dict]:
    from factlab.data.loaders.case_files import load

    return load(name="bundled", data_root=str(REPO_ROOT / "datasets" / "bundled"), files=["cases_*.jsonl"])


def retrieval_config():
    """conf/retrieval/default.yaml without progress bars (tests pass a HashingEncoder, so MiniLM is never loaded)."""
    from factlab.config import compose_config

    return compose_config("verify", ["input=x", "sources=y", "retrieval.index.progress=false"]).retrieval
