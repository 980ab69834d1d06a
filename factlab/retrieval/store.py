"""The local index on disk: immutable segments, memory-mapped by readers, listed by one atomically replaced manifest.

    index_dir/manifest.json             format 2: encoder, settings, files, the live segments and their tombstones
    index_dir/segments/seg-000003/      one build's new chunks: chunks.jsonl + sources.jsonl (with .npy byte offsets),
                                        per-chunk arrays (tier, file, text keys), vectors.npy (float32), bm25/ (bm25s
                                        CSC matrix), tokens.npy (BM25 token ids, for coverage), hnsw-t<tier>.usearch
    index_dir/.writer.lock              fcntl.flock: one writer at a time

A build writes the chunks of new and changed files into ONE new segment (a temporary folder renamed into place), then
the manifest with `os.replace`; it never rewrites another segment. A source that is removed, changed or dropped as a
duplicate is tombstoned: its id is listed under the segment that holds it, and readers skip it. A segment whose
sources are all dead leaves the manifest and its folder is deleted. A reader reads the manifest once and maps the
segments it lists, so a writer never disturbs it (a segment deleted under a reader that has not mapped it yet makes
the reader re-read the manifest). A kill before the manifest is replaced leaves the index as it was; the next writer
deletes the orphan folder.

Scoring across segments: BM25 with one IDF over all segments (document frequencies summed at query time; each
segment's stored bm25s scores carry its own IDF, rescaled per query token), each segment keeping its own average
length. Tombstoned chunks still count in N and df until their segment leaves the manifest. Dense search is exact
(float32 memmap) in segments under `HNSW_MIN_ROWS` chunks and usearch HNSW (int8) above, one graph per tier so the
tier filter is exact.

>>> text_key("The  Court ruled.") == text_key("the court ruled")
True
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import json
import logging
import math
import mmap
import os
import shutil
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from factlab.atomic import atomic_writer
from factlab.retrieval.records import Chunk, Source
from factlab.schema import normalise_text

logger = logging.getLogger(__name__)

FORMAT = 2
MANIFEST = "manifest.json"
SEGMENTS = "segments"
LOCK = ".writer.lock"
# Exact float32 search of a 100k-chunk segment measured 24 ms p50 / 32 ms p95 per query here (2 cores); HNSW building
# costs ~1.6 ms per vector on the same cores, so graphs are built only where exact search would pass ~50 ms.
HNSW_MIN_ROWS = 200_000
BM25_K1, BM25_B = 1.5, 0.75  # rank_bm25's and bm25s's defaults


class IndexBusyError(RuntimeError):
    """Another process holds the index's writer lock."""


