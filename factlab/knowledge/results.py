"""python -m factlab.knowledge notes --library outputs/kb --cards outputs/verify --store outputs/kb/notes.sqlite
       [--task verify/report.md]

A verify run's results written back as child notes in factlab's OWN note store (never into the user's library):
for every imported item whose source record the report's evidence used, one note for (item, task) that says it was
written by factlab, for which run and report date, and lists the claims whose evidence comes from it (paragraph id,
claim text, label, relation, confidence, risk, and each snippet with its chunk id and relation), tagged
`factlab/verified`. `write_card_notes` does it for a report in hand (verify's job); `write_notes` for a cards.json on
disk (the command above). Such a note is never evidence until a person accepts it (factlab.knowledge.store).
Writing goes through `NoteStore.upsert`: the same findings give the same note version (nothing new is written, even
from another run), changed ones a new version stacked over the old one (`NoteStore.undo` brings the old one back).
Evidence whose source is not an item of the library is counted and reported, not written; a note of
the task on an item the cards no longer use is reported as stale and left as it is. `export` exports the notes.

`--library` is the folder `python -m factlab.knowledge import` wrote: its `items.json` maps each `source_id` back to
the item it was made from (library_id, item_key, version), and its `library.json` names the imported file or folder,
which the store refuses to live in (NoteStore). `--cards` is a verify output folder (its cards.json) or the file.

The cards are read here as PLAIN JSON, not through `factlab.cards` (layer 3, above the knowledge layer; see
factlab/layers.py). Only these fields of the documented cards.json format (factlab/cards/model.py) are read:
`document`; per paragraph `paragraph_id` and `claims`; per claim `claim_id`, `text`, `label`, `relation`,
`confidence`, `risk_level`, `depends_on` and `evidence`; per evidence item `source_id`, `chunk_id`, `snippet`,
`relation` and `confidence`; and `created`, the report's date. Everything else in the file is ignored.

>>> default_task_key({"document": "reports/demo.md"}, Path("out/cards.json"))
'verify/demo.md'
>>> default_task_key({"document": ""}, Path("outputs/run7/cards.json"))
'verify/run7'
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factlab.knowledge.items import Item, ItemRef, KnowledgeError, Library
from factlab.knowledge.sources import source_id_for
from factlab.knowledge.store import WRITTEN_BY, NoteStore, Upsert, body_version

ITEMS_FILE = "items.json"  # written by `import`: identity, source_id and metadata of every item
LIBRARY_FILE = "library.json"  # written by `import`: the library's name and origin (the store refuses to live there)
CARDS_FILE = "cards.json"  # what a verify output folder holds
VERIFIED_TAG = "factlab/verified"


@dataclass(frozen=True)
class ImportedLibrary:
    """An import folder read back: the items (identity, type and title only; the origin is the imported file or
    folder) and the map source_id -> the item version its source record was made from."""

    library: Library
    by_source: dict[str, ItemRef]


def _read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KnowledgeError(f"{path}: no such file; {what}") from None
    except json.JSONDecodeError as exc:
        raise KnowledgeError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from None


def load_import(folder: str | Path) -> ImportedLibrary:
    """Read `items.json` and `library.json` of an import folder.

    An `items.json` entry without `source_id` (an older import) gets `source_id_for` its ref, which is what the
    import would have written; an entry with `source_id: null` made no source record.
    """
    folder = Path(folder)
    hint = "pass the --out folder of `python -m factlab.knowledge import` (run the import again if it is older)"
    entries = _read_json(folder / ITEMS_FILE, hint)
    meta = _read_json(folder / LIBRARY_FILE, hint)
    if not isinstance(entries, list) or not isinstance(meta, dict) or not isinstance(meta.get("origin"), str):
        raise KnowledgeError(f"{folder}: {ITEMS_FILE} must be a list and {LIBRARY_FILE} an object with `origin`; "
                             + hint)
    items, by_source = [], {}
    for n, entry in enumerate(entries):
        where = f"{folder / ITEMS_FILE}: item {n}"
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("library_id", "item_key")) \
                or not isinstance(entry.get("version"), int | str):
            raise KnowledgeError(f"{where}: expected an object with library_id, item_key (strings) and version; "
                                 + hint)
        ref = ItemRef(entry["library_id"], entry["item_key"], entry["version"])
        metadata = entry.get("metadata") if isinstance(entry.get("metadata"), dict) else {}
        items.append(Item(ref, str(metadata.get("type", "")), str(metadata.get("title", ""))))
        source_id = entry["source_id"] if "source_id" in entry else source_id_for(ref)
        if source_id is not None:
            by_source[str(source_id)] = ref
    library = Library(str(meta.get("name") or folder.name), Path(meta["origin"]), tuple(items))
    return ImportedLibrary(library, by_source)


def cards_path(cards: str | Path) -> Path:
    """The cards.json a --cards argument names: the file itself, or `<folder>/cards.json`."""
    cards = Path(cards)
    return cards / CARDS_FILE if cards.is_dir() else cards


def default_task_key(report: dict, path: Path) -> str:
    """`verify/<the checked document's file name>`, or `verify/<the cards' folder name>` when it has none."""
    document = str(report.get("document") or "").strip()
    name = Path(document).name if document else path.resolve().parent.name
    return f"verify/{name or 'report'}"


def _field(record: dict, name: str, kinds: type | tuple[type, ...], where: str, default=None):
    value = record.get(name, default)
    if not isinstance(value, kinds):
        raise KnowledgeError(f"{where}.{name}: expected {getattr(kinds, '__name__', kinds)}, got {value!r:.60}; is "
                             "this a cards.json written by verify.py?")
    return value


def read_report(path: Path) -> dict:
    """The cards.json at `path`, as plain JSON, checked only for the fields this module reads."""
    return check_report(_read_json(path, "pass a verify output folder (holding cards.json) or the cards.json file"),
                        str(path))


def check_report(report: object, where: str) -> dict:
    """A verify report as a cards.json object: `report` itself, or its `to_dict()` (a factlab.cards Report, read
    here without importing the cards layer), checked only for the fields this module reads (errors name `where`)."""
    if not isinstance(report, dict) and callable(getattr(report, "to_dict", None)):
        report = report.to_dict()
    if not isinstance(report, dict):
        raise KnowledgeError(f"{where}: expected a JSON object (a verify report), got {type(report).__name__}")
    path = where
    for p, paragraph in enumerate(_field(report, "paragraphs", list, str(path))):
        where = f"{path}: paragraphs[{p}]"
        if not isinstance(paragraph, dict):
            raise KnowledgeError(f"{where}: expected an object")
        _field(paragraph, "paragraph_id", str, where)
        for c, claim in enumerate(_field(paragraph, "claims", list, where, [])):
            cwhere = f"{where}.claims[{c}]"
            if not isinstance(claim, dict):
                raise KnowledgeError(f"{cwhere}: expected an object")
            for name in ("claim_id", "text"):
                _field(claim, name, str, cwhere)
            _field(claim, "depends_on", list, cwhere, [])
            for e, evidence in enumerate(_field(claim, "evidence", list, cwhere, [])):
                ewhere = f"{cwhere}.evidence[{e}]"
                if not isinstance(evidence, dict):
                    raise KnowledgeError(f"{ewhere}: expected an object")
                _field(evidence, "source_id", str, ewhere)
    return report


def _claim_use(paragraph_id: str, claim: dict, evidence: list[dict], source_id: str) -> dict:
    return {"paragraph_id": paragraph_id, "claim_id": claim["claim_id"], "source_id": source_id, "text": claim["text"],
            "label": claim.get("label"), "relation": claim.get("relation"), "confidence": claim.get("confidence"),
            "risk_level": claim.get("risk_level"), "decisive": source_id in claim.get("depends_on", []),
            "evidence": [{"chunk_id": e.get("chunk_id", ""), "snippet": e.get("snippet", ""),
                          "relation": e.get("relation"), "confidence": e.get("confidence")} for e in evidence]}


def _number(value) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) and not isinstance(value, bool) else "?"


def note_body(task_key: str, document: str, uses: list[dict], run: str = "", created: str = "") -> str:
    """The note text (Markdown) for one item: who wrote it for which run, a line per claim, a line per snippet.

    >>> use = {"paragraph_id": "p1", "claim_id": "c1", "text": "Rates fell.", "label": "wrong",
    ...        "relation": "contradict", "confidence": 0.9, "risk_level": "red", "decisive": True,
    ...        "evidence": [{"chunk_id": "s#1", "snippet": "Rates rose.", "relation": "contradict", "confidence": 0.9}]}
    >>> print(note_body("verify/demo.md", "demo.md", [use], run="run7", created="2026-12-01T10:00:00+00:00"))
    Written by factlab for verify/demo.md (run run7, report of 2026-12-01T10:00:00+00:00); not evidence until accepted.
    1 claim of demo.md uses this item as evidence:
    - p1/c1 "Rates fell.": label wrong, relation contradict, confidence 0.90, risk red; decided by this source
      - contradict 0.90 [s#1] "Rates rose."
    """
    when = ", ".join(part for part in (f"run {run}" if run else "", f"report of {created}" if created else "")
                     if part)
    lines = [f"Written by factlab for {task_key}{f' ({when})' if when else ''}; not evidence until accepted.",
             f"{len(uses)} claim{'s' if len(uses) != 1 else ''} of {document or 'the report'} "
             f"use{'s' if len(uses) == 1 else ''} this item as evidence:"]
    for use in uses:
        decided = "; decided by this source" if use["decisive"] else ""
        lines.append(f"- {use['paragraph_id']}/{use['claim_id']} \"{use['text']}\": label {use['label'] or 'none'}, "
                     f"relation {use['relation'] or 'none'}, confidence {_number(use['confidence'])}, "
                     f"risk {use['risk_level'] or 'none'}{decided}")
        lines += [f"  - {e['relation'] or 'unjudged'} {_number(e['confidence'])} [{e['chunk_id']}] \"{e['snippet']}\""
                  for e in use["evidence"]]
    return "\n".join(lines)


@dataclass
class NotesResult:
    """What `write_notes` did.

    Attributes:
        task_key: the task the notes were written for.
        cards: the cards.json read.
        upserts: one per item used, in library order (`created`, `unchanged` or `restored`).
        evidence: evidence items read in the report.
        not_in_library: source_id -> evidence items whose source is not an item of the library (not written).
        stale: items holding a current note of this task that the cards no longer use (left as they are).
    """

    task_key: str
    cards: Path
    upserts: list[Upsert] = field(default_factory=list)
    evidence: int = 0
    not_in_library: dict[str, int] = field(default_factory=dict)
    stale: list[ItemRef] = field(default_factory=list)

    def summary(self) -> dict:
        actions = Counter(u.action for u in self.upserts)
        return {"task": self.task_key, "cards": str(self.cards), "notes": len(self.upserts),
                **{a: actions[a] for a in ("created", "unchanged", "restored")}, "evidence": self.evidence,
                "evidence_not_in_library": sum(self.not_in_library.values()),
                "sources_not_in_library": sorted(self.not_in_library), "stale": [str(r) for r in self.stale]}


def _record(store: NoteStore, imported: ImportedLibrary, report: dict, task_key: str, run: str,
            cards: Path) -> NotesResult:
    result = NotesResult(task_key, cards)
    uses: dict[ItemRef, list[dict]] = {}
    missing: Counter[str] = Counter()
    for paragraph in report.get("paragraphs", []):
        for claim in paragraph.get("claims", []):
            by_source: dict[str, list[dict]] = {}
            for evidence in claim.get("evidence", []):
                result.evidence += 1
                by_source.setdefault(evidence["source_id"], []).append(evidence)
            for source_id, evidence in by_source.items():
                ref = imported.by_source.get(source_id)
                if ref is None:
                    missing[source_id] += len(evidence)
                    continue
                uses.setdefault(ref, []).append(_claim_use(paragraph["paragraph_id"], claim, evidence, source_id))
    result.not_in_library = dict(sorted(missing.items()))
    document, created = str(report.get("document") or ""), str(report.get("created") or "")
    for item in imported.library:
        if item.ref not in uses:
            continue
        data = {"written_by": WRITTEN_BY, "task": task_key, "document": document, "claims": uses[item.ref]}
        # The version leaves the run and date out: a rerun that finds the same is the same note (and keeps its
        # acceptance); the note records the run and date that first found it.
        version = body_version(item.ref.version, note_body(task_key, document, uses[item.ref]) + "\n"
                               + json.dumps(data, sort_keys=True, ensure_ascii=False))
        body = note_body(task_key, document, uses[item.ref], run, created)
        result.upserts.append(store.upsert(item.ref, task_key, body, version=version,
                                           data=data | {"run": run, "created": created}))
        store.add_tag(item.ref, VERIFIED_TAG)
    used = {ref.key for ref in uses}
    result.stale = [n.item for n in store.notes() if n.task_key == task_key and n.item.key not in used]
    return result


def write_card_notes(report: Mapping[str, Any] | Any, store: NoteStore | str | Path,
                     library: ImportedLibrary | str | Path, task_key: str | None = None, run: str = "",
                     cards: str | Path | None = None) -> NotesResult:
    """Write a verify run's cards back as factlab's notes, one per library item its evidence used, for one task.

    Every note says it was written by factlab (`data.written_by`, its first line), for which task, run and report
    date, and lists the claims resting on the item (claim, label, relation, confidence, risk, evidence refs: source
    and chunk ids with the snippets). It is never evidence until a person accepts it (`NoteStore.accept`,
    `python -m factlab.knowledge accept`): factlab.knowledge.sources leaves unaccepted notes out.

    Args:
        report: the run's report: a cards.json object, or an object with `to_dict()` giving one (factlab.cards'
            Report).
        store: factlab's note store, open, or its path (opened, created when missing, and closed here; it refuses
            to live in the imported library).
        library: the `import` folder (items.json, library.json), or it read by `load_import`: maps each evidence
            `source_id` to its item; evidence from other sources is counted, not written.
        task_key: the task the notes belong to; default `verify/<the checked document's file name>`.
        run: the run's name (e.g. its output folder), recorded in the notes beside the report's `created` date.
        cards: where the report was read from, for messages (default `cards.json`).

    Returns:
        What was written (`NotesResult.summary()` for a log line).
    """
    where = Path(cards) if cards is not None else Path(CARDS_FILE)
    report = check_report(report, str(where))
    imported = library if isinstance(library, ImportedLibrary) else load_import(library)
    task_key = task_key or default_task_key(report, where)
    if isinstance(store, NoteStore):
        return _record(store, imported, report, task_key, run, where)
    with NoteStore(store, [imported.library]) as opened:
        return _record(opened, imported, report, task_key, run, where)


def write_notes(library: str | Path, cards: str | Path, store: str | Path, task_key: str | None = None
                ) -> NotesResult:
    """Write the verify report's results back as notes (the command in this module's docstring).

    Args:
        library: the import folder (items.json, library.json).
        cards: a verify output folder or its cards.json.
        store: factlab's note store (created when missing; never inside the imported library).
        task_key: the task the notes belong to; default `default_task_key` of the report.
    """
    path = cards_path(cards)
    imported = load_import(library)
    return write_card_notes(read_report(path), store, imported, task_key, run=path.resolve().parent.name, cards=path)
