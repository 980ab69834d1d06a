"""Pure helpers: doctests, tokenizer, sentence splitting, compression, tier tables, config pairing."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import factlab.retrieval
from factlab.matching.segment import sentence_spans
from factlab.matching.text import count_tokens
from factlab.retrieval.chunking import chunk_spans
from factlab.retrieval.compress import GAP, compress
from factlab.retrieval.config import default_conf_dir
from factlab.retrieval.encoders import Encoder, HashingEncoder
from factlab.retrieval.tiers import TierTable, TierTables
from factlab.retrieval.tokenizer import tokenize

MODULES = sorted(info.name for info in pkgutil.iter_modules(factlab.retrieval.__path__, "factlab.retrieval."))


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("GDP grew 5.2% in 2023", ["gdp", "grew", "5.2", "in", "2023"]),
        ("营收增长了3,000万元", ["营收", "增长", "了", "3000", "万元"]),
        ("ＷＨＯ：新冠疫苗", ["who", "新冠", "疫苗"]),
    ],
)
def test_tokenize_mixed_languages(text: str, tokens: list[str]):
    assert tokenize(text) == tokens


def test_count_tokens_counts_cjk_characters_and_words():
    assert count_tokens("世界卫生组织 said 42 cases") == 6 + 3


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("他来了！她走了？好的。", ["他来了！", "她走了？", "好的。"]),
        ("It rose 3.5 percent. Prof. Wang agreed.", ["It rose 3.5 percent.", "Prof. Wang agreed."]),
        ("Title line\nNo blank line between.", ["Title line\nNo blank line between."]),
        ("Heading\n\nBody sentence one. Two", ["Heading", "Body sentence one.", "Two"]),
    ],
)
def test_sentence_spans(text: str, sentences: list[str]):
    assert [text[start:end] for start, end in sentence_spans(text)] == sentences


def test_unbroken_chinese_longer_than_max_chars_is_hard_split():
    text = "长" * 25
    assert chunk_spans(text, max_chars=10) == [(0, 10), (10, 20), (20, 25)]
    with pytest.raises(ValueError, match="max_chars"):
        chunk_spans(text, max_chars=0)


CHUNK = (
    "The trial enrolled 400 patients. Weather was mild that year. The drug cut mortality by 20 percent. "
    "Funding came from a charity. Results were published in 2021."
)


def test_compress_keeps_relevant_sentences_in_order_with_offsets():
    offset = 1000
    page = " " * offset + CHUNK
    snippet = compress(CHUNK, "The drug cut mortality by 20 percent in a trial of 400 patients", max_tokens=14,
                       offset=offset)  # fmt: skip
    kept = [page[start:end] for start, end in snippet.spans]
    assert kept == ["The trial enrolled 400 patients.", "The drug cut mortality by 20 percent."]
    assert snippet.text == kept[0] + GAP + kept[1]
    assert (snippet.start, snippet.end) == (snippet.spans[0][0], snippet.spans[-1][1])
    assert sum(count_tokens(sentence) for sentence in kept) <= 14


def test_compress_joins_adjacent_sentences_verbatim_and_keeps_short_chunks_whole():
    snippet = compress(CHUNK, "drug mortality 20 percent funding charity", max_tokens=12)
    assert snippet.text == "The drug cut mortality by 20 percent. Funding came from a charity."
    assert CHUNK[snippet.start : snippet.end] == snippet.text
    whole = compress(CHUNK, "anything", max_tokens=500, offset=7)
    assert (whole.text, whole.start, whole.end) == (CHUNK, 7, 7 + len(CHUNK))


def test_compress_keeps_the_best_sentence_even_over_budget_and_works_for_chinese():
    chinese = "长江是中国最长的河流。长江全长约6300公里。今天天气很好。"
    snippet = compress(chinese, "长江全长6300公里", max_tokens=3, encoder=HashingEncoder(64))
    assert snippet.text == "长江全长约6300公里。" and chinese[snippet.start : snippet.end] == snippet.text


@pytest.fixture(scope="module")
def conf_tiers() -> TierTables:
    return TierTables.from_dir(default_conf_dir() / "tiers")


@pytest.mark.parametrize(
    ("domain", "vertical", "tier"),
    [
        ("www.nih.gov", None, 1),
        ("nhc.gov.cn", None, 1),
        ("court.gov.cn", None, 1),
        ("who.int", None, 1),
        ("thelancet.com", None, 1),
        ("nejm.org", None, 1),
        ("sec.gov", None, 1),
        ("xinhuanet.com", None, 2),
        ("people.com.cn", None, 2),
        ("caixin.com", None, 2),
        ("reuters.com", None, 2),
        ("bbc.co.uk", None, 2),
        ("zhihu.com", None, 3),
        ("mp.weixin.qq.com", None, 3),
        ("example.com", None, 3),
        ("", None, 3),
        ("dxy.cn", "medical", 2),
        ("chinacdc.cn", "medical", 1),
        ("csrc.gov.cn", "finance", 1),
        ("xueqiu.com", "finance", 3),
        ("pkulaw.com", "law", 2),
        ("notgov.com", None, 3),
    ],
)
def test_tier_tables(conf_tiers: TierTables, domain: str, vertical: str | None, tier: int):
    assert conf_tiers.tier_for(domain, vertical) == tier


def test_a_pattern_under_two_tiers_is_an_error_naming_the_file():
    with pytest.raises(ValueError, match="medical.yaml.*who.int.*tier1 and tier3"):
        TierTable.from_mapping({"tier1": ["who.int"], "tier3": [".who.int"]}, "medical.yaml")


def test_every_tier_file_is_composed_into_the_retrieval_config(retrieval_cfg, conf_tiers: TierTables):
    cfg = retrieval_cfg()
    stems = {path.stem for path in (default_conf_dir() / "tiers").glob("*.yaml")}
    assert set(cfg.tiers) == stems
    assert TierTables.from_config(cfg.tiers).fingerprint() == conf_tiers.fingerprint()


def test_encoder_target_resolves_to_an_encoder_class(retrieval_cfg):
    from hydra.utils import get_class

    encoder_class = get_class(retrieval_cfg().encoder._target_)
    assert isinstance(encoder_class(), Encoder)  # built lazily: no weights are loaded here
