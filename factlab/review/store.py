"""Review decisions, durable: one SQLite file, append-only (a later decision on a card supersedes, never erases, an
earlier one), each row with the reviewer, the time and the version of the card the reviewer saw.

    >>> import tempfile, pathlib
    >>> store = DecisionStore(pathlib.Path(tempfile.mkdtemp()) / "review.sqlite")
    >>> first = store.record(Decision("run-1", "p1", "c1", "v1", "reject", reviewer="ana", reason="wrong year"))
    >>> second = store.record(Decision("run-1", "p1", "c1", "v1", "accept", reviewer="ana"))
    >>> [d.decision for d in store.history("run-1")], store.current("run-1")[("p1", "c1")].decision
    (['reject', 'accept'], 'accept')
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from factlab.schema import LABELS

DECISIONS = ("accept", "reject", "revise")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key TEXT NOT NULL,
    paragraph_id TEXT NOT NULL,
    claim_id TEXT NOT NULL,
    card_version TEXT NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('accept', 'reject', 'revise')),
    reviewer TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    revised_claim TEXT,
    revised_label TEXT,
    business TEXT,
    decided_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS decisions_run ON decisions (run_key, paragraph_id, claim_id, id);
"""


class DecisionError(ValueError):
    """A decision that cannot be stored (unknown decision or label, a revision without its change, ...)."""


@dataclass(frozen=True)
class Decision:
    """One reviewer's decision on one claim card of one run."""

    run_key: str  # the reviewed run: a verify output folder or an MLflow run id (factlab/review/runs.py)
    paragraph_id: str
    claim_id: str
    card_version: str  # `card_version(card)` of the card the reviewer saw
    decision: str  # accept | reject | revise
    reviewer: str = "reviewer"
    reason: str = ""
    revised_claim: str | None = None  # revise: the claim as it should read
    revised_label: str | None = None  # reject / revise: the label it should have (one of LABELS)
    business: str | None = None  # the business rules the card was built under
    decided_at: str = ""  # ISO time, UTC; set when recorded
    id: int | None = None

    def check(self) -> Decision:
        """The decision itself, validated.

        Raises:
            DecisionError: naming the field.
        """
        if self.decision not in DECISIONS:
            raise DecisionError(f"decision: {self.decision!r} is not one of {', '.join(DECISIONS)}")
        if self.revised_label is not None and self.revised_label not in LABELS:
            raise DecisionError(f"revised_label: {self.revised_label!r} is not one of {', '.join(LABELS)}")
        if self.decision == "revise" and not (self.revised_claim or self.revised_label):
            raise DecisionError("revise: give revised_claim or revised_label (what the card should say)")
        if self.decision == "reject" and not self.reason.strip():
            raise DecisionError("reason: a rejection needs a reason (it becomes the training row's provenance)")
        for name in ("run_key", "paragraph_id", "claim_id", "card_version", "reviewer"):
            if not str(getattr(self, name)).strip():
                raise DecisionError(f"{name}: empty")
        return self

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise DecisionError(f"unknown field(s) {unknown}; expected some of {sorted(known - {'id'})}")
        try:
            return cls(**{k: v for k, v in data.items() if k != "id"})
        except TypeError as exc:
            raise DecisionError(str(exc)) from None


def card_version(card: Mapping[str, Any]) -> str:
    """A short content hash of a claim card's JSON: a decision records which version of the card it was made on.

    >>> card_version({"claim_id": "c1", "label": "wrong"}) == card_version({"label": "wrong", "claim_id": "c1"})
    True
    """
    text = json.dumps(card, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


class DecisionStore:
    """The decisions of every reviewed run in one SQLite file (created with its folder)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        db.row_factory = sqlite3.Row
        return db

    def record(self, decision: Decision) -> Decision:
        """Store a validated decision (append-only); returns it with its id and time."""
        decision.check()
        row = {**asdict(decision), "decided_at": decision.decided_at or datetime.now(UTC).isoformat(timespec="seconds")}
        row.pop("id")
        with self._connect() as db:
            cursor = db.execute(f"INSERT INTO decisions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                                tuple(row.values()))
            return Decision(**row, id=cursor.lastrowid)

    def history(self, run_key: str) -> list[Decision]:
        """Every decision on the run, oldest first."""
        with self._connect() as db:
            rows = db.execute("SELECT * FROM decisions WHERE run_key = ? ORDER BY id", (run_key,)).fetchall()
        return [Decision(**dict(row)) for row in rows]

    def current(self, run_key: str) -> dict[tuple[str, str], Decision]:
        """The latest decision per (paragraph id, claim id) of the run."""
        return {(d.paragraph_id, d.claim_id): d for d in self.history(run_key)}

    def runs(self) -> list[str]:
        """The run keys with decisions."""
        with self._connect() as db:
            return [row[0] for row in db.execute("SELECT DISTINCT run_key FROM decisions ORDER BY run_key")]
