"""Tiny models built locally for the training tests (no downloads): a 2-layer BERT with a WordPiece vocabulary written
here, a 2-layer Qwen2 with a byte-level BPE trained here, a recording tracker and a fake teacher LM."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import dspy
from dspy.utils.dummies import DummyLM

from factlab.models.lm import LMHandle
from factlab.train.gguf import ROUND_TRIP_SAMPLES

# Words of the bundled cases and the tests' own inputs; everything else is [UNK] (fine for a tiny classifier).
WORDS = """the a an of in on to and or is was were be by for with as at from that this it its not no than more most
claim evidence penicillin fleming discovered discovery 1928 1938 1943 drug trial study patients risk reduced increased
rate rates bank interest percent gdp growth china year years report million billion company market price prices
earthquake flood storm court law ruled police hospital vaccine virus covid health medical science data found found
says said shows showed according new first largest record people government city country world team won match""".split()
CJK = "青霉素于年被弗莱明发现中国国内生产总值增长了的是在和有人一"
QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def write_tiny_bert(folder: Path) -> Path:
    """A 2-layer, 32-wide BERT with a ~250-token WordPiece vocabulary; untrained (random) weights."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *".,;:%'\"()-", *letters, *(f"##{c}" for c in letters),
             *CJK, *dict.fromkeys(WORDS)]
    (folder / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def dspy_prompts() -> list[str]:
    """The DSPy JSONAdapter prompts of the SFT stages (so the tiny BPE learns them as a few long tokens)."""
    from omegaconf import OmegaConf

    from factlab.config import compose_config
    from factlab.train.sft.causal_lm import Prompter
    from factlab.train.tasks import extract_claims_task, query_rewrite_task

    texts = []
    for recipe, task, inputs in (("sft_query_rewrite", query_rewrite_task(3), {"claim": "x"}),
                                 ("sft_extract_claims", extract_claims_task(), {"paragraph": "x", "context": ""})):
        cfg = compose_config("train", [f"recipe={recipe}"]).recipe
        prompter = Prompter.for_stage(cfg.stage, OmegaConf.create(cfg.base_lm.adapter), task)
        texts += [m["content"] for m in prompter.messages(inputs)] + [prompter.answer(["a claim", "another"])]
    return texts


def tiny_bpe_tokenizer(vocab_size: int = 2000):
    """A byte-level BPE trained on a few sentences (round-trips any text), with Qwen's special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [*ROUND_TRIP_SAMPLES, *(" ".join(WORDS[i:i + 12]) for i in range(0, len(WORDS), 12)),
              *dspy_prompts()] * 20
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=QWEN_TEMPLATE)


def write_tiny_qwen(folder: Path) -> Path:
    """A 2-layer, 32-wide Qwen2 causal LM with the tiny BPE tokenizer; untrained (random) weights."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = tiny_bpe_tokenizer()
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                         tie_word_embeddings=False, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    Qwen2ForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def safetensor_weights(folder: Path) -> dict:
    """name -> tensor of every safetensors file in a folder."""
    from safetensors.torch import load_file

    weights = {}
    for file in sorted(Path(folder).glob("*.safetensors")):
        weights.update(load_file(str(file)))
    return weights


class RecordingTracker:
    """A tracker that keeps what it was given (the NullTracker interface)."""

    run_id = None
    tracking_uri = None

    def __init__(self) -> None:
        self.metrics: dict[str, float] = {}
        self.figures: list[str] = []
        self.tables: dict[str, list] = {}

    def log_params(self, params) -> None: ...
    def log_artifact(self, path, artifact_path=None) -> None: ...
    def log_dict(self, data, name) -> None: ...
    def log_text(self, text, name) -> None: ...
    def set_tags(self, tags) -> None: ...

    def log_metrics(self, metrics, step=None) -> None:
        self.metrics.update({k: v for k, v in metrics.items() if v is not None})

    def log_figure(self, figure, name) -> None:
        self.figures.append(name)

    def log_table(self, rows, name) -> None:
        self.tables[name] = rows


CALLS = {"n": 0}  # LM calls made through fake_teacher_lm, across handles (reset by the tests)


class CountingDummyLM(DummyLM):
    def forward(self, *args, **kwargs):
        CALLS["n"] += 1
        return super().forward(*args, **kwargs)


def fake_teacher_lm(name: str, answers: list[dict]) -> LMHandle:
    """An LMHandle over DSPy's DummyLM cycling through `answers` (the `_target_` of a test teacher LM config)."""
    answers = [dict(answer) for answer in answers]  # plain dicts: Hydra passes ListConfig / DictConfig
    cycled = list(itertools.islice(itertools.cycle(answers), 200))
    return LMHandle(name, CountingDummyLM(cycled), dspy.ChatAdapter(use_json_adapter_fallback=False),
                    {"backend": "dummy", "answers": json.dumps(answers)})
