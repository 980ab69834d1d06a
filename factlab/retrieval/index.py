"""The on-disk index: segments of chunks, BM25 and vectors under one manifest (factlab/retrieval/store.py).

Building is incremental: a file whose sha256 (and the ingest settings) did not change is not re-read, and a
chunk whose text was embedded before by the same encoder is not re-embedded. The chunks of new and changed files go
into one new segment; removed and changed sources are tombstoned in the segments that hold them; nothing else is
rewritten, and a build that finds nothing changed writes nothing. An index folder of the old format (sources.jsonl,
chunks.jsonl, embeddings.npy, manifest.json format 1) is migrated once, on open, into one segment.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from factlab.retrieval import store
from factlab.retrieval.encoders import Encoder
from factlab.retrieval.ingest import FileIngest, check_folder, drop_duplicate_ids, file_fingerprint, ingest_file
from factlab.retrieval.records import Chunk, IngestIssue, Source
from factlab.retrieval.tiers import TierTables
from factlab.retrieval.tokenizer import tokenize

logger = logging.getLogger(__name__)

LEGACY_FORMAT = 1  # the whole-folder format before segments; read once, to migrate it
MANIFEST = store.MANIFEST
SOURCES = "sources.jsonl"
CHUNKS = "chunks.jsonl"
EMBEDDINGS = "embeddings.npy"


def text_hash(text: str) -> str:
    """sha256 of the text a chunk is indexed under: the key under which its embedding is reused.

    >>> text_hash("abc")[:12]
    'ba7816bf8f01'
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def indexed_text(chunk: Chunk, source: Source, with_title: bool) -> str:
    """What BM25 and the encoder see for a chunk: the source title on its own line, then the chunk.

    The title carries what chunk text often leaves implicit (the case name, the company, the year); it is
    left out when the chunk already starts with it. Evidence text is always the chunk alone.

    >>> source = Source("s", "a.md", title="Okonjo v Harrowgate (2024)", tier=1)
    >>> indexed_text(Chunk("s#p1-c1", "s", 1, 1, 0, 16, "The court ruled."), source, with_title=True)
    'Okonjo v Harrowgate (2024)\\nThe court ruled.'
    """
    if not with_title or not source.title or chunk.text.startswith(source.title):
        return chunk.text
    return f"{source.title}\n{chunk.text}"


class Index(store.SegmentedIndex):
    """A read-only snapshot of an index folder: `sources`, `chunks`, `embeddings`, `manifest`, memory-mapped."""

    @classmethod
    def load(cls, index_dir: str | Path) -> Index:
        """Open the index folder as it is now; a writer that replaces the manifest later does not change this snapshot.

        Raises:
            FileNotFoundError: no index in the folder.
            ValueError: the folder holds an index format this code does not read.
        """
        folder = Path(index_dir)
        for _ in range(20):
            manifest = store.read_manifest(folder)
            if manifest is None:
                raise FileNotFoundError(
                    f"no index at {folder.resolve()} ({MANIFEST} missing); build it with Retriever.build(sources_dir, "
                    f"{folder}, cfg)"
                )
            if manifest["format"] == LEGACY_FORMAT:
                with store.writer_lock(folder, wait=True):
                    migrate_legacy(folder)
                continue
            if manifest["format"] != store.FORMAT:
                raise ValueError(
                    f"{folder / MANIFEST}: index format {manifest['format']}, this code reads {store.FORMAT} (and "
                    f"migrates {LEGACY_FORMAT}); rebuild it with Retriever.build"
                )
            try:
                return cls(folder, manifest, store.open_segments(folder, manifest))
            except store.SegmentsGone:
                continue  # a writer replaced the manifest and dropped a segment meanwhile: read the new one
        raise RuntimeError(f"index at {folder.resolve()} kept changing while it was opened (20 tries); try again")


def _read_legacy(folder: Path) -> tuple[dict, list[Source], list[Chunk], list[list[str]], np.ndarray]:
    """The four files of a format-1 index folder, checked against each other."""
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    sources = [Source.from_dict(json.loads(line))
               for line in (folder / SOURCES).read_text(encoding="utf-8").splitlines()]
    chunks, tokens = [], []
    for line in (folder / CHUNKS).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        chunks.append(Chunk.from_dict(row))
        tokens.append(row["tokens"])
    embeddings = np.load(folder / EMBEDDINGS)
    if len(embeddings) != len(chunks) or len(chunks) != manifest["n_chunks"]:
        raise ValueError(
            f"index at {folder.resolve()} is inconsistent: {len(chunks)} chunks, {len(embeddings)} embeddings, "
            f"manifest says {manifest['n_chunks']} (an interrupted build?); rebuild it"
        )
    return manifest, sources, chunks, tokens, embeddings


