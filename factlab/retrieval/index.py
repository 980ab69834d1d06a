"""The on-disk index: a folder with sources.jsonl, chunks.jsonl (with BM25 tokens), embeddings.npy, manifest.json.

Building is incremental: a file whose sha256 (and the ingest settings) did not change is not re-read, and a
chunk whose text was embedded before by the same encoder is not re-embedded. Deleted files drop out. Every
build rewrites the folder from scratch (each file replaced atomically), so re-building is idempotent.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from factlab.atomic import atomic_writer, build_lock
from factlab.retrieval.encoders import Encoder
from factlab.retrieval.ingest import FileIngest, check_folder, drop_duplicate_ids, file_fingerprint, ingest_file
from factlab.retrieval.records import Chunk, IngestIssue, Source
from factlab.retrieval.tiers import TierTables
from factlab.retrieval.tokenizer import tokenize

logger = logging.getLogger(__name__)

INDEX_FORMAT = 1
MANIFEST = "manifest.json"
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


@dataclass
class Index:
    """Sources, chunks (with their BM25 tokens) and one embedding row per chunk, as stored in an index folder."""

    sources: dict[str, Source]
    chunks: list[Chunk]
    tokens: list[list[str]]
    embeddings: np.ndarray
    manifest: dict

    @classmethod
    def load(cls, index_dir: str | Path) -> Index:
        """Read an index folder written by `build_index`, waiting while another process builds it (the build lock),
        so the four files are read as one set.

        Raises:
            FileNotFoundError: the folder or one of its files is missing.
            ValueError: the files disagree with each other or come from another index format.
        """
        with build_lock(Path(index_dir)):
            return cls._read(Path(index_dir))

    @classmethod
    def _read(cls, folder: Path) -> Index:
        manifest_path = folder / MANIFEST
        if not manifest_path.exists():
            raise FileNotFoundError(
                f"no index at {folder.resolve()} ({MANIFEST} missing); build it with Retriever.build(sources_dir, "
                f"{folder}, cfg)"
            )
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest["format"] != INDEX_FORMAT:
            raise ValueError(
                f"{manifest_path}: index format {manifest['format']}, this code reads {INDEX_FORMAT}; rebuild it"
            )
        sources = {}
        for line in (folder / SOURCES).read_text(encoding="utf-8").splitlines():
            source = Source.from_dict(json.loads(line))
            sources[source.source_id] = source
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
        return cls(sources, chunks, tokens, embeddings, manifest)

    def save(self, index_dir: str | Path) -> None:
        """Write the index folder; the manifest goes last so a crash leaves the old manifest -> a load error."""
        folder = Path(index_dir)
        folder.mkdir(parents=True, exist_ok=True)
        _atomic_write(folder / EMBEDDINGS, lambda fh: np.save(fh, self.embeddings), binary=True)
        _atomic_write(
            folder / SOURCES,
            lambda fh: fh.writelines(
                json.dumps(source.to_dict(), ensure_ascii=False) + "\n" for source in self.sources.values()
            ),
        )
        _atomic_write(
            folder / CHUNKS,
            lambda fh: fh.writelines(
                json.dumps({**chunk.to_dict(), "tokens": tokens}, ensure_ascii=False) + "\n"
                for chunk, tokens in zip(self.chunks, self.tokens, strict=True)
            ),
        )
        _atomic_write(folder / MANIFEST, lambda fh: json.dump(self.manifest, fh, ensure_ascii=False, indent=1))


def _atomic_write(path: Path, write, binary: bool = False) -> None:
    with atomic_writer(path, binary=binary) as fh:
        write(fh)


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


def _previous(index_dir: Path) -> Index | None:
    """The index already in `index_dir`, or None when there is none or it cannot be read (then rebuild all)."""
    if not (index_dir / MANIFEST).exists():
        return None
    try:
        return Index._read(index_dir)  # the caller holds the build lock
    except (ValueError, KeyError, OSError, json.JSONDecodeError) as exc:
        logger.warning("ignoring the unreadable index at %s (%s); rebuilding from scratch", index_dir, exc)
        return None


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

    Concurrent builds of one folder take turns (an inter-process lock): the second finds the first one's index and
    reuses every chunk of it.
    """
    with build_lock(Path(index_dir)):
        return _build_index(sources_dir, index_dir, encoder=encoder, tiers=tiers, max_chars=max_chars,
                            default_vertical=default_vertical, with_title=with_title,
                            embed_batch_size=embed_batch_size, progress=progress)


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
    old_files = old.manifest["files"] if old is not None and old.manifest["settings"] == settings else {}
    old_by_path: dict[str, list[tuple[Source, list[Chunk], list[list[str]]]]] = {}
    if old is not None:
        chunk_rows: dict[str, list[int]] = {}
        for row, chunk in enumerate(old.chunks):
            chunk_rows.setdefault(chunk.source_id, []).append(row)
        for source in old.sources.values():
            rows = chunk_rows.get(source.source_id, [])
            old_by_path.setdefault(source.path, []).append(
                (source, [old.chunks[row] for row in rows], [old.tokens[row] for row in rows])
            )
    report = BuildReport()
    results: list[tuple[str, FileIngest]] = []
    file_entries: dict[str, dict] = {}
    token_cache: dict[str, list[str]] = {}
    for path in files:
        fingerprint = file_fingerprint(root, path)
        previous = old_files.get(path)
        if previous is not None and previous["sha256"] == fingerprint and not previous["dropped_duplicates"]:
            stored = old_by_path.get(path, [])
            result = FileIngest(
                [(source, chunks) for source, chunks, _ in stored],
                [IngestIssue(**issue) for issue in previous["issues"]],
            )
            for _, chunks, tokens in stored:
                token_cache.update((chunk.chunk_id, toks) for chunk, toks in zip(chunks, tokens, strict=True))
        else:
            result = ingest_file(root, path, max_chars=max_chars, tiers=tiers, default_vertical=default_vertical)
            report.files_read.append(path)
        results.append((path, result))
        file_entries[path] = {"sha256": fingerprint, "issues": [issue.to_dict() for issue in result.issues]}
    report.files_removed = sorted(set(old.manifest["files"]) - set(files)) if old is not None else []
    sources, chunks, issues = drop_duplicate_ids(results)
    # a source dropped as a duplicate may be kept next time (its rival deleted), so such files are always re-read
    kept = {(source.path, source.line) for source in sources}
    for path, result in results:
        dropped = sum((source.path, source.line) not in kept for source, _ in result.entries)
        file_entries[path]["dropped_duplicates"] = dropped
    by_id = {source.source_id: source for source in sources}
    texts = [indexed_text(chunk, by_id[chunk.source_id], with_title) for chunk in chunks]
    tokens = [token_cache.get(chunk.chunk_id) or tokenize(text) for chunk, text in zip(chunks, texts, strict=True)]
    embeddings = _embed(texts, old, encoder, embed_batch_size, progress, report)
    manifest = {
        "format": INDEX_FORMAT,
        "encoder": encoder.name,
        "dim": int(embeddings.shape[1]),
        "settings": settings,
        "sources_dir": str(root.resolve()),
        "n_sources": len(sources),
        "n_chunks": len(chunks),
        "indexed_text_sha256": [text_hash(text) for text in texts],
        "files": file_entries,
    }
    index = Index(by_id, chunks, tokens, embeddings, manifest)
    index.save(folder)
    report.n_sources, report.n_chunks, report.issues = len(sources), len(chunks), issues
    report.seconds = time.perf_counter() - started
    logger.info(
        "index %s: %d sources, %d chunks; %d files re-read, %d removed; %d chunks embedded, %d reused; %d issues",
        folder, len(sources), len(chunks), len(report.files_read), len(report.files_removed), report.n_embedded,
        report.n_reused, len(issues),
    )  # fmt: skip
    return index, report


