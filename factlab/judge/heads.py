"""Stage heads on frozen e5: check-worthiness, vertical and paragraph type as a linear head (multinomial logistic
regression, L2) on the masked mean of multilingual-e5-small's last hidden states ("query: " prefix, as e5 was
trained). The head weighs kilobytes and trains in a minute; the encoder is the install's deterministic e5 folder,
loaded once per process for every head.

A head folder holds `head.safetensors` (weight, bias) and `head.json` (stage, labels, max length, prefix, the base
model, the weights' sha256, metrics), and is served by `HeadClassifier` with the interface of
`factlab.models.classifier.SequenceClassifier` (`labels`, `stage`, `predict`, `predict_proba`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from factlab.judge.model import read_checked
from factlab.models.assemble import sha256_file

HEAD_FILE = "head.safetensors"
HEAD_META = "head.json"
PREFIX = "query: "


@functools.cache
def _encoder(base_model: str, int8: bool):
    import torch
    from transformers import AutoModel, AutoTokenizer

    from factlab.runtime import resolve_base_model

    folder = resolve_base_model(base_model)
    model = AutoModel.from_pretrained(folder, dtype=torch.float32, add_pooling_layer=False).eval()
    if int8:
        model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    return AutoTokenizer.from_pretrained(folder), model


def embed(texts: Sequence[str], base_model: str = "pkg://factlab.models.e5", max_length: int = 128,
          batch_size: int = 32, int8: bool = False, prefix: str = PREFIX, progress: bool | None = None):
    """L2-normalised mean-pooled e5 embeddings, one row per text (a float32 tensor), batched by length. A progress
    bar on stderr when `progress` (None = only for more than 2,000 texts: a head's training set, not a document)."""
    import torch
    from tqdm.auto import tqdm

    tokenizer, model = _encoder(base_model, int8)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = torch.zeros((len(texts), model.config.hidden_size))
    show = len(texts) > 2000 if progress is None else progress
    with torch.inference_mode(), tqdm(total=len(texts), desc="embedding", unit="text", disable=not show) as bar:
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            bar.update(len(rows))
            enc = tokenizer([prefix + texts[i] for i in rows], max_length=max_length, truncation=True, padding=True,
                            return_tensors="pt")
            hidden = model(**{k: v for k, v in enc.items() if k in ("input_ids", "attention_mask")}).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).float()
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            out[rows] = torch.nn.functional.normalize(pooled, dim=-1)
    return out