def migrate_legacy(folder: Path) -> None:
    """Rewrite a format-1 index folder as one segment + a format-2 manifest, then delete the old files.

    The caller holds the writer lock. Nothing is re-embedded or re-tokenised: rows keep their order, so search gives
    the same results as a fresh build.
    """
    manifest = store.read_manifest(folder)
    if manifest is None or manifest["format"] != LEGACY_FORMAT:
        return  # another process migrated it while this one waited for the lock
    old, sources, chunks, tokens, embeddings = _read_legacy(folder)
    by_id = {source.source_id: source for source in sources}
    name = "seg-000001"
    entry = store.write_segment(
        folder, name, sources=sources, chunks=chunks, files=[by_id[chunk.source_id].path for chunk in chunks],
        tokens=tokens, vectors=embeddings.reshape(len(chunks), int(old["dim"])),
        digests=[bytes.fromhex(digest) for digest in old["indexed_text_sha256"]],
    )
    fields = ("encoder", "dim", "settings", "sources_dir", "n_sources", "n_chunks", "files")
    store.write_manifest(folder, {"format": store.FORMAT, "generation": 1, **{key: old[key] for key in fields},
                                  "segments": [entry] if chunks or sources else []})
    for legacy in (SOURCES, CHUNKS, EMBEDDINGS):
        (folder / legacy).unlink(missing_ok=True)
    logger.info("migrated the format-%d index at %s to segments (%d sources, %d chunks, one segment)",
                LEGACY_FORMAT, folder, len(sources), len(chunks))


@dataclass
class BuildReport:
    """What a build did: counts, the files re-read, the chunks embedded, the issues, the time taken."""

    n_sources: int = 0
    n_chunks: int = 0
    files_read: list[str] = field(default_factory=list)  # new or changed files (unchanged ones are reused)
    files_removed: list[str] = field(default_factory=list)  # in the previous index, gone from the folder
    n_embedded: int = 0  # chunks sent to the encoder
    n_reused: int = 0  # chunks whose stored embedding was reused
    issues: list[IngestIssue] = field(default_factory=list)
    seconds: float = 0.0


def build_index(
    sources_dir: str | Path,
    index_dir: str | Path,
    *,
    encoder: Encoder,
    tiers: TierTables,
    max_chars: int,
    default_vertical: str,
    with_title: bool,
    embed_batch_size: int,
    progress: bool,
) -> tuple[Index, BuildReport]:
    """Ingest `sources_dir` into the index folder `index_dir`, reusing what an earlier build there already did.

    Args:
        sources_dir: folder of source files (see `factlab.retrieval.ingest`).
        index_dir: index folder; created when missing; may sit inside `sources_dir` (it is skipped).
        encoder: the dense encoder; its `name` must match the stored one for embeddings to be reused.
        tiers: tier tables.
        max_chars: chunk size bound.
        default_vertical: vertical of sources whose metadata names none.
        with_title: index each chunk under its source title + its text (see `indexed_text`).
        embed_batch_size: chunks per encoder call (one progress-bar step).
        progress: show a tqdm bar while embedding.

    Returns:
        The index (also saved) and a report of what was re-read and re-embedded.

    Concurrent builds of one folder take turns (the writer lock, waited for): the second finds the first one's index
    and reuses every chunk of it. Readers never wait: they keep the snapshot they opened.
    """
    with store.writer_lock(Path(index_dir), wait=True):
        return _build_index(sources_dir, index_dir, encoder=encoder, tiers=tiers, max_chars=max_chars,
                            default_vertical=default_vertical, with_title=with_title,
                            embed_batch_size=embed_batch_size, progress=progress)


