"""`python -m factlab.data.validate`: summary and exit 0 on good files, exit 1 with file/line/field on bad ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from factlab.data.validate import main

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_good_case_and_corpus_files_print_a_summary(case_dir: Path, capsys) -> None:
    assert main([str(case_dir / "cases.jsonl"), str(case_dir / "corpus.jsonl")]) == 0
    out = capsys.readouterr().out
    assert f"OK {case_dir / 'cases.jsonl'}" in out
    assert 'lang: {"en": 1, "zh": 1}' in out
    assert 'label: {"correct": 2, "unverifiable": 1}' in out
    assert 'error_type: {"correct": 1, "(none)": 1}' in out
    assert 'vertical: {"medical": 1, "(none)": 1}' in out
    assert 'total: {"sources": 2}' in out  # the corpus file, detected by its fields


def test_bad_file_exits_1_naming_file_line_field(case_dir: Path, en_case, write_jsonl, capsys) -> None:
    en_case["claims"][0]["evidence"][0]["text"] = "Penicillin was invented in 1999."
    path = write_jsonl(case_dir / "bad.jsonl", [en_case])
    assert main([str(case_dir / "cases.jsonl"), str(path)]) == 1
    err = capsys.readouterr().err
    assert f"INVALID {path} line 1: claims[0].evidence[0].text: expected a verbatim substring of page 1" in err


def test_missing_file_exits_1(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "nope.jsonl")]) == 1
    assert "nope.jsonl" in capsys.readouterr().err


def test_runs_as_a_module(case_dir: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "factlab.data.validate", str(case_dir / "cases.jsonl")],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "OK" in done.stdout
