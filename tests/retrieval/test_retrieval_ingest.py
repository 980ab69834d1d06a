"""Ingest: formats, metadata, tiers, stable ids, chunk offsets, bad input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from retrieval_support import FLEMING, make_pdf, write_records

from factlab.retrieval.config import default_conf_dir
from factlab.retrieval.ingest import SourcesFolderError, ingest
from factlab.retrieval.tiers import TierTables


@pytest.fixture(scope="module")
def tiers() -> TierTables:
    return TierTables.from_dir(default_conf_dir() / "tiers")


def run(folder: Path, tiers: TierTables, max_chars: int = 800):
    return ingest(folder, max_chars=max_chars, tiers=tiers, default_vertical="general")


def test_formats_and_metadata(corpus: Path, tiers: TierTables):
    sources, chunks, issues = run(corpus, tiers)
    assert issues == []
    by_path = {source.path: source for source in sources if source.line is None}
    md, html, txt = by_path["fleming.md"], by_path["rates.html"], by_path["notes.txt"]
    assert (md.title, md.domain, md.tier, md.year, md.lang) == ("History of penicillin", "who.int", 1, 2020, "en")
    assert (html.title, html.domain, html.tier) == ("Bank raises rates", "reuters.com", 2)
    assert (txt.title, txt.domain, txt.tier) == ("notes", "", 3)
    records = {source.source_id: source for source in sources if source.line is not None}
    assert (records["zhihu-copy"].tier, records["zhihu-copy"].domain) == (3, "zhuanlan.zhihu.com")
    assert (records["yangtze"].tier, records["yangtze"].lang, records["yangtze"].line) == (1, "zh", 2)
    html_text = next(chunk.text for chunk in chunks if chunk.source_id == html.source_id)
    assert html_text.startswith("Bank raises rates\n\nThe central bank") and "Menu" not in html_text
    assert all(re.fullmatch(r"[a-z0-9-]+", source.source_id) for source in sources)


def test_reingest_gives_identical_ids_and_offsets(corpus: Path, tiers: TierTables):
    first, second = run(corpus, tiers), run(corpus, tiers)
    assert [chunk.to_dict() for chunk in first[1]] == [chunk.to_dict() for chunk in second[1]]
    assert [source.to_dict() for source in first[0]] == [source.to_dict() for source in second[0]]
    assert len({chunk.chunk_id for chunk in first[1]}) == len(first[1])


def test_chunks_pack_sentences_within_max_chars_and_slice_back(tmp_path: Path, tiers: TierTables):
    sentences = [f"Sentence number {i} says something about topic {i}." for i in range(40)]
    chinese = "".join(f"第{i}句话说明了一个事实。" for i in range(30))
    page = " ".join(sentences[:20]) + "\n\n" + " ".join(sentences[20:]) + "\n\n" + chinese
    (tmp_path / "long.txt").write_text(page, encoding="utf-8")
    sources, chunks, _ = run(tmp_path, tiers, max_chars=200)
    assert len(chunks) > 5
    source_id = sources[0].source_id
    assert [chunk.chunk_id for chunk in chunks] == [f"{source_id}#p1-c{n}" for n in range(1, len(chunks) + 1)]
    for chunk in chunks:
        assert page[chunk.start : chunk.end] == chunk.text
        assert len(chunk.text) <= 200
        assert chunk.text[-1] in ".。"  # packed whole sentences, never cut mid-sentence
    covered = "".join(chunk.text for chunk in chunks)
    assert re.sub(r"\s", "", covered) == re.sub(r"\s", "", page)


def test_pdf_keeps_page_numbers_in_chunk_ids(tmp_path: Path, tiers: TierTables):
    make_pdf(
        tmp_path / "paper.pdf",
        [["Page one discusses penicillin."], ["Page two cites doi 10.1056/NEJMoa2034577 as the trial."]],
        title="Trial report",
    )
    sources, chunks, issues = run(tmp_path, tiers)
    assert issues == []
    (source,) = sources
    assert (source.title, source.pages, source.doi) == ("Trial report", 2, "10.1056/NEJMoa2034577")
    assert [(chunk.chunk_id, chunk.page) for chunk in chunks] == [
        (f"{source.source_id}#p1-c1", 1),
        (f"{source.source_id}#p2-c1", 2),
    ]
    assert "Page two" in chunks[1].text


def test_corrupt_pdf_and_bad_encoding_are_issues_and_the_rest_is_ingested(corpus: Path, tiers: TierTables):
    (corpus / "x.pdf").write_bytes(b"\x00\x01garbage, not a pdf at all\xff" * 20)
    (corpus / "bad.txt").write_bytes(b"caf\xe9 \xff\xfe broken \x80 bytes")
    sources, chunks, issues = run(corpus, tiers)
    assert {issue.path for issue in issues} == {"x.pdf", "bad.txt"}
    reasons = {issue.path: issue.reason for issue in issues}
    assert "PDF" in reasons["x.pdf"] and "UTF-8" in reasons["bad.txt"]
    assert len(sources) == 5 and chunks


def test_gbk_chinese_text_is_decoded(tmp_path: Path, tiers: TierTables):
    (tmp_path / "gbk.txt").write_bytes("长江是中国最长的河流。".encode("gbk"))
    _, chunks, issues = run(tmp_path, tiers)
    assert issues == [] and chunks[0].text == "长江是中国最长的河流。"


def test_jsonl_bad_lines_and_duplicate_ids_are_issues(tmp_path: Path, tiers: TierTables):
    write_records(tmp_path / "a.jsonl", [{"source_id": "dup", "title": "A", "text": "first copy"}])
    lines = [
        '{"source_id": "dup", "title": "B", "text": "second copy"}',
        "{not json",
        '{"source_id": "no-text", "title": "C"}',
        '{"source_id": "bad#id", "title": "D", "text": "x"}',
        '{"source_id": "paged", "title": "E", "pages": ["p one", "p two"], "tier": 7}',
    ]
    (tmp_path / "b.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sources, chunks, issues = run(tmp_path, tiers)
    assert sorted(source.source_id for source in sources) == ["dup", "paged"]
    assert next(chunk for chunk in chunks if chunk.source_id == "dup").text == "first copy"
    assert {(issue.path, issue.line) for issue in issues} == {
        ("b.jsonl", 1),
        ("b.jsonl", 2),
        ("b.jsonl", 3),
        ("b.jsonl", 4),
        ("b.jsonl", 5),
    }
    assert [chunk.chunk_id for chunk in chunks if chunk.source_id == "paged"] == ["paged#p1-c1", "paged#p2-c1"]
    assert next(source for source in sources if source.source_id == "paged").tier == 3  # bad tier -> tables


def test_explicit_tier_wins_and_vertical_picks_its_table(tmp_path: Path, tiers: TierTables):
    write_records(
        tmp_path / "r.jsonl",
        [
            {"source_id": "who-low", "title": "t", "url": "https://who.int/a", "tier": 3, "text": "x"},
            {"source_id": "dxy-med", "title": "t", "url": "https://dxy.cn/a", "vertical": "medical", "text": "x"},
            {"source_id": "dxy-gen", "title": "t", "url": "https://dxy.cn/a", "text": "x"},
            {"source_id": "doi-in-text", "title": "t", "text": "Published as https://doi.org/10.1000/abc.123."},
        ],
    )
    sources = {source.source_id: source for source in run(tmp_path, tiers)[0]}
    assert [sources[name].tier for name in ("who-low", "dxy-med", "dxy-gen")] == [3, 2, 3]
    assert sources["doi-in-text"].doi == "10.1000/abc.123"


def test_missing_and_empty_folders_name_the_path(tmp_path: Path, tiers: TierTables):
    with pytest.raises(SourcesFolderError, match="nowhere"):
        run(tmp_path / "nowhere", tiers)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.docx").write_bytes(b"ignored format")
    with pytest.raises(SourcesFolderError, match="empty.*holds no source file"):
        run(tmp_path / "empty", tiers)


def test_markdown_title_from_heading_and_sidecar_metadata(tmp_path: Path, tiers: TierTables):
    (tmp_path / "note.md").write_text("# Penicillin history\n\n" + FLEMING, encoding="utf-8")
    (tmp_path / "scan.txt").write_text("Plain text from a report.", encoding="utf-8")
    (tmp_path / "scan.txt.meta.json").write_text('{"url": "https://www.nih.gov/x", "author": "NIH"}')
    sources = {source.path: source for source in run(tmp_path, tiers)[0]}
    assert sources["note.md"].title == "Penicillin history"
    assert (sources["scan.txt"].domain, sources["scan.txt"].tier, sources["scan.txt"].author) == ("nih.gov", 1, "NIH")
