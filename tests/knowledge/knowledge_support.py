"""Helpers of the knowledge tests: a small Zotero library built by the tests (the real Zotero tables and column
names the importer reads): a journal article with its arXiv preprint, a book with a linked snapshot, an item in the
trash, a standalone note; a PDF and a user note under the article."""

from __future__ import annotations

import hashlib
import io
import sqlite3
from pathlib import Path

ZOTERO_SCHEMA = """
CREATE TABLE libraries (libraryID INTEGER PRIMARY KEY, type TEXT NOT NULL, editable INT NOT NULL DEFAULT 1);
CREATE TABLE itemTypes (itemTypeID INTEGER PRIMARY KEY, typeName TEXT);
CREATE TABLE items (itemID INTEGER PRIMARY KEY, itemTypeID INT NOT NULL, libraryID INT NOT NULL, key TEXT NOT NULL,
    version INT NOT NULL DEFAULT 0, UNIQUE (libraryID, key));
CREATE TABLE fields (fieldID INTEGER PRIMARY KEY, fieldName TEXT);
CREATE TABLE itemDataValues (valueID INTEGER PRIMARY KEY, value UNIQUE);
CREATE TABLE itemData (itemID INT, fieldID INT, valueID, PRIMARY KEY (itemID, fieldID));
CREATE TABLE creators (creatorID INTEGER PRIMARY KEY, firstName TEXT, lastName TEXT, fieldMode INT);
CREATE TABLE creatorTypes (creatorTypeID INTEGER PRIMARY KEY, creatorType TEXT);
CREATE TABLE itemCreators (itemID INT NOT NULL, creatorID INT NOT NULL, creatorTypeID INT NOT NULL DEFAULT 1,
    orderIndex INT NOT NULL DEFAULT 0, PRIMARY KEY (itemID, creatorID, creatorTypeID, orderIndex));
CREATE TABLE itemNotes (itemID INTEGER PRIMARY KEY, parentItemID INT, note TEXT, title TEXT);
CREATE TABLE itemAttachments (itemID INTEGER PRIMARY KEY, parentItemID INT, linkMode INT, contentType TEXT, path TEXT);
CREATE TABLE tags (tagID INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE itemTags (itemID INT NOT NULL, tagID INT NOT NULL, type INT NOT NULL, PRIMARY KEY (itemID, tagID));
CREATE TABLE collections (collectionID INTEGER PRIMARY KEY, collectionName TEXT NOT NULL, parentCollectionID INT,
    libraryID INT NOT NULL, key TEXT NOT NULL);
CREATE TABLE collectionItems (collectionID INT NOT NULL, itemID INT NOT NULL, orderIndex INT NOT NULL DEFAULT 0,
    PRIMARY KEY (collectionID, itemID));
CREATE TABLE deletedItems (itemID INTEGER PRIMARY KEY, dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL);
"""
TYPES = {"journalArticle": 1, "preprint": 2, "book": 3, "note": 4, "attachment": 5}
FIELDS = {"title": 1, "date": 2, "DOI": 3, "publicationTitle": 4, "abstractNote": 5, "repository": 6, "url": 7,
          "extra": 8}
USER_NOTE = "<p>My own reading note: check the dates on p. 3.</p>"
ARTICLE_TITLE = "Penicillin Discovery Revisited: A Historical Analysis"
ABSTRACT = "We revisit how Alexander Fleming discovered penicillin in 1928 at St Mary's Hospital."
PDF_TEXT = "Fleming discovered penicillin in 1928 and Florey purified it in 1940."


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF whose text pypdf extracts as `text`."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    bodies = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
              b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
              b"/Resources << /Font << /F1 5 0 R >> >> >>",
              b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
              b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(bodies, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(bodies) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(bodies) + 1, xref))
    return out.getvalue()


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def tree_sha256(folder: Path) -> dict[str, str]:
    """sha256 of every file under `folder`, by relative path (the whole data directory, attachments included)."""
    return {p.relative_to(folder).as_posix(): sha256(p) for p in sorted(folder.rglob("*")) if p.is_file()}


