"""Claim-level result cache: identical or near-identical claims reuse an earlier card, in a run and across runs.

Keyed by a fingerprint of everything that decides a card (stage programs, LM, sources index, business rules)
so a changed setup never reuses stale results. Lookup is exact on the normalised claim text first, then by
embedding cosine above a threshold among entries of the same fingerprint. Every finished claim is written
at once (sqlite, WAL), so a crashed run loses nothing it finished.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from factlab.schema import normalise_text


def fingerprint(parts: dict) -> str:
    """Stable short hash of a JSON-able description of the setup.

    >>> fingerprint({"a": 1}) == fingerprint({"a": 1}) != fingerprint({"a": 2})
    True
    """
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


class ClaimCache:
    """sqlite-backed cache of claim results (JSON) with optional embedding near-duplicate lookup.

    Args:
        path: the sqlite file.
        setup: fingerprint of the setup; entries of other setups are never returned.
        embed: text -> unit vector; None disables near-duplicate lookup.
        threshold: cosine at or above which two claims count as the same.
    """

    def __init__(self, path: str | Path, setup: str, embed: Callable[[list[str]], np.ndarray] | None = None,
                 threshold: float = 0.95) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.setup, self.embed, self.threshold = setup, embed, threshold
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS claims (setup TEXT, key TEXT, text TEXT, vector BLOB, result TEXT, "
            "PRIMARY KEY (setup, key))"
        )
        self._db.commit()
        self.hits = {"exact": 0, "near": 0, "miss": 0}
        rows = self._db.execute("SELECT key, vector FROM claims WHERE setup = ? AND vector IS NOT NULL",
                                (setup,)).fetchall()
        self._keys = [k for k, _ in rows]
        self._vectors = [np.frombuffer(v, dtype=np.float32) for _, v in rows]

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(normalise_text(text).encode()).hexdigest()

    def _vector(self, text: str) -> np.ndarray | None:
        return None if self.embed is None else np.asarray(self.embed([text])[0], dtype=np.float32)

    def get(self, text: str) -> dict | None:
        """The cached result for `text` (or a near-identical claim), or None."""
        key = self.key(text)
        with self._lock:
            row = self._db.execute("SELECT result FROM claims WHERE setup = ? AND key = ?",
                                   (self.setup, key)).fetchone()
        if row:
            self.hits["exact"] += 1
            return json.loads(row[0])
        if self._vectors:
            vector = self._vector(text)
            sims = np.stack(self._vectors) @ vector
            best = int(np.argmax(sims))
            if sims[best] >= self.threshold:
                with self._lock:
                    row = self._db.execute("SELECT result FROM claims WHERE setup = ? AND key = ?",
                                           (self.setup, self._keys[best])).fetchone()
                if row:
                    self.hits["near"] += 1
                    return json.loads(row[0])
        self.hits["miss"] += 1
        return None

    def put(self, text: str, result: dict) -> None:
        """Store a finished claim's result now (durable before the next claim starts)."""
        key, vector = self.key(text), self._vector(text)
        blob = None if vector is None else vector.astype(np.float32).tobytes()
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)",
                             (self.setup, key, text, blob, json.dumps(result, ensure_ascii=False)))
            self._db.commit()
            if vector is not None:
                self._keys.append(key)
                self._vectors.append(vector)

    def close(self) -> None:
        with self._lock:
            self._db.close()
