"""Claim-level result cache: an identical claim reuses an earlier card, in a run and across runs, and a near-identical
one only when it provably states the same thing.

Entries live under a fingerprint of everything that decides a card (`setup`: the stage configs and the CONTENT of
compiled programs and trained models, the LM, the sources index, the retrieval settings, the business rules, k, the
code of the deciding packages, the card format), so a changed setup never reuses stale results. The key of an entry
is the normalised claim text plus what else its card depends on (`context`: the works cited by its sentence).

Lookup: exact on the key first; then by embedding cosine at or above `threshold`, but a near hit is used only when
`factlab.matching.text.reuse_blocker` finds no difference in numbers, dates, units, negation, names or qualifiers
(when in doubt, no reuse), and it says so on the card. Every finished claim is written at once (sqlite, WAL), so a
crashed run loses nothing it finished; a corrupt database is moved aside and rebuilt, with a warning.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from factlab.matching.text import reuse_blocker
from factlab.runtime import cache_root
from factlab.schema import normalise_text

logger = logging.getLogger(__name__)

CACHE_FORMAT = 2  # bump when a cached result's shape changes: older entries are then never looked up


def fingerprint(parts: dict) -> str:
    """Stable short hash of a JSON-able description of the setup.

    >>> fingerprint({"a": 1}) == fingerprint({"a": 1}) != fingerprint({"a": 2})
    True
    """
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


# The packages whose code decides a claim's card: a change to any of them is another setup.
_DECIDING_CODE = ("programs", "stages", "retrieval", "rules", "cards", "matching", "untrusted.py", "schema.py",
                  "checkers", "judge")


@functools.cache
def code_fingerprint() -> str:
    """sha256 over the source of the packages that decide a claim's card (programs, rules, retrieval, cards, ...)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for part in _DECIDING_CODE:
        path = root / part
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class CacheHit:
    """A cached result and how it was found."""

    result: dict
    kind: str  # "exact" | "near"
    claim: str  # the cached claim's text
    key: str  # the entry's key
    similarity: float = 1.0


class ClaimCache:
    """sqlite-backed cache of claim results (JSON) with guarded near-duplicate lookup.

    Args:
        path: the sqlite file.
        setup: fingerprint of the setup; entries of other setups are never returned.
        embed: texts -> unit vectors; None disables near-duplicate lookup.
        threshold: cosine at or above which a claim is a near-duplicate candidate.
    """

    def __init__(self, path: str | Path, setup: str, embed: Callable[[list[str]], np.ndarray] | None = None,
                 threshold: float = 0.95) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.setup, self.embed, self.threshold = f"{CACHE_FORMAT}:{setup}", embed, threshold
        self._lock = threading.Lock()
        self.hits = {"exact": 0, "near": 0, "miss": 0, "near_refused": 0, "unreadable": 0}
        try:
            self._open()
        except sqlite3.DatabaseError as exc:  # a torn or foreign file: keep it for inspection, start afresh
            aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
            logger.warning("claim cache %s is unreadable (%s); moved aside to %s and rebuilt empty", self.path, exc,
                           aside)
            for suffix in ("", "-wal", "-shm"):
                part = Path(str(self.path) + suffix)
                if part.exists():
                    part.rename(Path(str(aside) + suffix))
            self._open()

    def _open(self) -> None:
        self._db = sqlite3.connect(str(self.path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS claims (setup TEXT, key TEXT, text TEXT, vector BLOB, result TEXT, "
            "PRIMARY KEY (setup, key))"
        )
        self._db.commit()
        rows = self._db.execute("SELECT key, text, vector FROM claims WHERE setup = ? AND vector IS NOT NULL",
                                (self.setup,)).fetchall()
        self._keys = [k for k, _, _ in rows]
        self._texts = [t for _, t, _ in rows]
        self._vectors = [np.frombuffer(v, dtype=np.float32) for _, _, v in rows]

    @staticmethod
    def key(text: str, context: str = "") -> str:
        return hashlib.sha256(f"{normalise_text(text)}\x1f{context}".encode()).hexdigest()

    def _vector(self, text: str) -> np.ndarray | None:
        return None if self.embed is None else np.asarray(self.embed([text])[0], dtype=np.float32)

    def _row(self, key: str) -> tuple[str, str] | None:
        with self._lock:
            return self._db.execute("SELECT text, result FROM claims WHERE setup = ? AND key = ?",
                                    (self.setup, key)).fetchone()

    def get(self, text: str, context: str = "") -> CacheHit | None:
        """The cached result for `text` (or a near-identical claim with the same context), or None."""
        key = self.key(text, context)
        row = self._row(key)
        if row:
            self.hits["exact"] += 1
            return CacheHit(json.loads(row[1]), "exact", row[0], key)
        if self._vectors:
            vector = self._vector(text)
            sims = np.stack(self._vectors) @ vector
            for index in np.argsort(-sims):
                if sims[index] < self.threshold:
                    break
                candidate = self._texts[index]
                if self.key(candidate, context) != self._keys[index]:
                    continue  # the candidate was cached under another context
                blocker = reuse_blocker(text, candidate)
                if blocker is not None:
                    self.hits["near_refused"] += 1
                    continue
                row = self._row(self._keys[index])
                if row:
                    self.hits["near"] += 1
                    return CacheHit(json.loads(row[1]), "near", row[0], self._keys[index], round(float(sims[index]), 4))
        self.hits["miss"] += 1
        return None

    def put(self, text: str, result: dict, context: str = "") -> None:
        """Store a finished claim's result now (durable before the next claim starts)."""
        key, vector = self.key(text, context), self._vector(text)
        blob = None if vector is None else vector.astype(np.float32).tobytes()
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)",
                             (self.setup, key, text, blob, json.dumps(result, ensure_ascii=False)))
            self._db.commit()
            if vector is not None:
                self._keys.append(key)
                self._texts.append(text)
                self._vectors.append(vector)

    def drop(self, hit: CacheHit) -> None:
        """Forget an entry whose result could not be used (an older card format, a hand-edited row)."""
        self.hits["unreadable"] += 1
        with self._lock:
            self._db.execute("DELETE FROM claims WHERE setup = ? AND key = ?", (self.setup, hit.key))
            self._db.commit()
            if hit.key in self._keys:
                index = self._keys.index(hit.key)
                del self._keys[index], self._texts[index], self._vectors[index]

    def close(self) -> None:
        with self._lock:
            self._db.close()


