"""A trained sequence classifier folder as a model a stage runs on: Hugging Face weights + tokenizer +
`factlab_classifier.json` (stage, labels, max length, ...), written by the distill recipes (factlab/train/distill)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from factlab.runtime import ModelSourceError, cpu_bf16


def softmax(values: Sequence[float]) -> list[float]:
    """Softmax of a list of logits.

    >>> [round(p, 3) for p in softmax([0.0, 0.0])]
    [0.5, 0.5]
    """
    import math

    top = max(values)
    exps = [math.exp(v - top) for v in values]
    total = sum(exps)
    return [e / total for e in exps]

META_FILE = "factlab_classifier.json"  # written next to the Hugging Face files by the distill recipes
POOLINGS = ("cls", "mean")


def use_mean_pooling(model) -> None:
    """Make a BERT-style sequence classifier read the masked mean of its last hidden states instead of the first
    token's, in place (the pooler's dense + tanh stay, so weight names and checkpoints are unchanged).

    Mean-pooling sentence encoders leave the first token nearly constant: multilingual-e5-small's first-token states
    of six unrelated zh / en texts sit at mean pairwise cosine 0.873 (and e5 ships no pooler weights), so a
    first-token head starts from almost no signal. The attention mask reaches the pooler through a pre-forward hook
    on the encoder (thread-local: claims are judged in threads).
    """
    import threading

    import torch

    base = model.base_model
    pooler = getattr(base, "pooler", None)
    if pooler is None or not hasattr(pooler, "dense"):
        raise ModelSourceError(f"{type(model).__name__}: mean pooling needs a BERT-style pooler (dense + activation)")
    if getattr(pooler, "mean_pooling", False):
        return
    state = threading.local()

    class MeanPooler(torch.nn.Module):
        mean_pooling = True

        def __init__(self) -> None:
            super().__init__()
            self.dense, self.activation = pooler.dense, pooler.activation

        def forward(self, hidden_states):
            mask = getattr(state, "mask", None)
            if mask is None:
                mask = torch.ones(hidden_states.shape[:2], device=hidden_states.device)
            weights = mask.unsqueeze(-1).to(hidden_states.dtype)
            pooled = (hidden_states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
            return self.activation(self.dense(pooled))

    def capture(module, args, kwargs):
        state.mask = kwargs.get("attention_mask", args[1] if len(args) > 1 else None)

    base.register_forward_pre_hook(capture, with_kwargs=True)
    base.pooler = MeanPooler()


class SequenceClassifier:
    """A saved classifier folder: Hugging Face model + tokenizer + `factlab_classifier.json` (stage, labels, ...).

    Args:
        path: the folder (a resolved model, see `factlab.tracking.refs.resolve_model`).
        batch_size: inputs per forward pass.
        int8: quantise the Linear layers to int8 (torch dynamic quantisation) for serving.
    """

    def __init__(self, path: str | Path, batch_size: int = 32, int8: bool = False) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.path = Path(path)
        meta_file = self.path / META_FILE
        if not meta_file.is_file():
            raise ModelSourceError(f"{self.path}: no {META_FILE}; expected a folder saved by `python train.py "
                                   "recipe=distill_<stage>`")
        self.meta = json.loads(meta_file.read_text())
        self.stage: str = self.meta["stage"]
        self.labels: tuple[str, ...] = tuple(self.meta["labels"])
        self.max_length: int = self.meta["max_length"]
        self.window_stride: int = self.meta.get("window_stride", 0)  # 0 = truncate the pair (older models)
        self.temperature: float = self.meta.get("temperature", 1.0)  # fitted on val (1.0 = uncalibrated)
        self.support_threshold: float = self.meta.get("support_threshold", 0.5)  # p(support) cut fitted on val
        self.bf16: bool = bool(self.meta["bf16"]) and cpu_bf16()[0]  # emulated bf16 is ~100x slower than fp32
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModelForSequenceClassification.from_pretrained(self.path, dtype=torch.float32).eval()
        self.pooling: str = self.meta.get("pooling", "cls")  # older folders: the first token's state
        if self.pooling == "mean":
            use_mean_pooling(self.model)
        self.int8 = bool(int8)
        if self.int8:  # dynamic int8 Linear layers: 1.7x the pairs/s of fp32 here, accuracy in docs/small_models.md
            self.model = torch.ao.quantization.quantize_dynamic(self.model, {torch.nn.Linear}, dtype=torch.qint8)

    def predict_proba(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> list[list[float]]:
        """Class probabilities (in `labels` order) per input, temperature-calibrated; batched by length.

        A pair whose second text is longer than the model reads is cut into windows (`window_stride` tokens of
        overlap) and the window with the most decisive answer (the highest probability of a class that is not
        `insufficient` / `irrelevant`) speaks for the whole pair: evidence is not lost past `max_length`.
        """
        rows = self.window_logits(texts, pairs)
        out = []
        for windows in rows:
            probs = [softmax([v / self.temperature for v in logits]) for logits in windows]
            out.append(max(probs, key=self._decisiveness))
        return out

    def _decisiveness(self, probs: Sequence[float]) -> float:
        keep = [p for label, p in zip(self.labels, probs, strict=True) if label not in ("insufficient", "irrelevant")]
        return max(keep) if keep else max(probs)

    def window_logits(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> list[list[list[float]]]:
        """Raw logits per input, one list per window (one window for a single text or a short pair)."""
        import torch

        order = sorted(range(len(texts)), key=lambda i: len(texts[i]) + (len(pairs[i]) if pairs else 0))
        out: list[list[list[float]]] = [[] for _ in texts]
        autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16)
        with torch.inference_mode(), autocast:
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                for rows, windows in self._window_groups(texts, pairs, batch):
                    encoded = self.tokenizer([texts[i] for i in rows], [pairs[i] for i in rows] if pairs else None,
                                             max_length=self.max_length, padding=True, return_tensors="pt", **windows)
                    owners = encoded.pop("overflow_to_sample_mapping", None)
                    owners = owners.tolist() if owners is not None else list(range(len(rows)))
                    logits = []
                    for chunk in range(0, len(owners), self.batch_size):  # overflow can multiply the rows
                        part = {k: v[chunk:chunk + self.batch_size] for k, v in encoded.items()}
                        logits += self.model(**part).logits.float().tolist()
                    for owner, row in zip(owners, logits, strict=True):
                        out[rows[owner]].append(row)
        return out

    def _window_groups(self, texts: Sequence[str], pairs: Sequence[str] | None,
                       batch: list[int]) -> list[tuple[list[int], dict]]:
        """Split a batch into pairs read in windows and inputs read truncated: windows need room for the second
        text beside the whole first one, so a claim that fills most of `max_length` is truncated instead, and the
        overlap shrinks to fit the tightest pair of the group."""
        plain = dict(truncation=True)
        if pairs is None or not self.window_stride:
            return [(batch, plain)]
        first = self.tokenizer([texts[i] for i in batch], add_special_tokens=False)["input_ids"]
        budget = self.max_length - self.tokenizer.num_special_tokens_to_add(pair=True)
        rooms = {i: budget - len(ids) for i, ids in zip(batch, first, strict=True)}
        windowed = [i for i in batch if rooms[i] >= max(8, budget // 4)]
        truncated = [i for i in batch if i not in set(windowed)]
        groups = [(truncated, plain)] if truncated else []
        if windowed:
            stride = min(self.window_stride, min(rooms[i] for i in windowed) // 2)
            groups.append((windowed, dict(truncation="only_second", stride=stride, return_overflowing_tokens=True)))
        return groups

    def p_support(self, texts: Sequence[str], pairs: Sequence[str]) -> list[float]:
        """The calibrated probability that each pair's evidence supports its claim (compare with
        `support_threshold`, fitted on val for balanced accuracy)."""
        index = self.labels.index("support")
        return [probs[index] for probs in self.predict_proba(texts, pairs)]

    def predict(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """(label, probability) of the most likely class per input."""
        best = []
        for row in self.predict_proba(texts, pairs):
            index = max(range(len(row)), key=row.__getitem__)
            best.append((self.labels[index], row[index]))
        return best
