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

import contextlib
import hashlib
import json
import logging
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from factlab.schema import LABELS

logger = logging.getLogger(__name__)
T = TypeVar("T")

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


class StoreUnavailable(RuntimeError):
    """The decision store cannot answer now: locked by another process (`busy`, retry shortly) or unreadable."""

    def __init__(self, message: str, busy: bool) -> None:
        super().__init__(message)
        self.busy = busy


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
        for name in ("run_key", "paragraph_id", "claim_id", "card_version", "reviewer", "reason", "revised_claim",
                     "revised_label", "business"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise DecisionError(f"{name}: expected text, got {type(value).__name__}")
            try:
                (value or "").encode("utf-8")
            except UnicodeEncodeError:
                raise DecisionError(f"{name}: not UTF-8 text (a lone surrogate?)") from None
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
    """The decisions of every reviewed run in one SQLite file (created with its folder; recreated, with a warning, if
    it disappears while in use).

    Args:
        path: the SQLite file.
        timeout_s: how long a call waits for a lock held by another process before raising `StoreUnavailable`.
    """

    def __init__(self, path: str | Path, timeout_s: float = 3.0) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s
        if not self.path.exists():
            logger.warning("no decision store at %s: starting a new, empty one (expected on a first review; if "
                           "decisions were recorded before, that file was moved or deleted)", self.path)
        self._recreate()

    def _connect(self) -> sqlite3.Connection:
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=self.timeout_s)
        db.row_factory = sqlite3.Row
        return db

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work(db)` in one transaction; a missing file or table is recreated (once, with a warning) and the work
        retried; SQLite errors become `StoreUnavailable` naming the file."""
        for attempt in (1, 2):
            try:
                with contextlib.closing(self._connect()) as db, db:
                    return work(db)
            except sqlite3.OperationalError as exc:
                message = str(exc)
                if "no such table" in message and attempt == 1:
                    logger.warning("the decision store %s lost its table (the file was deleted or replaced while the "
                                   "app ran): recreating it empty", self.path)
                    self._recreate()
                    continue
                if "locked" in message or "busy" in message:
                    raise StoreUnavailable(f"the decision store {self.path} is locked by another process (waited "
                                           f"{self.timeout_s:g} s): retry in a moment", busy=True) from None
                raise StoreUnavailable(f"the decision store {self.path} failed: {message}", busy=False) from None
            except sqlite3.DatabaseError as exc:
                raise StoreUnavailable(f"the decision store {self.path} cannot be read ({exc}): move the file away "
                                       "and restart, or restore it", busy=False) from None
        raise AssertionError("unreachable")

    def _recreate(self) -> None:
        try:
            with contextlib.closing(self._connect()) as db:
                db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"the decision store {self.path} could not be created ({exc})",
                                   busy="locked" in str(exc)) from None

    def record(self, decision: Decision) -> Decision:
        """Store a validated decision (append-only); returns it with its id and time."""
        decision.check()
        row = {**asdict(decision), "decided_at": decision.decided_at or datetime.now(UTC).isoformat(timespec="seconds")}
        row.pop("id")
        sql = f"INSERT INTO decisions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})"
        return Decision(**row, id=self._run(lambda db: db.execute(sql, tuple(row.values())).lastrowid))

    def history(self, run_key: str) -> list[Decision]:
        """Every decision on the run, oldest first."""
        rows = self._run(lambda db: db.execute("SELECT * FROM decisions WHERE run_key = ? ORDER BY id",
                                               (run_key,)).fetchall())
        return [Decision(**dict(row)) for row in rows]

    def current(self, run_key: str) -> dict[tuple[str, str], Decision]:
        """The latest decision per (paragraph id, claim id) of the run: one row per card read, however long the
        history (the page and /api/state ask on every request)."""
        rows = self._run(lambda db: db.execute(
            "SELECT * FROM decisions WHERE id IN (SELECT MAX(id) FROM decisions WHERE run_key = ? "
            "GROUP BY paragraph_id, claim_id) ORDER BY id", (run_key,)).fetchall())
        return {(row["paragraph_id"], row["claim_id"]): Decision(**dict(row)) for row in rows}

    def runs(self) -> list[str]:
        """The run keys with decisions."""
        return [row[0] for row in self._run(
            lambda db: db.execute("SELECT DISTINCT run_key FROM decisions ORDER BY run_key").fetchall())]