# Fields of an LM config that change how it runs, not what it answers: left out of the claim cache's setup.
_LM_RUNTIME_KEYS = frozenset({"port", "n_threads", "timeout_s", "num_retries", "start_timeout_s", "reuse_running",
                              "cache"})


class ClaimCacheSettings:
    """The claim cache of a checker, as configured (conf/checker/professional.yaml `claim_cache`, with
    `_recursive_: false`: `decides` arrives as config data, never built). `open` makes the cache once the checker's
    parts are built, keyed by everything that decides a claim's card.

    Args:
        enabled: false = no cache.
        near_threshold: MiniLM cosine at which two claims count as the same.
        decides: the settings that decide a card (the student's config, retrieval, business rules, k, verticals,
            timeliness), as config.
        path: the cache file; None = <cache root>/claims.sqlite.
    """

    def __init__(self, enabled: bool, near_threshold: float, decides, path: str | None = None) -> None:
        self.enabled, self.near_threshold, self.path = bool(enabled), float(near_threshold), path
        self.decides = OmegaConf.to_container(decides, resolve=True) if not isinstance(decides, dict) else decides

    def open(self, student, retriever, stages: dict, routed: dict) -> ClaimCache | None:
        """The cache for these built parts (None when off): its setup fingerprints the stages with the content of
        their compiled programs and trained models, the LM, the index's files, every setting in `decides`, and the
        code of the packages that decide a verdict."""
        if not self.enabled:
            return None
        if getattr(retriever.index, "manifest", None) is None:  # a web search: its pages are cached, not verdicts
            return None  # (a page can change between runs; a verdict cached against it would not notice)
        decides = dict(self.decides)
        lm = {k: v for k, v in (decides.pop("student", None) or {}).items() if k not in _LM_RUNTIME_KEYS}
        setup = fingerprint({
            "stages": {name: getattr(stage, "identity", None) for name, stage in stages.items()},
            **({"by_vertical": {stage: {v: s.identity for v, s in programs.items()} for stage, programs
                                in routed.items()}} if routed else {}),  # absent when unused
            "lm": {**lm, "info": {k: v for k, v in (student.info if student else {}).items() if k != "port"}},
            "index": fingerprint(retriever.index.manifest["files"]),
            **decides, "code": code_fingerprint(),
        })
        path = Path(self.path) if self.path else cache_root() / "claims.sqlite"
        return ClaimCache(path, setup, embed=retriever.encoder.encode, threshold=self.near_threshold)