def fit_head(x, y: Sequence[int], n_labels: int, l2: float, balanced: bool = True, iterations: int = 200):
    """(weight, bias) of a multinomial logistic regression on `x`, L-BFGS, class-balanced loss by default."""
    import torch

    target = torch.tensor(list(y))
    counts = torch.bincount(target, minlength=n_labels).float().clamp(min=1)
    class_weight = (counts.sum() / (n_labels * counts)) if balanced else None
    weight = torch.zeros((n_labels, x.shape[1]), requires_grad=True)
    bias = torch.zeros(n_labels, requires_grad=True)
    optimizer = torch.optim.LBFGS([weight, bias], max_iter=iterations, line_search_fn="strong_wolfe")
    scale = 20.0  # normalised embeddings: logits need room

    def closure():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(scale * x @ weight.T + bias, target, weight=class_weight)
        loss = loss + l2 * (weight ** 2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return (scale * weight).detach(), bias.detach()


def save_head(folder: Path, weight, bias, meta: dict) -> Path:
    from safetensors.torch import save

    from factlab.atomic import atomic_writer, write_json

    folder = Path(folder)
    with atomic_writer(folder / HEAD_FILE, binary=True) as fh:
        fh.write(save({"weight": weight.contiguous(), "bias": bias.contiguous()}))
    write_json(folder / HEAD_META, {**meta, "head_sha256": sha256_file(folder / HEAD_FILE)}, indent=2)
    return folder


class HeadClassifier:
    """A head folder as a classifier (the interface of SequenceClassifier)."""

    def __init__(self, folder: str | Path, batch_size: int = 32, int8: bool = False) -> None:
        from safetensors.torch import load_file

        self.path = Path(folder)
        self.meta, weights = read_checked(self.path, HEAD_META, HEAD_FILE, "head_sha256", "head_<stage>")
        state = load_file(str(weights))
        self.weight, self.bias = state["weight"].float(), state["bias"].float()
        self.stage: str = self.meta["stage"]
        self.labels: tuple[str, ...] = tuple(self.meta["labels"])
        self.batch_size, self.int8 = batch_size, bool(int8)

    def predict_proba(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> list[list[float]]:
        if not texts:
            return []
        x = embed(list(texts), self.meta["base_model"], self.meta["max_length"], self.batch_size, self.int8,
                  self.meta.get("prefix", PREFIX))
        return (x @ self.weight.T + self.bias).softmax(dim=-1).tolist()

    def predict(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> list[tuple[str, float]]:
        out = []
        for row in self.predict_proba(texts):
            index = max(range(len(row)), key=row.__getitem__)
            out.append((self.labels[index], row[index]))
        return out


def train_head(stage: str, labels: Sequence[str], splits: dict, out_dir: Path, base_model: str, max_length: int,
               l2_grid: Sequence[float], seed: int, name: str) -> dict:
    """Fit a head on `splits` (split -> [(text, gold label, lang)]), choosing L2 by val macro-F1, and measure it on
    test (accuracy, macro-F1, per language, 95% bootstrap intervals). Writes the head folder to `out_dir/model`."""
    import time

    from factlab.metrics import bootstrap_ci, classification_metrics

    start = time.perf_counter()
    labels = list(labels)
    data = {}
    for split, rows in splits.items():
        rows = [r for r in rows if r[1] in labels]
        data[split] = (rows, embed([r[0] for r in rows], base_model, max_length) if rows else None)
    train_rows, x_train = data["train"]
    if not train_rows:
        raise ValueError(f"head {name}: no training rows with a label in {labels}")
    y_train = [labels.index(r[1]) for r in train_rows]

    def predict(weight, bias, x) -> list[str]:
        return [labels[i] for i in (x @ weight.T + bias).argmax(dim=1).tolist()]

    best = None
    val_rows, x_val = data.get("val", ([], None))
    for l2 in l2_grid:
        weight, bias = fit_head(x_train, y_train, len(labels), l2)
        score = (classification_metrics([r[1] for r in val_rows], predict(weight, bias, x_val), labels)["macro_f1"]
                 if val_rows else 0.0)
        if best is None or score > best[0]:
            best = (score, l2, weight, bias)
    _, l2, weight, bias = best
    test_rows, x_test = data.get("test", ([], None))
    result = {"train_rows": len(train_rows), "val_rows": len(val_rows), "test_rows": len(test_rows), "l2": l2,
              "val_macro_f1": round(best[0], 4)}
    if test_rows:
        units = list(zip([r[1] for r in test_rows], predict(weight, bias, x_test), [r[2] for r in test_rows],
                         strict=True))

        def stat(us):
            return classification_metrics([u[0] for u in us], [u[1] for u in us], labels)

        metrics = stat(units)
        ci = bootstrap_ci(units, stat, ["accuracy", "macro_f1"], 1000, seed, 0.95)
        result.update({"test_accuracy": round(metrics["accuracy"], 4), "test_macro_f1": round(metrics["macro_f1"], 4),
                       "test_accuracy_ci95": [round(v, 4) for v in ci.get("accuracy", (0, 0))],
                       "test_macro_f1_ci95": [round(v, 4) for v in ci.get("macro_f1", (0, 0))]})
        for lang in sorted({u[2] for u in units}):
            part = [u for u in units if u[2] == lang]
            result[f"test_accuracy_{lang}"] = round(stat(part)["accuracy"], 4)
            result[f"test_rows_{lang}"] = len(part)
    result["wall_s"] = round(time.perf_counter() - start, 1)
    folder = save_head(Path(out_dir) / "model", weight, bias, {
        "name": name, "stage": stage, "labels": labels, "base_model": base_model, "max_length": max_length,
        "prefix": PREFIX, "pooling": "mean", "metrics": result})
    result["model_uri"] = str(folder.resolve())
    return result
