"""The segmented index (factlab/retrieval/store.py): incremental segments, tombstones, snapshots, one writer,
migration of the old format, a killed writer."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from retrieval_support import CountingEncoder

from factlab.retrieval import store
from factlab.retrieval.index import CHUNKS, EMBEDDINGS, SOURCES, Index, indexed_text
from factlab.retrieval.retriever import Retriever
from factlab.retrieval.tokenizer import tokenize

BUNDLED = Path(__file__).resolve().parents[2] / "datasets" / "bundled" / "corpus"
NEW_TEXT = "The Andean condor has a wingspan of up to 3.3 metres, the largest of any land bird."


def segment_files(index_dir: Path) -> dict[Path, tuple[int, bytes]]:
    return {path: (path.stat().st_mtime_ns, path.read_bytes())
            for path in (index_dir / store.SEGMENTS).rglob("*") if path.is_file()}


def build(corpus: Path, index_dir: Path, retrieval_cfg, *overrides: str) -> Retriever:
    return Retriever.build(corpus, index_dir, retrieval_cfg("retrieval.search.min_evidence=1", *overrides),
                           encoder=CountingEncoder())


def test_adding_a_file_writes_one_new_segment_and_leaves_the_old_one_untouched(corpus, tmp_path, retrieval_cfg):
    index_dir = tmp_path / "index"
    build(corpus, index_dir, retrieval_cfg)
    before = segment_files(index_dir)
    (corpus / "condor.md").write_text(f"---\nurl: https://www.bbc.co.uk/condor\n---\n{NEW_TEXT}\n", encoding="utf-8")
    counting = CountingEncoder()
    retriever = Retriever.build(corpus, index_dir, retrieval_cfg("retrieval.search.min_evidence=1"), encoder=counting)
    after = segment_files(index_dir)
    assert {path: after[path] for path in before} == before  # same bytes, never rewritten (same mtime)
    manifest = json.loads((index_dir / store.MANIFEST).read_text())
    assert [entry["name"] for entry in manifest["segments"]] == ["seg-000001", "seg-000002"]
    added = {path.relative_to(index_dir / store.SEGMENTS).parts[0] for path in set(after) - set(before)}
    assert added == {"seg-000002"}
    assert len(counting.texts) == 1 and retriever.report.files_read == ["condor.md"]
    assert retriever.search(["Andean condor wingspan"], k=3)[0].text == NEW_TEXT


def test_changed_and_removed_sources_are_tombstoned(corpus, tmp_path, retrieval_cfg):
    index_dir = tmp_path / "index"
    first = build(corpus, index_dir, retrieval_cfg)
    notes_id = next(s.source_id for s in first.index.sources.values() if s.path == "notes.txt")
    rates_id = next(s.source_id for s in first.index.sources.values() if s.path == "rates.html")
    (corpus / "notes.txt").unlink()
    html = (corpus / "rates.html").read_text(encoding="utf-8")
    (corpus / "rates.html").write_text(html.replace("25 basis points", "75 basis points"), encoding="utf-8")
    retriever = build(corpus, index_dir, retrieval_cfg)
    manifest = json.loads((index_dir / store.MANIFEST).read_text())
    old, new = manifest["segments"]
    assert old["deleted"] == sorted([notes_id, rates_id]) and new["n_sources"] == 1
    assert retriever.search(["rained in Beijing"], k=5) == []
    (evidence,) = [ev for ev in retriever.search(["central bank basis points"], k=5) if ev.source_id == rates_id]
    assert "75 basis points" in evidence.text
    assert notes_id not in retriever.index.sources and len(retriever.index.sources) == 4


def test_a_reader_keeps_its_snapshot_while_a_writer_adds_and_a_new_reader_sees_it(corpus, tmp_path, retrieval_cfg):
    index_dir = tmp_path / "index"
    build(corpus, index_dir, retrieval_cfg)
    cfg = retrieval_cfg("retrieval.search.min_evidence=1")
    reader = Retriever.open(index_dir, cfg, encoder=CountingEncoder())
    queries = ["Andean condor wingspan", "Fleming penicillin 1928"]
    seen = [reader.search([query], k=5) for query in queries]
    (corpus / "condor.md").write_text(NEW_TEXT, encoding="utf-8")
    (corpus / "fleming.md").unlink()  # its segment keeps living for the old reader, tombstoned for new ones
    build(corpus, index_dir, retrieval_cfg)
    assert [reader.search([query], k=5) for query in queries] == seen
    fresh = Retriever.open(index_dir, cfg, encoder=CountingEncoder())
    assert fresh.search(["Andean condor wingspan"], k=5)[0].text == NEW_TEXT
    assert all(ev.domain != "who.int" for ev in fresh.search(["Fleming penicillin 1928"], k=5))


def test_a_second_writer_gets_a_clear_error(tmp_path):
    with store.writer_lock(tmp_path / "index", wait=False):
        with pytest.raises(store.IndexBusyError, match=r"being written by another process \(pid \d+"):
            with store.writer_lock(tmp_path / "index", wait=False):
                pass
    with store.writer_lock(tmp_path / "index", wait=False):  # released: the next writer goes ahead
        pass


def write_legacy(index: Index, folder: Path, with_title: bool) -> None:
    """What the format-1 code wrote: sources.jsonl, chunks.jsonl with tokens, embeddings.npy, manifest.json."""
    folder.mkdir(parents=True)
    sources = list(index.sources.values())
    by_id = {source.source_id: source for source in sources}
    chunks = list(index.chunks)
    texts = [indexed_text(chunk, by_id[chunk.source_id], with_title) for chunk in chunks]
    (folder / SOURCES).write_text("".join(json.dumps(s.to_dict(), ensure_ascii=False) + "\n" for s in sources))
    (folder / CHUNKS).write_text("".join(json.dumps({**c.to_dict(), "tokens": tokenize(t)}, ensure_ascii=False) + "\n"
                                         for c, t in zip(chunks, texts, strict=True)))
    np.save(folder / EMBEDDINGS, index.embeddings)
    from factlab.retrieval.index import text_hash

    manifest = {key: index.manifest[key] for key in ("encoder", "dim", "settings", "sources_dir", "files")}
    (folder / store.MANIFEST).write_text(json.dumps({
        **manifest, "format": 1, "n_sources": len(sources), "n_chunks": len(chunks),
        "indexed_text_sha256": [text_hash(text) for text in texts]}))


def test_an_old_format_index_migrates_on_open_with_the_same_top5(tmp_path, retrieval_cfg, caplog):
    cfg = retrieval_cfg("retrieval.search.min_evidence=5")
    fresh = Retriever.build(BUNDLED, tmp_path / "fresh", cfg, encoder=CountingEncoder())
    write_legacy(fresh.index, tmp_path / "old", with_title=cfg.index.with_title)
    with caplog.at_level(logging.INFO, logger="factlab.retrieval.index"):
        migrated = Retriever.open(tmp_path / "old", cfg, encoder=CountingEncoder())
    assert "migrated the format-1 index" in caplog.text
    assert not (tmp_path / "old" / CHUNKS).exists() and json.loads((tmp_path / "old" / "manifest.json").read_text())[
        "format"] == store.FORMAT
    queries = [chunk.text[:80] for chunk in list(fresh.index.chunks)[::7]]
    assert len(queries) >= 10
    for query in queries:
        top5 = [ev.chunk_id for ev in fresh.search([query], k=5)]
        assert [ev.chunk_id for ev in migrated.search([query], k=5)] == top5
    again = Retriever.build(BUNDLED, tmp_path / "old", cfg, encoder=CountingEncoder())
    assert again.report.files_read == [] and again.report.n_embedded == 0


def test_a_writer_killed_before_the_manifest_leaves_the_index_as_it_was(corpus, tmp_path, retrieval_cfg):
    index_dir = tmp_path / "index"
    retriever = build(corpus, index_dir, retrieval_cfg)
    queries = ["Fleming penicillin 1928", "central bank interest rate", "长江 全长"]
    before = [retriever.search([query], k=5) for query in queries]
    manifest_bytes = (index_dir / store.MANIFEST).read_bytes()
    # the killed writer: a complete segment and a half-written one on disk, the manifest never replaced
    store.write_segment(index_dir, "seg-000002", sources=[], chunks=[], files=[], tokens=[],
                        vectors=np.zeros((0, 128), dtype=np.float32), digests=[])
    (index_dir / store.SEGMENTS / ".seg-000003.tmp-999").mkdir()
    ((index_dir / store.SEGMENTS / ".seg-000003.tmp-999") / "chunks.jsonl").write_text('{"half": ')
    assert (index_dir / store.MANIFEST).read_bytes() == manifest_bytes
    reopened = Retriever.open(index_dir, retrieval_cfg("retrieval.search.min_evidence=1"), encoder=CountingEncoder())
    assert [reopened.search([query], k=5) for query in queries] == before
    (corpus / "condor.md").write_text(NEW_TEXT, encoding="utf-8")
    after = build(corpus, index_dir, retrieval_cfg)  # the next writer cleans the orphans up
    assert sorted(path.name for path in (index_dir / store.SEGMENTS).iterdir()) == ["seg-000001", "seg-000002"]
    assert after.search(["Andean condor wingspan"], k=3)[0].text == NEW_TEXT


def test_global_idf_scores_like_one_segment(corpus, tmp_path, retrieval_cfg):
    """BM25 over two segments (one IDF summed over both) equals BM25 of a fresh one-segment build where the
    segments' average lengths agree; here the ranking of every chunk for a query is the same."""
    index_dir = tmp_path / "index"
    build(corpus, index_dir, retrieval_cfg)
    (corpus / "condor.md").write_text(NEW_TEXT, encoding="utf-8")
    two = build(corpus, index_dir, retrieval_cfg)
    one = build(corpus, tmp_path / "one", retrieval_cfg)
    assert len(json.loads((index_dir / store.MANIFEST).read_text())["segments"]) == 2
    for query in ("central bank interest rate", "penicillin mould bacteria"):
        tokens = tokenize(query)
        assert np.argsort(-two._bm25.get_scores(tokens)).tolist()[:3] == np.argsort(
            -one._bm25.get_scores(tokens)).tolist()[:3]
