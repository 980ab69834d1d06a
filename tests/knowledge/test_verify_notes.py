"""verify.py writes its cards back as knowledge notes when the run says so (`notes=knowledge`), and the loop guard
holds end to end: re-importing the library with factlab's note store brings none of those notes back as evidence until
a person accepts one."""

from __future__ import annotations

import json
from pathlib import Path

from factlab.checkers.job import run
from factlab.config import compose_config
from factlab.knowledge.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_verify_writes_notes_that_come_back_only_once_accepted(zotero_db, tmp_path, capsys, monkeypatch):
    kb, store = tmp_path / "kb", tmp_path / "notes.sqlite"
    assert main(["import", "--zotero", str(zotero_db), "--out", str(kb)]) == 0
    document = tmp_path / "history.md"
    document.write_text("Alexander Fleming discovered penicillin in 1938 at St Mary's Hospital.\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "golden"))  # scripted_lm: the professional checker, no model
    monkeypatch.setenv("FACTLAB_CACHE", str(tmp_path / "cache"))
    cfg = compose_config("verify", [f"input={document}", f"sources={kb}", f"output_dir={tmp_path / 'out'}",
                                    "progress=false", "checker=professional", "claim_cache.enabled=false",
                                    "student._target_=scripted_lm.scripted_lm", "notes=knowledge",
                                    f"notes.library={kb}", f"notes.store={store}"])
    summary = run(cfg)
    written = summary["notes"]["notes"]
    assert written >= 1 and summary["notes"]["created"] == written  # one per library item its evidence used
    assert json.loads((tmp_path / "out" / "run.json").read_text())["notes"]["task"] == "verify/history.md"
    capsys.readouterr()

    assert main(["import", "--zotero", str(zotero_db), "--out", str(tmp_path / "kb2"), "--notes", str(store)]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert (counts["notes_as_sources"], counts["notes_withheld"]) == (0, written)  # factlab's own note is not evidence

    item = next(e for e in json.loads((kb / "items.json").read_text("utf-8")) if e["item_key"] == "JRNL2345")
    assert main(["accept", "--store", str(store), "--library-id", item["library_id"], "--item-key", "JRNL2345",
                 "--task", "verify/history.md", "--by", "a reviewer"]) == 0
    capsys.readouterr()
    assert main(["import", "--zotero", str(zotero_db), "--out", str(tmp_path / "kb3"), "--notes", str(store)]) == 0
    assert json.loads(capsys.readouterr().out)["notes_as_sources"] == 1  # a person accepted it: now it may be


def test_notes_are_off_by_default():
    assert compose_config("verify", ["input=x", "sources=y"]).notes is None