def text_key(text: str) -> int:
    """64-bit key of a chunk's normalised text: chunks with equal keys are one dedup group."""
    digest = hashlib.blake2b(normalise_text(text).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def lucene_idf(n_docs: int | np.ndarray, df: int | np.ndarray):
    """BM25 IDF as bm25s (Lucene) computes it: log(1 + (N - df + 0.5) / (df + 0.5)), always positive.

    >>> round(float(lucene_idf(4, 2)), 4)
    0.6931
    """
    return np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


@contextlib.contextmanager
def writer_lock(folder: str | Path, wait: bool) -> Iterator[None]:
    """Hold the index's writer lock (`<folder>/.writer.lock`, fcntl.flock) for the block.

    Args:
        folder: the index folder (created when missing).
        wait: block until the other writer is done; False = raise at once.

    Raises:
        IndexBusyError: `wait` is False and another process is writing the index.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise IndexBusyError(
                f"index {folder.resolve()} is being written by another process (pid {holder}, lock {path}); "
                "wait for that build to finish, or open the index read-only with Retriever.open"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def read_manifest(folder: Path) -> dict | None:
    """The manifest of `folder`, or None when there is none."""
    path = folder / MANIFEST
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def write_manifest(folder: Path, manifest: dict) -> None:
    """Replace the manifest atomically (unique temp file, fsync, os.replace): readers see the old one or the new."""
    with atomic_writer(folder / MANIFEST) as fh:
        json.dump(manifest, fh, ensure_ascii=False, indent=1)


# writing ------------------------------------------------------------------------------------------------------------


def _write_jsonl(path: Path, rows) -> None:
    """JSON lines and, beside them, `<name>.offsets.npy`: the byte offset of every line and the end (memmap access)."""
    offsets = [0]
    with open(path, "wb") as fh:
        for row in rows:
            line = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
            fh.write(line)
            offsets.append(offsets[-1] + len(line))
    np.save(path.with_suffix(".offsets.npy"), np.asarray(offsets, dtype=np.int64))


def write_segment(folder: Path, name: str, *, sources: list[Source], chunks: list[Chunk], files: list[str],
                  tokens: list[list[str]], vectors: np.ndarray, digests: list[bytes], threads: int = 0) -> dict:
    """Write one immutable segment under `folder/segments/name` (a temp folder renamed into place).

    Args:
        folder: the index folder.
        name: the segment name (unique in this index).
        sources: the segment's sources; every chunk's source must be among them.
        chunks: its chunks, in index order (files in path order, each file's chunks in reading order).
        files: the relative path of the file every chunk came from (same length as `chunks`).
        tokens: the BM25 tokens of every chunk's indexed text.
        vectors: one float32 embedding row per chunk.
        digests: sha256 (32 bytes) of every chunk's indexed text: the key embeddings are reused under.
        threads: usearch build threads (0 = all cores).

    Returns:
        The segment's manifest entry: name, counts, an empty tombstone list.
    """
    import bm25s

    final = folder / SEGMENTS / name
    tmp = folder / SEGMENTS / f".{name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    n = len(chunks)
    source_row = {source.source_id: row for row, source in enumerate(sources)}
    _write_jsonl(tmp / "sources.jsonl", (source.to_dict() for source in sources))
    _write_jsonl(tmp / "chunks.jsonl", (chunk.to_dict() for chunk in chunks))
    ids = np.asarray([source.source_id.encode("utf-8") for source in sources], dtype=np.bytes_)
    order = np.argsort(ids, kind="stable") if len(ids) else np.zeros(0, dtype=np.int64)
    np.save(tmp / "source_ids.npy", ids[order] if len(ids) else np.zeros(0, dtype="S1"))
    np.save(tmp / "source_order.npy", order.astype(np.int32))
    chunk_source = np.asarray([source_row[chunk.source_id] for chunk in chunks], dtype=np.int32)
    tiers = np.asarray([source.tier for source in sources], dtype=np.int8)
    np.save(tmp / "chunk_source.npy", chunk_source)
    np.save(tmp / "tiers.npy", tiers[chunk_source] if n else np.zeros(0, dtype=np.int8))
    file_names = sorted(set(files))
    file_row = {path: row for row, path in enumerate(file_names)}
    (tmp / "files.json").write_text(json.dumps(file_names, ensure_ascii=False), encoding="utf-8")
    np.save(tmp / "chunk_file.npy", np.asarray([file_row[path] for path in files], dtype=np.int32))
    np.save(tmp / "text_keys.npy", np.asarray([text_key(chunk.text) for chunk in chunks], dtype=np.uint64))
    np.save(tmp / "text_sha.npy", np.asarray(digests, dtype="S32") if n else np.zeros(0, dtype="S32"))
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    np.save(tmp / "vectors.npy", vectors)
    vocab: dict[str, int] = {}
    token_ids = [[vocab.setdefault(token, len(vocab)) for token in doc] for doc in tokens]
    flat = np.fromiter((i for doc in token_ids for i in doc), dtype=np.int32)
    np.save(tmp / "tokens.npy", flat)
    np.save(tmp / "token_offsets.npy", np.cumsum([0] + [len(doc) for doc in token_ids], dtype=np.int64))
    df = np.zeros(len(vocab), dtype=np.int64)
    for doc in token_ids:
        df[list(set(doc))] += 1
    np.save(tmp / "df.npy", df)
    if vocab:
        retriever = bm25s.BM25(k1=BM25_K1, b=BM25_B)
        retriever.index((token_ids, dict(vocab)), show_progress=False)
        retriever.save(str(tmp / "bm25"))
    if n >= HNSW_MIN_ROWS:
        _write_graphs(tmp, vectors, tiers[chunk_source], threads)
    if final.exists():  # an orphan of a killed writer (never in a manifest): the lock holder may remove it
        shutil.rmtree(final)
    os.replace(tmp, final)
    return {"name": name, "n_chunks": n, "n_sources": len(sources), "deleted": []}


def _write_graphs(folder: Path, vectors: np.ndarray, tiers: np.ndarray, threads: int) -> None:
    """One usearch HNSW graph (cosine, int8) per tier present, keys = segment rows."""
    from usearch.index import Index as Graph

    for tier in np.unique(tiers).tolist():
        rows = np.flatnonzero(tiers == tier)
        graph = Graph(ndim=vectors.shape[1], metric="cos", dtype="i8", connectivity=16, expansion_add=128)
        graph.add(rows.astype(np.uint64), vectors[rows], threads=threads)
        graph.save(str(folder / f"hnsw-t{tier}.usearch"))


# reading ------------------------------------------------------------------------------------------------------------


class Segment:
    """One segment, memory-mapped: rows are the segment's chunks; `live` is False for tombstoned ones."""

    def __init__(self, path: Path, deleted: set[str]):
        self.path = path
        load = functools.partial(np.load, mmap_mode="r")
        self.chunk_offsets = load(path / "chunks.offsets.npy")
        self.source_offsets = load(path / "sources.offsets.npy")
        self._chunk_blob = _map(path / "chunks.jsonl")
        self._source_blob = _map(path / "sources.jsonl")
        self.source_ids = load(path / "source_ids.npy")
        self.source_order = load(path / "source_order.npy")
        self.chunk_source = load(path / "chunk_source.npy")
        self.tiers = load(path / "tiers.npy")
        self.files = json.loads((path / "files.json").read_text(encoding="utf-8"))
        self.chunk_file = load(path / "chunk_file.npy")
        self.text_keys = load(path / "text_keys.npy")
        self.text_sha = load(path / "text_sha.npy")
        self.vectors = load(path / "vectors.npy")
        self.tokens = load(path / "tokens.npy")
        self.token_offsets = load(path / "token_offsets.npy")
        self.df = load(path / "df.npy")
        self.n = len(self.chunk_source)
        self.bm25 = None
        self.vocab: dict[str, int] = {}
        if (path / "bm25").exists():
            import bm25s

            self.bm25 = bm25s.BM25.load(str(path / "bm25"), mmap=True)
            self.vocab = {token: i for token, i in self.bm25.vocab_dict.items() if i < len(self.df)}
        self.graphs = {}
        for graph_path in sorted(path.glob("hnsw-t*.usearch")):
            from usearch.index import Index as Graph

            self.graphs[int(graph_path.stem.split("-t")[1])] = Graph.restore(str(graph_path), view=True)
        self.deleted = set(deleted)
        dead_sources = [row for row in (self.find_source(sid) for sid in self.deleted) if row is not None]
        self.live = ~np.isin(self.chunk_source, np.asarray(dead_sources, dtype=np.int32))
        self.live_sources = self.n_sources - len(dead_sources)

    @property
    def n_sources(self) -> int:
        return len(self.source_order)

    @functools.cached_property
    def inverse_vocab(self) -> list[str]:
        words = [""] * len(self.vocab)
        for token, i in self.vocab.items():
            words[i] = token
        return words

    def chunk(self, row: int) -> Chunk:
        begin, end = int(self.chunk_offsets[row]), int(self.chunk_offsets[row + 1])
        return Chunk.from_dict(json.loads(self._chunk_blob[begin:end]))

    def source(self, row: int) -> Source:
        begin, end = int(self.source_offsets[row]), int(self.source_offsets[row + 1])
        return Source.from_dict(json.loads(self._source_blob[begin:end]))

    def find_source(self, source_id: str) -> int | None:
        """The segment row of `source_id` (binary search in the sorted ids), or None."""
        key = source_id.encode("utf-8")
        at = int(np.searchsorted(self.source_ids, key))
        if at < len(self.source_ids) and self.source_ids[at] == key:
            return int(self.source_order[at])
        return None

    def token_ids(self, row: int) -> np.ndarray:
        return self.tokens[self.token_offsets[row] : self.token_offsets[row + 1]]

    def bm25_scores(self, tokens: list[str], global_idf: Mapping[str, float]) -> np.ndarray | None:
        """BM25 of every segment row for the query tokens (repeats count again), under the global IDF."""
        if self.bm25 is None:
            return None
        data, indices, indptr = self.bm25.scores["data"], self.bm25.scores["indices"], self.bm25.scores["indptr"]
        parts, weights = [], []
        for token, repeats in Counter(tokens).items():  # a repeated token counts again: its weight times, read once
            i = self.vocab.get(token)
            if i is None:
                continue
            begin, end = int(indptr[i]), int(indptr[i + 1])
            parts.append((begin, end))
            weights.append(repeats * global_idf[token] / float(lucene_idf(self.n, int(self.df[i]))))
        if not parts:
            return None
        rows = np.concatenate([indices[begin:end] for begin, end in parts])
        values = np.concatenate([data[begin:end] * weight for (begin, end), weight in zip(parts, weights, strict=True)])
        return np.bincount(rows, weights=values, minlength=self.n)

    def dense_top(self, queries: np.ndarray, depth: int) -> set[int]:
        """Segment rows in the top `depth` by cosine of any query within any one tier (live rows only)."""
        found: set[int] = set()
        if self.n == 0:
            return found
        if self.graphs:
            for graph in self.graphs.values():
                for query in queries:
                    keys = graph.search(query, depth + int((~self.live).sum()) if self.deleted else depth).keys
                    found.update(int(key) for key in keys if self.live[key])
            return found
        scores = np.asarray(self.vectors @ queries.T)  # (rows, Q)
        for tier in np.unique(self.tiers).tolist():
            rows = np.flatnonzero((self.tiers == tier) & self.live)
            for column in range(scores.shape[1]):
                found.update(rows[top_rows(scores[rows, column], depth)].tolist())
        return found


def _map(path: Path) -> mmap.mmap | bytes:
    if path.stat().st_size == 0:
        return b""
    with open(path, "rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def top_rows(scores: np.ndarray, depth: int) -> np.ndarray:
    """Positions of the `depth` highest finite scores (all ties at the cut included), unordered.

    >>> sorted(top_rows(np.array([0.1, 0.9, -np.inf, 0.5, 0.5]), 2).tolist())
    [1, 3, 4]
    """
    finite = np.flatnonzero(np.isfinite(scores))
    if len(finite) <= depth:
        return finite
    values = scores[finite]
    cut = np.partition(values, len(values) - depth)[len(values) - depth]
    return finite[values >= cut]


class SegmentsGone(Exception):
    """A segment listed by the manifest was deleted by a writer before this reader mapped it."""


def open_segments(folder: Path, manifest: dict) -> list[Segment]:
    """Map every segment the manifest lists.

    Raises:
        SegmentsGone: one was deleted meanwhile (a newer manifest replaced this one; read it again).
    """
    try:
        return [Segment(folder / SEGMENTS / entry["name"], set(entry["deleted"])) for entry in manifest["segments"]]
    except FileNotFoundError as exc:
        raise SegmentsGone(str(exc)) from exc


class ChunkView(Sequence):
    """The live chunks in index order, decoded from the memory-mapped segments on access."""

    def __init__(self, index: SegmentedIndex):
        self._index = index

    def __len__(self) -> int:
        return len(self._index.row_segment)

    def __getitem__(self, row):
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(len(self)))]
        if row < 0:
            row += len(self)
        if not 0 <= row < len(self):
            raise IndexError(f"chunk row {row} out of range (0..{len(self) - 1})")
        return self._index.segments[self._index.row_segment[row]].chunk(int(self._index.row_local[row]))


class SourceView(Mapping):
    """source_id -> Source of the live sources (newest segment first), decoded on access."""

    def __init__(self, index: SegmentedIndex):
        self._index = index

    def __getitem__(self, source_id: str) -> Source:
        for segment in reversed(self._index.segments):
            row = segment.find_source(source_id)
            if row is not None and source_id not in segment.deleted:
                return segment.source(row)
        raise KeyError(source_id)

    def __iter__(self) -> Iterator[str]:
        for segment in self._index.segments:
            for row in range(segment.n_sources):
                source_id = segment.source(row).source_id
                if source_id not in segment.deleted:
                    yield source_id

    def __len__(self) -> int:
        return sum(segment.live_sources for segment in self._index.segments)


class SegmentedIndex:
    """A read-only snapshot: the segments one manifest lists, their live chunks numbered 0..n-1 in index order.

    Index order is the order a fresh build would give (files by path, each file's chunks in reading order), whatever
    the history of incremental builds, so results never depend on it.
    """

    def __init__(self, folder: Path, manifest: dict, segments: list[Segment]):
        self.folder = folder
        self.manifest = manifest
        self.segments = segments
        self.sources = SourceView(self)
        self.chunks = ChunkView(self)
        paths = sorted({segment.files[i] for segment in segments for i in np.unique(segment.chunk_file[segment.live])})
        rank = {path: i for i, path in enumerate(paths)}
        seg_ids, locals_, path_ranks = [], [], []
        for number, segment in enumerate(segments):
            live = np.flatnonzero(segment.live)
            file_rank = np.asarray([rank.get(path, -1) for path in segment.files], dtype=np.int64)
            seg_ids.append(np.full(len(live), number, dtype=np.int32))
            locals_.append(live.astype(np.int64))
            path_ranks.append(file_rank[segment.chunk_file[live]] if len(live) else np.zeros(0, dtype=np.int64))
        seg_all = np.concatenate(seg_ids) if seg_ids else np.zeros(0, dtype=np.int32)
        local_all = np.concatenate(locals_) if locals_ else np.zeros(0, dtype=np.int64)
        order = np.lexsort((local_all, seg_all, np.concatenate(path_ranks))) if len(seg_all) else seg_all
        self.row_segment = seg_all[order]
        self.row_local = local_all[order]
        self.global_rows = []  # per segment: local row -> index row, -1 when dead
        for number, segment in enumerate(segments):
            mapping = np.full(segment.n, -1, dtype=np.int64)
            mine = np.flatnonzero(self.row_segment == number)
            mapping[self.row_local[mine]] = mine
            self.global_rows.append(mapping)
        # a segment whose rows are the index's rows in order (one segment, nothing deleted): scores need no remapping
        self._identity = [len(m) == len(self.row_segment) and bool(np.array_equal(m, np.arange(len(m))))
                          for m in self.global_rows]
        self.tiers = np.zeros(len(order), dtype=np.int64)
        self.text_keys = np.zeros(len(order), dtype=np.uint64)
        for number, segment in enumerate(segments):
            mine = np.flatnonzero(self.row_segment == number)
            self.tiers[mine] = segment.tiers[self.row_local[mine]]
            self.text_keys[mine] = segment.text_keys[self.row_local[mine]]
        self.n_docs = sum(segment.n for segment in segments)  # BM25's N: every stored chunk, tombstoned ones too

    # compatibility with the old in-memory Index --------------------------------------------------------------------

    @property
    def embeddings(self) -> np.ndarray:
        """Every live chunk's embedding in index order, materialised (float32; search never needs this whole)."""
        dim = int(self.manifest["dim"])
        out = np.zeros((len(self.row_segment), dim), dtype=np.float32)
        for number, segment in enumerate(self.segments):
            mine = np.flatnonzero(self.row_segment == number)
            out[mine] = segment.vectors[self.row_local[mine]]
        return out

    # search primitives ----------------------------------------------------------------------------------------------

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - one snapshot per retriever, a bounded cache
    def document_frequency(self, token: str) -> int:
        """Chunks (in every segment listed, tombstoned ones too) whose tokens include `token`."""
        total = 0
        for segment in self.segments:
            i = segment.vocab.get(token)
            if i is not None:
                total += int(segment.df[i])
        return total

    def bm25_scores(self, tokens: list[str]) -> np.ndarray:
        """BM25 of every live chunk (index order) for the query tokens, with one IDF over all segments."""
        idf = {token: float(lucene_idf(self.n_docs, self.document_frequency(token))) for token in set(tokens)}
        if len(self.segments) == 1 and self._identity[0]:  # the common case: no copy, no remapping of a million rows
            scores = self.segments[0].bm25_scores(tokens, idf)
            return scores if scores is not None else np.zeros(len(self.row_segment), dtype=np.float64)
        out = np.zeros(len(self.row_segment), dtype=np.float64)
        for number, segment in enumerate(self.segments):
            scores = segment.bm25_scores(tokens, idf)
            if scores is not None:
                mapping = self.global_rows[number]
                live = mapping >= 0
                out[mapping[live]] = scores[live]
        return out

    def dense_candidates(self, queries: np.ndarray, depth: int) -> np.ndarray:
        """Index rows in the top `depth` by cosine of some query within some tier, from every segment."""
        rows = []
        for number, segment in enumerate(self.segments):
            found = np.fromiter(segment.dense_top(queries, depth), dtype=np.int64)
            rows.append(self.global_rows[number][found])
        return np.unique(np.concatenate(rows)) if rows else np.zeros(0, dtype=np.int64)

    def cosines(self, rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """(len(rows), Q) exact cosines from the stored float32 vectors."""
        out = np.zeros((len(rows), len(queries)), dtype=np.float32)
        segs = self.row_segment[rows]
        for number in np.unique(segs).tolist():
            at = np.flatnonzero(segs == number)
            local = self.row_local[rows[at]]
            order = np.argsort(local)
            vectors = self.segments[number].vectors[local[order]]
            out[at[order]] = vectors @ queries.T
        return out

    def token_set(self, row: int) -> set[str]:
        segment = self.segments[self.row_segment[row]]
        words = segment.inverse_vocab
        return {words[i] for i in segment.token_ids(int(self.row_local[row])).tolist()}


class Bm25Scorer:
    """`get_scores(tokens)`: BM25 of every live chunk in index order, one IDF over all segments (rank_bm25's API)."""

    def __init__(self, index: SegmentedIndex):
        self._index = index

    def get_scores(self, tokens: list[str]) -> np.ndarray:
        return self._index.bm25_scores(tokens)


class TokenSets(Sequence):
    """row -> the set of BM25 tokens of that chunk, read from the segment on access."""

    def __init__(self, index: SegmentedIndex):
        self._index = index

    def __len__(self) -> int:
        return len(self._index.row_segment)

    def __getitem__(self, row: int) -> set[str]:
        return self._index.token_set(row)


class CorpusIdf(Mapping):
    """token -> smoothed IDF `log((N + 1) / (df + 0.5))` over all segments, for the tokens asked (never all)."""

    def __init__(self, index: SegmentedIndex):
        self._index = index

    def __getitem__(self, token: str) -> float:
        df = self._index.document_frequency(token)
        if df == 0:
            raise KeyError(token)
        return math.log((self._index.n_docs + 1) / (df + 0.5))

    def __iter__(self):
        raise TypeError("CorpusIdf answers single tokens; it does not list the vocabulary")

    def __len__(self) -> int:
        raise TypeError("CorpusIdf answers single tokens; it does not count the vocabulary")