def _previous(folder: Path) -> Index | None:
    """The index already in `folder` (migrated when it is of the old format), or None when there is none or it cannot
    be read (then everything is rebuilt). The caller holds the writer lock."""
    try:
        manifest = store.read_manifest(folder)
        if manifest is None:
            return None
        if manifest["format"] == LEGACY_FORMAT:
            migrate_legacy(folder)
            manifest = store.read_manifest(folder)
        if manifest["format"] != store.FORMAT:
            raise ValueError(f"index format {manifest['format']}")
        return Index(folder, manifest, store.open_segments(folder, manifest))
    except (ValueError, KeyError, OSError, json.JSONDecodeError, store.SegmentsGone) as exc:
        logger.warning("ignoring the unreadable index at %s (%s); rebuilding from scratch", folder, exc)
        return None


def _build_index(sources_dir: str | Path, index_dir: str | Path, *, encoder: Encoder, tiers: TierTables,
                 max_chars: int, default_vertical: str, with_title: bool, embed_batch_size: int,
                 progress: bool) -> tuple[Index, BuildReport]:
    started = time.perf_counter()
    root, folder = Path(sources_dir), Path(index_dir)
    files = check_folder(root, exclude=[folder])
    settings = {
        "max_chars": max_chars,
        "default_vertical": default_vertical,
        "with_title": with_title,
        "tiers": tiers.fingerprint(),
    }
    old = _previous(folder)
    reusable = old is not None and old.manifest["settings"] == settings and old.manifest["encoder"] == encoder.name
    old_files = old.manifest["files"] if reusable else {}
    fingerprints = {path: file_fingerprint(root, path) for path in files}
    unchanged = {path for path in files if path in old_files and old_files[path]["sha256"] == fingerprints[path]
                 and not old_files[path]["dropped_duplicates"]}
    # every live source of an unchanged file, with the segment holding it: they take part in the duplicate-id check
    stored: dict[str, list[tuple[Source, int]]] = {}
    if old is not None and reusable:
        for number, segment in enumerate(old.segments):
            for row in range(segment.n_sources):
                source = segment.source(row)
                if source.path in unchanged and source.source_id not in segment.deleted:
                    stored.setdefault(source.path, []).append((source, number))
    report = BuildReport()
    results: list[tuple[str, FileIngest]] = []
    file_entries: dict[str, dict] = {}
    for path in files:
        if path in unchanged:
            result = FileIngest([(source, []) for source, _ in stored.get(path, [])],
                                [IngestIssue(**issue) for issue in old_files[path]["issues"]])
        else:
            result = ingest_file(root, path, max_chars=max_chars, tiers=tiers, default_vertical=default_vertical)
            report.files_read.append(path)
        results.append((path, result))
        file_entries[path] = {"sha256": fingerprints[path], "issues": [issue.to_dict() for issue in result.issues]}
    report.files_removed = sorted(set(old.manifest["files"]) - set(files)) if old is not None else []
    sources, _, issues = drop_duplicate_ids(results)
    # a source dropped as a duplicate may be kept next time (its rival deleted), so such files are always re-read
    kept = {(source.path, source.line) for source in sources}
    for path, result in results:
        dropped = sum((source.path, source.line) not in kept for source, _ in result.entries)
        file_entries[path]["dropped_duplicates"] = dropped
    new_sources = [source for source in sources if source.path not in unchanged]
    chunks_of = {source.source_id: chunks for path, result in results if path not in unchanged
                 for source, chunks in result.entries}
    new_chunks = [chunk for source in new_sources for chunk in chunks_of[source.source_id]]
    segments = _tombstone(old, kept, unchanged) if old is not None and reusable else []
    generation = old.manifest["generation"] + 1 if old is not None else 1
    changed = old is None or not reusable or bool(new_sources) or segments != old.manifest["segments"]
    if not changed and file_entries == old.manifest["files"]:
        report.n_sources, report.n_chunks, report.issues = len(sources), len(old.chunks), issues
        report.n_reused = len(old.chunks)
        report.seconds = time.perf_counter() - started
        logger.info("index %s: nothing changed (%d sources, %d chunks)", folder, len(sources), len(old.chunks))
        return old, report
    if new_sources:
        by_id = {source.source_id: source for source in new_sources}
        texts = [indexed_text(chunk, by_id[chunk.source_id], with_title) for chunk in new_chunks]
        embeddings = _embed(texts, old, encoder, embed_batch_size, progress, report)
        entry = store.write_segment(
            folder, f"seg-{generation:06d}", sources=new_sources, chunks=new_chunks,
            files=[by_id[chunk.source_id].path for chunk in new_chunks], tokens=[tokenize(text) for text in texts],
            vectors=embeddings, digests=[hashlib.sha256(text.encode("utf-8")).digest() for text in texts],
        )
        segments.append(entry)
    manifest = {
        "format": store.FORMAT,
        "generation": generation,
        "encoder": encoder.name,
        "dim": _dim(old, encoder, segments, folder),
        "settings": settings,
        "sources_dir": str(root.resolve()),
        "n_sources": len(sources),
        "n_chunks": sum(entry["n_chunks"] for entry in segments),  # stored rows, tombstoned ones included
        "files": file_entries,
        "segments": segments,
    }
    store.write_manifest(folder, manifest)
    _remove_orphans(folder, {entry["name"] for entry in segments})
    index = Index.load(folder)
    report.n_sources, report.n_chunks, report.issues = len(sources), len(index.chunks), issues
    report.n_reused = len(index.chunks) - report.n_embedded
    report.seconds = time.perf_counter() - started
    logger.info(
        "index %s: %d sources, %d chunks in %d segments; %d files re-read, %d removed; %d chunks embedded, %d reused; "
        "%d issues", folder, len(sources), len(index.chunks), len(segments), len(report.files_read),
        len(report.files_removed), report.n_embedded, report.n_reused, len(issues),
    )  # fmt: skip
    return index, report


