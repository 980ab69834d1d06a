"""Fixtures of the data-layer tests: small inline cases, a file writer, and the public data root (or a skip)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

CORPUS = [
    {"source_id": "who-penicillin", "title": "Penicillin history", "url": "https://www.who.int/p", "tier": 1,
     "text": "Penicillin was discovered by Alexander Fleming in 1928. It entered mass production in 1943."},
    {"source_id": "blog-penicillin", "title": "A blog", "tier": 3,
     "pages": ["Some say penicillin was found in 1930.", "Fleming worked in London at St Mary's."]},
]

EN_CASE = {
    "case_id": "t-en-0001",
    "lang": "en",
    "text": "Penicillin was discovered in 1928 by Fleming. It was mass produced from 1943. I love it.",
    "vertical": "medical",
    "error_type": "correct",
    "paragraphs": [[0, 45], [46, 88]],
    "sentences": [
        {"text": "Penicillin was discovered in 1928 by Fleming.", "checkworthy": True, "reason": "a dated fact"},
        {"text": "I love it.", "checkworthy": False, "reason": "opinion"},
    ],
    "claims": [
        {"claim_id": "c1", "text": "Alexander Fleming discovered penicillin in 1928.",
         "sentence": "Penicillin was discovered in 1928 by Fleming.", "paragraph": 0, "vertical": "medical",
         "queries": ["penicillin discovery year Fleming"],
         "evidence": [
             {"source_id": "who-penicillin", "chunk_id": "who-penicillin#p1-c1", "tier": 1, "relation": "support",
              "text": "Penicillin was discovered by Alexander Fleming in 1928."},
             {"source_id": "blog-penicillin", "chunk_id": "blog-penicillin#p1-c1", "tier": 3,
              "relation": "contradict", "text": "Some say penicillin was found in 1930."},
         ],
         "relation": "support", "label": "correct"},
        {"claim_id": "c2", "text": "Penicillin has been mass produced since 1943.", "paragraph": 1,
         "relation": "insufficient", "label": "unverifiable"},
    ],
    "review": [{"draft": "It was mass produced.", "action": "fix", "fixed": "Penicillin was mass produced from 1943.",
                "flaw": "wrong_subject"}],
    "corpus": "corpus.jsonl",
}

ZH_CASE = {
    "case_id": "t-zh-0001",
    "lang": "zh",
    "text": "青霉素于1928年被发现。",
    "claims": [
        {"claim_id": "c1", "text": "青霉素于1928年被弗莱明发现。", "relation": "support", "label": "correct",
         "evidence": [{"source_id": "zh-src", "chunk_id": "zh-src#p1-c1", "text": "弗莱明于1928年发现青霉素。",
                       "relation": "support"}]},
    ],
    "sources": [{"source_id": "zh-src", "title": "青霉素", "text": "弗莱明于1928年发现青霉素。此后广泛使用。"}],
}


def _write_jsonl(path: Path, rows: list) -> Path:
    """Write rows (dicts, or raw strings written as they are) as JSONL."""
    lines = [row if isinstance(row, str) else json.dumps(row, ensure_ascii=False) for row in rows]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def write_jsonl():
    """`write_jsonl(path, rows) -> path`: rows are dicts, or strings written verbatim (for broken lines)."""
    return _write_jsonl


@pytest.fixture
def corpus() -> list[dict]:
    return copy.deepcopy(CORPUS)


@pytest.fixture
def en_case() -> dict:
    return copy.deepcopy(EN_CASE)


@pytest.fixture
def zh_case() -> dict:
    return copy.deepcopy(ZH_CASE)


@pytest.fixture
def case_dir(tmp_path: Path) -> Path:
    """A folder with cases.jsonl (the en case on line 1, zh on line 2) and the en case's corpus.jsonl."""
    _write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    _write_jsonl(tmp_path / "cases.jsonl", [EN_CASE, ZH_CASE])
    return tmp_path


@pytest.fixture(scope="session")
def public_data_root() -> Path:
    """The public datasets: FACTLAB_DATA_ROOT, else <repo>/../shared/data; skips the test when absent."""
    root = Path(os.environ.get("FACTLAB_DATA_ROOT") or REPO_ROOT.parent / "shared" / "data")
    if not root.is_dir():
        pytest.skip(f"public datasets not found at {root} (set FACTLAB_DATA_ROOT to run the data tests)")
    return root.resolve()

