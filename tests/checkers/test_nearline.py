"""The nearline checker: documents in (folder or JSONL, bad lines named), resume state read back (a torn last line
cut off), and, on a real local Ray runtime, a run killed with SIGKILL resumes without redoing a finished document."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factlab.checkers.nearline import finished, read_documents
from factlab.textio import InputError


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_documents_come_from_a_folder_or_a_jsonl(tmp_path):
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "b.md").write_text("Second.", encoding="utf-8")
    (folder / "sub" / "a.txt").write_text("First.", encoding="utf-8")
    (folder / "skip.pdf").write_bytes(b"%PDF")
    assert [(d.doc_id, d.text) for d in read_documents(folder)] == [("b.md", "Second."), ("sub/a.txt", "First.")]
    rows = write_jsonl(tmp_path / "d.jsonl", [{"id": "x", "text": "One."}, {"id": "y", "text": "Two."}])
    assert [d.doc_id for d in read_documents(rows)] == ["x", "y"]


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "d.jsonl:2: not valid JSON"),
    ({"id": "z"}, "d.jsonl:2: field 'text' must be a non-empty string"),
    ({"id": "", "text": "t"}, "d.jsonl:2: field 'id' must be a non-empty string"),
    ({"id": "x", "text": "again"}, "d.jsonl:2: field 'id' 'x' repeats an earlier line"),
])
def test_a_bad_line_is_named(tmp_path, line, message):
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": "x", "text": "One."}, line])
    with pytest.raises(InputError, match=message):
        list(read_documents(path))


def test_finished_ids_survive_a_torn_last_line(tmp_path):
    results = tmp_path / "results.jsonl"
    results.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c", "rep', encoding="utf-8")
    assert finished(results) == {"a", "b"}
    assert results.read_text(encoding="utf-8") == '{"id": "a"}\n{"id": "b"}\n'  # the torn write is gone
    assert finished(tmp_path / "absent.jsonl") == set()


DRIVER = r'''
import json, sys, time
from pathlib import Path
from factlab.checkers import nearline
from factlab.cards.build import build_report
from factlab.config import compose_config

LOG = Path(sys.argv[2])

class SlowWorker:
    """A fake checker: records every document it starts, takes 0.4 s each."""
    def __init__(self, cfg):
        pass
    def check(self, doc_id, text):
        with LOG.open("a") as fh:
            fh.write(doc_id + "\n")
        time.sleep(0.4)
        report = build_report(document=doc_id, business="default", paragraphs=[])
        return {"id": doc_id, "checker": "fake", "seconds": 0.4, "summary": report.summary, "report": report.to_dict()}

cfg = compose_config("verify", ["checker=nearline", f"input={sys.argv[1]}", "sources=unused",
                                f"output_dir={sys.argv[3]}", "progress=false", "checker.ray.num_cpus_per_worker=1",
                                "checker.ray.max_in_flight=1"])
print(json.dumps(nearline.run(cfg, worker=SlowWorker)))
'''


@pytest.mark.slow
def test_a_killed_run_resumes_without_redoing_finished_documents(tmp_path):
    docs = write_jsonl(tmp_path / "docs.jsonl", [{"id": f"d{i:02d}", "text": f"Text {i}."} for i in range(12)])
    log, out = tmp_path / "started.log", tmp_path / "out"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER, encoding="utf-8")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    first = subprocess.Popen([sys.executable, str(script), str(docs), str(log), str(out)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    results = out / "results.jsonl"
    deadline = time.time() + 240
    while time.time() < deadline and (not results.exists() or len(results.read_text().splitlines()) < 3):
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)  # the driver and the Ray processes it started
    first.wait()
    done_before = finished(results)
    assert 3 <= len(done_before) < 12, "the run must be killed part-way"
    second = subprocess.run([sys.executable, str(script), str(docs), str(log), str(out)], env=env,
                            capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    summary = json.loads(second.stdout.strip().splitlines()[-1])
    assert summary["skipped_done"] == len(done_before) and summary["checked"] == 12 - len(done_before)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == [f"d{i:02d}" for i in range(12)]  # each document exactly once
    started_again = log.read_text().splitlines()[len(log.read_text().splitlines()) - summary["checked"]:]
    assert not set(started_again) & done_before, "a finished document was redone"