class _Builder:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db, self.next_id, self.values = db, 1, {}

    def item(self, type_name: str, key: str, version: int = 1, library: int = 1, **fields: str) -> int:
        item_id = self.next_id
        self.next_id += 1
        self.db.execute("INSERT INTO items VALUES (?, ?, ?, ?, ?)", (item_id, TYPES[type_name], library, key, version))
        for name, value in fields.items():
            if value not in self.values:
                self.values[value] = len(self.values) + 1
                self.db.execute("INSERT INTO itemDataValues VALUES (?, ?)", (self.values[value], value))
            self.db.execute("INSERT INTO itemData VALUES (?, ?, ?)", (item_id, FIELDS[name], self.values[value]))
        return item_id

    def creator(self, item_id: int, first: str, last: str, role: int = 1, order: int = 0) -> None:
        creator_id = self.db.execute("INSERT INTO creators (firstName, lastName, fieldMode) VALUES (?, ?, 0)",
                                     (first, last)).lastrowid
        self.db.execute("INSERT INTO itemCreators VALUES (?, ?, ?, ?)", (item_id, creator_id, role, order))

    def tag(self, item_id: int, name: str) -> None:
        self.db.execute("INSERT OR IGNORE INTO tags (name) VALUES (?)", (name,))
        tag_id = self.db.execute("SELECT tagID FROM tags WHERE name = ?", (name,)).fetchone()[0]
        self.db.execute("INSERT INTO itemTags VALUES (?, ?, 0)", (item_id, tag_id))


def build_zotero(data_dir: Path) -> Path:
    """Write `<data_dir>/zotero.sqlite` and `<data_dir>/storage/`; return the database path."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "zotero.sqlite"
    db = sqlite3.connect(path)
    db.executescript(ZOTERO_SCHEMA)
    db.execute("INSERT INTO libraries VALUES (1, 'user', 1)")
    db.executemany("INSERT INTO itemTypes VALUES (?, ?)", [(v, k) for k, v in TYPES.items()])
    db.executemany("INSERT INTO fields VALUES (?, ?)", [(v, k) for k, v in FIELDS.items()])
    db.executemany("INSERT INTO creatorTypes VALUES (?, ?)", [(1, "author"), (2, "editor")])
    b = _Builder(db)
    article = b.item("journalArticle", "JRNL2345", 5, title=ARTICLE_TITLE, date="2021-05-00 May 2021",
                     DOI="10.1016/j.hist.2021.01.002", publicationTitle="Journal of Medical History",
                     abstractNote=ABSTRACT)
    b.creator(article, "Alexander", "Fleming")
    b.creator(article, "Ann", "Editor", role=2, order=1)
    preprint = b.item("preprint", "PRE23456", 3, title="Penicillin discovery revisited: a historical analysis",
                      date="2020-11-00 November 2020", DOI="10.48550/arXiv.2011.01234", repository="arXiv",
                      abstractNote="Preprint version.")
    b.creator(preprint, "A.", "Fleming")
    book = b.item("book", "BOOK2345", 1, title="The Mould in Dr Florey's Coat", date="2004-00-00 2004")
    b.creator(book, "Eric", "Lax")
    trashed = b.item("journalArticle", "TRSH2345", 2, title="A deleted paper")
    db.execute("INSERT INTO deletedItems (itemID) VALUES (?)", (trashed,))
    b.item("note", "NOTE2345", 1)  # a standalone note: not a bibliographic item
    db.execute("INSERT INTO itemNotes VALUES (?, NULL, '<p>standalone</p>', 'standalone')", (b.next_id - 1,))
    child_note = b.item("note", "CHLD2345", 1)
    db.execute("INSERT INTO itemNotes VALUES (?, ?, ?, 'My own reading note')", (child_note, article, USER_NOTE))
    pdf = b.item("attachment", "PDF23456", 1, title="Full Text PDF")
    db.execute("INSERT INTO itemAttachments VALUES (?, ?, 0, 'application/pdf', 'storage:fleming.pdf')",
               (pdf, article))
    (data_dir / "storage" / "PDF23456").mkdir(parents=True)
    (data_dir / "storage" / "PDF23456" / "fleming.pdf").write_bytes(tiny_pdf(PDF_TEXT))
    snapshot = data_dir / "linked" / "florey.html"
    snapshot.parent.mkdir()
    snapshot.write_text("<html><head><title>x</title></head><body><p>Florey and Chain purified penicillin.</p>"
                        "</body></html>", encoding="utf-8")
    linked = b.item("attachment", "LINK2345", 1, title="Snapshot")
    db.execute("INSERT INTO itemAttachments VALUES (?, ?, 2, 'text/html', ?)", (linked, book, str(snapshot)))
    b.tag(article, "to-read")
    b.tag(book, "history")
    db.execute("INSERT INTO collections VALUES (1, 'Thesis', NULL, 1, 'COLL2345')")
    db.execute("INSERT INTO collections VALUES (2, 'Chapter 1', 1, 1, 'COLM2345')")
    db.execute("INSERT INTO collectionItems VALUES (2, ?, 0)", (article,))
    db.commit()
    db.close()
    return path
