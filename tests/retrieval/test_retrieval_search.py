"""Retriever: tier relaxation, dedup, corroboration, multi-query fusion, persistence, incremental builds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from retrieval_support import FLEMING, RATES, CountingEncoder, write_records

from factlab.retrieval.encoders import HashingEncoder
from factlab.retrieval.retriever import Retriever
from factlab.schema import Evidence


@pytest.fixture
def built(corpus: Path, tmp_path: Path, retrieval_cfg, encoder: CountingEncoder):
    def build(*overrides: str) -> Retriever:
        return Retriever.build(corpus, tmp_path / "index", retrieval_cfg(*overrides), encoder=encoder)

    return build


def test_tier_one_hit_stops_relaxation(built, corpus: Path):  # policy tier_first (the seed's letter)
    other = "In 1928 Fleming saw penicillin mould kill bacteria, the BBC reports."
    (corpus / "bbc.md").write_text(f"---\nurl: https://www.bbc.co.uk/news/1\n---\n{other}", encoding="utf-8")
    retriever = built("retrieval.search.min_evidence=1", "retrieval.search.policy=tier_first")
    evidence = retriever.search(["Fleming penicillin 1928"], k=5)
    assert [(ev.domain, ev.tier) for ev in evidence] == [("who.int", 1)]
    assert isinstance(evidence[0], Evidence) and evidence[0].text == FLEMING
    relaxed = built("retrieval.search.min_evidence=2", "retrieval.search.policy=tier_first").search(
        ["Fleming penicillin 1928"], k=5)
    assert [(ev.domain, ev.tier) for ev in relaxed] == [("who.int", 1), ("bbc.co.uk", 2)]


def test_prefer_tier_keeps_what_the_rankers_found_with_authority_first(built, corpus: Path):  # the default policy
    other = "In 1928 Fleming saw penicillin mould kill bacteria, the BBC reports."
    (corpus / "bbc.md").write_text(f"---\nurl: https://www.bbc.co.uk/news/1\n---\n{other}", encoding="utf-8")
    evidence = built("retrieval.search.min_evidence=1").search(["Fleming penicillin 1928"], k=5)
    assert [(ev.domain, ev.tier) for ev in evidence][:2] == [("who.int", 1), ("bbc.co.uk", 2)]  # tier 1 had one hit


def test_no_tier_one_hit_relaxes_to_tier_two_not_three(built, corpus: Path):
    gossip = "Rumour: the central bank will raise the interest rate again to fight inflation!"
    (corpus / "weibo.md").write_text(f"---\nurl: https://weibo.com/1\n---\n{gossip}", encoding="utf-8")
    retriever = built("retrieval.search.min_evidence=1", "retrieval.search.policy=tier_first")
    evidence = retriever.search(["central bank interest rate inflation"], k=5)
    assert [(ev.domain, ev.tier) for ev in evidence] == [("reuters.com", 2)]
    assert RATES in evidence[0].text
    weather = retriever.search(["rained in Beijing"], k=5)
    assert [ev.tier for ev in weather] == [3]


def test_not_enough_evidence_relaxes_through_all_tiers_and_keeps_tier_order(built):
    retriever = built("retrieval.search.min_evidence=3")
    evidence = retriever.search(["Fleming penicillin 1928", "central bank interest rate"], k=5)
    assert [ev.tier for ev in evidence] == [1, 2]


def test_duplicate_content_is_returned_once_as_its_highest_tier_copy_with_corroboration(built):
    retriever = built("retrieval.search.min_evidence=5")  # never enough: every tier is searched
    evidence = retriever.search(["Fleming discovered penicillin"], k=5)
    copies = [ev for ev in evidence if "Fleming" in ev.text]
    assert len(copies) == 1
    assert (copies[0].domain, copies[0].tier, copies[0].corroborated_by) == ("who.int", 1, ["zhuanlan.zhihu.com"])


def test_same_content_under_one_domain_is_not_corroboration(tmp_path: Path, retrieval_cfg, encoder):
    root = tmp_path / "src"
    root.mkdir()
    for name in ("a", "b"):
        (root / f"{name}.md").write_text(f"---\nurl: https://www.reuters.com/{name}\n---\n{RATES}", encoding="utf-8")
    retriever = Retriever.build(root, tmp_path / "index", retrieval_cfg(), encoder=encoder)
    (evidence,) = retriever.search(["central bank interest rate"], k=5)
    assert evidence.corroborated_by == []


def test_queries_are_fused_and_below_floor_chunks_are_not_evidence(built):
    retriever = built("retrieval.search.min_evidence=2")
    evidence = retriever.search(["Fleming penicillin", "长江 全长 公里"], k=5)
    assert sorted(ev.source_id for ev in evidence) == sorted(["yangtze", retriever.index.chunks[0].source_id])
    assert all(ev.tier == 1 and ev.score >= 0.5 for ev in evidence)
    assert retriever.search(["quantum chromodynamics lattice"], k=5) == []


def test_claim_alone_is_the_query_and_bad_arguments_fail(built):
    retriever = built("retrieval.search.min_evidence=1")
    assert retriever.search([], k=3, claim="长江全长约6300公里")[0].source_id == "yangtze"
    with pytest.raises(ValueError, match="query"):
        retriever.search(["  "], k=3)
    with pytest.raises(ValueError, match="k must be"):
        retriever.search(["x"], k=0)


def test_open_gives_the_same_results_and_checks_the_encoder(built, tmp_path: Path, retrieval_cfg, encoder):
    retriever = built("retrieval.search.min_evidence=1")
    queries = ["central bank interest rate", "Fleming penicillin"]
    reopened = Retriever.open(tmp_path / "index", retrieval_cfg("retrieval.search.min_evidence=1"), encoder=encoder)
    assert reopened.search(queries, k=5) == retriever.search(queries, k=5)
    with pytest.raises(ValueError, match="rebuild"):
        Retriever.open(tmp_path / "index", retrieval_cfg(), encoder=HashingEncoder(dim=32))
    with pytest.raises(FileNotFoundError, match="Retriever.build"):
        Retriever.open(tmp_path / "no-index", retrieval_cfg(), encoder=encoder)


def test_rebuild_of_unchanged_folder_is_idempotent(corpus: Path, tmp_path: Path, retrieval_cfg):
    index_dir = tmp_path / "index"
    Retriever.build(corpus, index_dir, retrieval_cfg(), encoder=CountingEncoder())
    first = {path: path.read_bytes() for path in index_dir.rglob("*") if path.is_file() and path.name != ".writer.lock"}
    assert len(first) > 10  # the manifest and the files of one segment
    again = CountingEncoder()
    retriever = Retriever.build(corpus, index_dir, retrieval_cfg(), encoder=again)
    assert again.texts == [] and retriever.report.files_read == [] and retriever.report.n_reused == 5
    assert {path: path.read_bytes() for path in index_dir.rglob("*") if path.name != ".writer.lock"
            and path.is_file()} == first


def test_incremental_update_reembeds_only_the_changed_file_and_drops_deleted_ones(
    corpus: Path, tmp_path: Path, retrieval_cfg
):
    index_dir = tmp_path / "index"
    before = Retriever.build(corpus, index_dir, retrieval_cfg(), encoder=CountingEncoder())
    new_text = "The central bank cut its benchmark interest rate by 50 basis points in 2024."
    html = (corpus / "rates.html").read_text(encoding="utf-8")
    (corpus / "rates.html").write_text(html.replace(RATES, new_text), encoding="utf-8")
    (corpus / "notes.txt").unlink()
    counting = CountingEncoder()
    after = Retriever.build(corpus, index_dir, retrieval_cfg(), encoder=counting)
    assert counting.texts == ["Bank raises rates\n\n" + new_text]
    assert (after.report.files_read, after.report.files_removed) == (["rates.html"], ["notes.txt"])
    assert after.report.n_embedded == 1 and after.report.n_reused == 3
    kept_before = [c.chunk_id for c in before.index.chunks if c.source_id in after.index.sources]
    assert [c.chunk_id for c in after.index.chunks] == kept_before
    assert not any(source.path == "notes.txt" for source in after.index.sources.values())
    fresh = Retriever.build(corpus, tmp_path / "fresh", retrieval_cfg(), encoder=CountingEncoder())
    assert (after.index.embeddings == fresh.index.embeddings).all()


def test_issues_survive_incremental_builds_and_index_inside_sources_is_skipped(corpus: Path, retrieval_cfg):
    (corpus / "x.pdf").write_bytes(b"not a pdf")
    index_dir = corpus / ".." / "corpus" / "index"  # the index lives inside the sources folder
    first = Retriever.build(corpus, index_dir, retrieval_cfg(), encoder=CountingEncoder())
    second = Retriever.build(corpus, index_dir, retrieval_cfg(), encoder=CountingEncoder())
    assert [issue.path for issue in first.issues] == [issue.path for issue in second.issues] == ["x.pdf"]
    assert second.report.files_read == [] and len(second.index.sources) == 5
    shutil.rmtree(index_dir)


def test_changed_ingest_settings_rechunk_but_reuse_embeddings(corpus: Path, tmp_path: Path, retrieval_cfg):
    index_dir = tmp_path / "index"
    Retriever.build(corpus, index_dir, retrieval_cfg(), encoder=CountingEncoder())
    counting = CountingEncoder()
    retriever = Retriever.build(corpus, index_dir, retrieval_cfg("retrieval.ingest.max_chars=60"), encoder=counting)
    report = retriever.report
    assert report.files_read == ["fleming.md", "notes.txt", "rates.html", "records.jsonl"]
    assert len(counting.texts) == report.n_embedded and report.n_embedded + report.n_reused == report.n_chunks
    assert report.n_reused >= 1  # chunks short enough to be unchanged keep their embedding
    assert all(len(chunk.text) <= 60 for chunk in retriever.index.chunks)


def test_evidence_is_compressed_to_claim_sentences_with_page_offsets(tmp_path: Path, retrieval_cfg, encoder):
    root = tmp_path / "src"
    root.mkdir()
    filler = " ".join(f"Unrelated remark number {i} about the weather in spring." for i in range(12))
    page = f"{filler} Fleming discovered penicillin in 1928 in London. {filler}"
    (root / "long.txt").write_text(page, encoding="utf-8")
    cfg = retrieval_cfg("retrieval.search.min_evidence=1", "retrieval.compress.max_tokens=12")
    retriever = Retriever.build(root, tmp_path / "index", cfg, encoder=encoder)
    claim = "Fleming discovered penicillin in 1928"
    (evidence,) = retriever.search(["Fleming penicillin 1928"], k=1, claim=claim)
    assert evidence.text == "Fleming discovered penicillin in 1928 in London."
    assert page[evidence.start : evidence.end] == evidence.text
    (uncompressed,) = retriever.search(["Fleming penicillin 1928"], k=1)
    chunk = retriever.index.chunks[0]
    assert (uncompressed.text, uncompressed.start, uncompressed.end) == (chunk.text, chunk.start, chunk.end)


def test_source_title_is_searchable_but_not_part_of_the_evidence(tmp_path: Path, retrieval_cfg, encoder):
    root = tmp_path / "src"
    write_records(
        root / "cases.jsonl",
        [{"source_id": "okonjo", "title": "Okonjo v Harrowgate Lettings", "text": "The appeal is allowed."}],
    )
    cfg = retrieval_cfg("retrieval.search.min_evidence=1")
    (evidence,) = Retriever.build(root, tmp_path / "index", cfg, encoder=encoder).search(["Okonjo Harrowgate"], k=3)
    assert (evidence.text, evidence.title) == ("The appeal is allowed.", "Okonjo v Harrowgate Lettings")
    untitled = Retriever.build(
        root, tmp_path / "plain", retrieval_cfg("retrieval.index.with_title=false"), encoder=encoder
    )
    assert untitled.search(["Okonjo Harrowgate"], k=3) == []


class SidedEncoder(CountingEncoder):
    """A hashing encoder with a query side that records what reaches it."""

    def __init__(self, dim: int = 128):
        super().__init__(dim)
        self.queries: list[str] = []

    def encode_queries(self, texts):
        self.queries.extend(texts)
        return HashingEncoder.encode(self, texts)


def test_search_embeds_queries_on_the_query_side(corpus: Path, tmp_path: Path, retrieval_cfg):
    encoder = SidedEncoder()
    retriever = Retriever.build(corpus, tmp_path / "index", retrieval_cfg(), encoder=encoder)
    indexed = list(encoder.texts)
    retriever.search(["Fleming penicillin 1928"], k=5)
    assert encoder.queries == ["Fleming penicillin 1928"]
    assert "Fleming penicillin 1928" not in encoder.texts[len(indexed):]  # the passage side never saw the query


class EnglishOnlyEncoder(CountingEncoder):
    """The hashing encoder declaring an English-only vocabulary (as MiniLM does)."""

    languages = ("en",)


def test_a_query_the_encoder_does_not_cover_is_ranked_and_cut_by_its_words_alone(corpus: Path, tmp_path: Path,
                                                                                  retrieval_cfg):
    covering = Retriever.build(corpus, tmp_path / "a", retrieval_cfg("retrieval.search.min_evidence=1"),
                               encoder=CountingEncoder())
    english_only = Retriever.build(corpus, tmp_path / "b", retrieval_cfg("retrieval.search.min_evidence=1"),
                                   encoder=EnglishOnlyEncoder())
    query = "长江 全长 公里"
    assert list(english_only._covered([query, "Fleming penicillin"])) == [False, True]
    hits = english_only.search([query], k=5)
    assert [e.source_id for e in hits] == ["yangtze"]
    row = next(i for i, c in enumerate(english_only.index.chunks) if c.source_id == "yangtze")
    from factlab.retrieval.fusion import lexical_coverage
    from factlab.retrieval.tokenizer import tokenize

    lexical = lexical_coverage(tokenize(query), english_only._token_sets[row], english_only._idf,
                               english_only._n_docs)
    assert hits[0].score == pytest.approx(lexical, abs=1e-4)  # no cosine in the relevance
    assert covering.search([query], k=5)[0].source_id == "yangtze"


def test_min_relevance_per_language_cuts_each_query_at_its_languages_number(built):
    strict_zh = built("retrieval.search.min_evidence=1", "retrieval.search.min_relevance={en: 0.5, zh: 0.99}")
    assert strict_zh.search(["长江 全长 公里"], k=5, claim="长江全长约6300公里，流经多个省份。") == []
    assert strict_zh.search(["Fleming penicillin"], k=5)
    lenient = built("retrieval.search.min_evidence=1", "~retrieval.search.min_relevance",
                    "+retrieval.search.min_relevance={default: 0.5}")
    assert lenient.search(["长江 全长 公里"], k=5)[0].source_id == "yangtze"


@pytest.mark.parametrize("value,match", [("{en: 0.5}", "needs en and zh, or default"), ("{en: 0.5, zh: 2}", "zh"),
                                         ("1.5", "expected a number")])
def test_a_bad_min_relevance_is_refused_by_name(built, value, match):
    with pytest.raises(ValueError, match=match):
        built("~retrieval.search.min_relevance", f"+retrieval.search.min_relevance={value}")


def test_hits_below_strong_relevance_are_weak_and_the_rest_are_not(built):
    loose = built("retrieval.search.min_evidence=1", "retrieval.search.min_relevance=0.0",
                  "retrieval.search.strong_relevance=0.5")
    hits = loose.search(["Fleming penicillin"], k=5)
    assert any(hit.weak for hit in hits) and any(not hit.weak for hit in hits), [(h.score, h.weak) for h in hits]
    assert all(hit.weak == (hit.score < 0.5) for hit in hits)
    off = built("retrieval.search.min_evidence=1", "retrieval.search.min_relevance=0.0",
                "retrieval.search.strong_relevance=null")
    assert not any(hit.weak for hit in off.search(["Fleming penicillin"], k=5))


def test_a_bad_strong_relevance_is_refused_by_name(built):
    with pytest.raises(ValueError, match="retrieval.search.strong_relevance.zh"):
        built("retrieval.search.strong_relevance={en: 0.5, zh: 3}")
