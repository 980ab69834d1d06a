"""Fixtures for retrieval tests: the composed config, a counting fake encoder, a small corpus on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from retrieval_support import FLEMING, RATES, YANGTZE, CountingEncoder, write_records

from factlab.retrieval.config import load_retrieval_config


@pytest.fixture
def retrieval_cfg():
    """Build the composed `retrieval` config with overrides (progress bars off)."""

    def build(*overrides: str):
        return load_retrieval_config(["retrieval.index.progress=false", *overrides])

    return build


@pytest.fixture
def encoder() -> CountingEncoder:
    return CountingEncoder()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A small mixed corpus: markdown (front matter), html, txt, jsonl; tiers 1-3 by domain."""
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "fleming.md").write_text(
        f"---\ntitle: History of penicillin\nurl: https://www.who.int/history/penicillin\nyear: 2020\n---\n{FLEMING}\n",
        encoding="utf-8",
    )
    (root / "rates.html").write_text(
        "<html><head><title>Bank raises rates</title><link rel='canonical' href='https://www.reuters.com/markets/x'>"
        f"</head><body><nav>Menu</nav><article><h1>Bank raises rates</h1><p>{RATES}</p></article></body></html>",
        encoding="utf-8",
    )
    write_records(
        root / "records.jsonl",
        [
            {"source_id": "zhihu-copy", "title": "转载", "url": "https://zhuanlan.zhihu.com/p/1", "text": FLEMING},
            {"source_id": "yangtze", "title": "长江", "url": "https://www.gov.cn/guoqing/yangtze", "text": YANGTZE},
        ],
    )
    (root / "notes.txt").write_text("Weather notes: it rained in Beijing on Tuesday.\n", encoding="utf-8")
    return root