def _embed(
    texts: list[str], old: Index | None, encoder: Encoder, batch_size: int, progress: bool, report: BuildReport
) -> np.ndarray:
    """One embedding row per indexed text: reused from `old` when the same encoder embedded it, else encoded."""
    cached: dict[str, np.ndarray] = {}
    if old is not None and old.manifest["encoder"] == encoder.name:
        for row, digest in enumerate(old.manifest["indexed_text_sha256"]):
            cached[digest] = old.embeddings[row]
    digests = [text_hash(text) for text in texts]
    missing = sorted({digest: row for row, digest in enumerate(digests) if digest not in cached}.values())
    computed: dict[str, np.ndarray] = {}
    batches = range(0, len(missing), batch_size)
    for begin in tqdm(batches, desc=f"embedding {len(missing)} chunks", unit="batch", disable=not progress):
        rows = missing[begin : begin + batch_size]
        vectors = np.asarray(encoder.encode([texts[row] for row in rows]), dtype=np.float32)
        computed.update((digests[row], vector) for row, vector in zip(rows, vectors, strict=True))
    report.n_embedded, report.n_reused = len(missing), len(texts) - len(missing)
    vectors = [computed[digest] if digest in computed else cached[digest] for digest in digests]
    if not vectors:
        dim = old.embeddings.shape[1] if old is not None and old.manifest["encoder"] == encoder.name else 0
        return np.zeros((0, dim), dtype=np.float32)
    return np.stack(vectors).astype(np.float32)