def _tombstone(old: Index, kept: set[tuple[str, int | None]], unchanged: set[str]) -> list[dict]:
    """The old segments' manifest entries with the sources no longer live added to their tombstones; segments with
    no live source left are dropped."""
    entries = []
    for segment, entry in zip(old.segments, old.manifest["segments"], strict=True):
        deleted = set(entry["deleted"])
        for row in range(segment.n_sources):
            source = segment.source(row)
            if source.path not in unchanged or (source.path, source.line) not in kept:
                deleted.add(source.source_id)
        if len(deleted) < segment.n_sources:
            entries.append({**entry, "deleted": sorted(deleted)})
    return entries


def _dim(old: Index | None, encoder: Encoder, segments: list[dict], folder: Path) -> int:
    """The embedding width: from the newest segment written, else the old manifest, else 0 (an empty index)."""
    for entry in reversed(segments):
        shape = np.load(folder / store.SEGMENTS / entry["name"] / "vectors.npy", mmap_mode="r").shape
        if shape[0]:
            return int(shape[1])
    return int(old.manifest["dim"]) if old is not None and old.manifest["encoder"] == encoder.name else 0


def _remove_orphans(folder: Path, live: set[str]) -> None:
    """Delete segment folders no manifest lists any more: dropped segments and a killed writer's leftovers. Readers
    that mapped one keep their mapping (the files go when they close it)."""
    root = folder / store.SEGMENTS
    if not root.exists():
        return
    for path in root.iterdir():
        if path.name not in live:
            shutil.rmtree(path, ignore_errors=True)


def _embed(texts: list[str], old: Index | None, encoder: Encoder, batch_size: int, progress: bool,
           report: BuildReport) -> np.ndarray:
    """One embedding row per indexed text: reused from `old` when the same encoder embedded it, else encoded."""
    digests = [hashlib.sha256(text.encode("utf-8")).digest() for text in texts]
    cached: dict[bytes, tuple[int, int]] = {}
    if old is not None and old.manifest["encoder"] == encoder.name:
        wanted = set(digests)
        for number, segment in enumerate(old.segments):
            for row in np.flatnonzero(np.isin(segment.text_sha, np.asarray(list(wanted), dtype="S32"))).tolist():
                cached.setdefault(bytes(segment.text_sha[row]), (number, row))
    missing = sorted({digest: row for row, digest in enumerate(digests) if digest not in cached}.values())
    computed: dict[bytes, np.ndarray] = {}
    batches = range(0, len(missing), batch_size)
    for begin in tqdm(batches, desc=f"embedding {len(missing)} chunks", unit="batch", disable=not progress):
        rows = missing[begin : begin + batch_size]
        vectors = np.asarray(encoder.encode([texts[row] for row in rows]), dtype=np.float32)
        computed.update((digests[row], vector) for row, vector in zip(rows, vectors, strict=True))
    report.n_embedded = len(missing)
    vectors = [computed[digest] if digest in computed else old.segments[cached[digest][0]].vectors[cached[digest][1]]
               for digest in digests]
    if not vectors:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack(vectors).astype(np.float32)
