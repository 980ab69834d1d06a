"""The real MiniLM encoder (packaged weights, CPU, offline) retrieves the right chunk in English and Chinese."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from retrieval_support import write_records

from factlab.retrieval.retriever import Retriever

DOCS = [
    ("penicillin", "https://www.who.int/a", "Penicillin was discovered by Alexander Fleming in 1928 in London."),
    ("rates", "https://www.reuters.com/b", "The central bank raised its benchmark interest rate by 25 basis points."),
    ("everest", "https://www.bbc.co.uk/c", "Mount Everest is the highest mountain above sea level, at 8,849 metres."),
    ("yangtze", "https://www.gov.cn/d", "长江是中国最长的河流，全长约6300公里，最终注入东海。"),
    ("vaccine", "https://www.nhc.gov.cn/e", "国家卫生健康委员会表示，流感疫苗接种应在每年十月底前完成。"),
    ("stocks", "https://www.caixin.com/f", "沪深两市股票成交额连续三日突破一万亿元。"),
]


@pytest.mark.slow
def test_minilm_retrieves_the_right_chunk_in_english_and_chinese(tmp_path: Path, retrieval_cfg):
    root = tmp_path / "corpus"
    write_records(root / "docs.jsonl", [{"source_id": s, "title": s, "url": u, "text": t} for s, u, t in DOCS])
    retriever = Retriever.build(root, tmp_path / "index", retrieval_cfg("retrieval.search.min_evidence=1"))
    embeddings = retriever.index.embeddings
    assert embeddings.shape == (len(DOCS), 384)
    assert np.allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-4)
    english = retriever.search(["Who discovered penicillin and when?"], k=3)
    chinese = retriever.search(["长江有多长？"], k=3)
    assert english[0].chunk_id == "penicillin#p1-c1"
    assert chinese[0].chunk_id == "yangtze#p1-c1"
    paraphrase = retriever.search(["What is the tallest peak on Earth?"], k=3)  # no shared content word
    assert paraphrase and paraphrase[0].source_id == "everest"
