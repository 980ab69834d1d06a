"""Failure shows in the exit status, once, in one line (issue 13.3 and 13.6): verify.py exits 1 when it could not
check the document and 2 on bad input; a dead or hung LM server is detected once; an unparsable LM answer is not
replayed from the cache; an API key an endpoint echoes back reaches no card, report or MLflow store. Real processes
against a real (scripted) HTTP server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dspy
import pytest
from fake_openai import FakeOpenAI, chat_answer

from factlab.models.errors import call_safely
from factlab.models.lm import openai_lm
from factlab.programs.checkworthy import CheckWorthiness
from factlab.runtime import configure_lm_cache

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-live-SECRET0123456789"


def verify(*overrides: str, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "verify.py", *overrides], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


@pytest.fixture
def small_world(penicillin_world):
    return penicillin_world


def one_line_error(run: subprocess.CompletedProcess) -> str:
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert lines and lines[-1].startswith("error: "), run.stderr[-3000:]
    return lines[-1]


@pytest.mark.slow
def test_a_missing_input_value_is_one_line_and_exit_2(small_world):
    _, sources = small_world
    run = verify(f"sources={sources}")
    assert run.returncode == 2 and "input" in one_line_error(run)


@pytest.mark.slow
@pytest.mark.parametrize(("content", "expected"), [
    ("报告".encode("gbk"), "not valid UTF-8 at byte 0"),
    (b"\x00" * 64, "control character U+0000 at line 1, column 1"),
    (b"   \n\n", "empty or whitespace only"),
])
def test_a_bad_input_file_is_one_line_naming_file_and_place(small_world, tmp_path, content, expected):
    _, sources = small_world
    bad = tmp_path / "bad.md"
    bad.write_bytes(content)
    run = verify(f"input={bad}", f"sources={sources}", f"output_dir={tmp_path / 'out'}")
    line = one_line_error(run)
    assert run.returncode == 2 and str(bad) in line and expected in line


@pytest.mark.slow
def test_a_document_over_the_size_limit_is_refused_before_any_model_starts(small_world, tmp_path):
    doc, sources = small_world
    run = verify(f"input={doc}", f"sources={sources}", "max_document_chars=20", f"output_dir={tmp_path / 'o'}")
    assert run.returncode == 2 and "more than max_document_chars=20" in one_line_error(run)


@pytest.mark.slow
def test_a_headings_only_document_starts_no_model(small_world, tmp_path):
    _, sources = small_world
    doc = tmp_path / "headings.md"
    doc.write_text("# Title\n\n## Part one\n\n## Part two\n", encoding="utf-8")
    # an LM that cannot start (no such endpoint): the run must not need it
    run = verify(f"input={doc}", f"sources={sources}", f"output_dir={tmp_path / 'out'}", "checker=professional",
                 "lm@student=openai", "student.model=x", "student.api_base=http://127.0.0.1:9/v1",
                 env={"OPENAI_API_KEY": SECRET})
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads((tmp_path / "out" / "cards.json").read_text())["summary"]["claims"] == 0


@pytest.mark.slow
def test_an_unreachable_endpoint_is_one_line_at_the_start(small_world, tmp_path):
    doc, sources = small_world
    run = verify(f"input={doc}", f"sources={sources}", f"output_dir={tmp_path / 'out'}", "checker=professional",
                 "lm@student=openai", "student.model=x", "student.api_base=http://127.0.0.1:9/v1",
                 env={"OPENAI_API_KEY": SECRET})
    assert run.returncode == 2 and "no answer from http://127.0.0.1:9/v1" in one_line_error(run)


@pytest.mark.slow
def test_every_claim_in_error_exits_1_and_the_echoed_key_reaches_nothing(small_world, tmp_path):
    """HTTP 401 whose message echoes the key (as OpenAI's does): exit 1, and the key is in no output or store."""
    doc, sources = small_world
    unauthorised = (401, {"error": {"message": f"Incorrect API key provided: {SECRET}.", "type": "invalid_request",
                                    "code": "invalid_api_key"}})
    out, store = tmp_path / "out", tmp_path / "mlruns"
    with FakeOpenAI([unauthorised]) as server:
        run = verify(f"input={doc}", f"sources={sources}", f"output_dir={out}", "checker=professional",
                     "lm@student=openai", "student.model=fake", f"student.api_base={server.api_base}",
                     "student.route=hosted_vllm",
                     "student.num_retries=0", "claim_cache.enabled=false", "tracking=mlflow",
                     f"tracking.tracking_uri=sqlite:///{store / 'mlflow.db'}", f"tracking.artifact_root={store}",
                     env={"OPENAI_API_KEY": SECRET})
    line = one_line_error(run)
    assert run.returncode == 1 and "check-worthy claims failed" in line, run.stderr[-2000:]
    cards = json.loads((out / "cards.json").read_text())
    assert cards["summary"]["errors"] >= 1
    leaked = [str(p) for root in (out, store) for p in root.rglob("*") if p.is_file() and SECRET.encode() in
              p.read_bytes()]
    assert not leaked, f"the API key reached {leaked}"
    assert SECRET not in run.stdout + run.stderr


def test_a_hung_server_is_detected_once_not_paid_per_call(monkeypatch):
    """The server answers the start-up probe, then hangs: one call times out, one probe confirms, the rest fail
    at once (the server sees one chat request, not one per call)."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with FakeOpenAI(["hang"], models_hang_after=1, hang_s=20) as server:
        handle = openai_lm("fake", "fake", server.api_base, "OPENAI_API_KEY", dspy.JSONAdapter(), timeout_s=1.0,
                           num_retries=0, route="hosted_vllm", cache=False)
        handle.breaker.probe_timeout_s = 1.0
        program = CheckWorthiness()
        with handle.context():
            errors = [call_safely("checkworthy", program, handle.breaker, text=f"Claim {i}.")[1] for i in range(6)]
        assert all(e is not None for e in errors)
        assert errors[0].kind == "timeout" and all(e.kind == "connection" and "is down" in e.message
                                                   for e in errors[1:])
        assert len(server.chat_requests) == 1 and handle.breaker.probes == 1


def test_an_unparsable_answer_is_not_replayed_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    configure_lm_cache(tmp_path / "dspy")
    good = json.dumps({"checkworthy": True, "reason": "a date"})
    with FakeOpenAI([chat_answer("I am not JSON at all"), chat_answer(good)]) as server:
        handle = openai_lm("fake", "fake", server.api_base, "OPENAI_API_KEY", dspy.JSONAdapter(), num_retries=0,
                           route="hosted_vllm", cache=True)
        program = CheckWorthiness()
        with handle.context():
            first = call_safely("checkworthy", program, handle.breaker, text="Penicillin was found in 1928.")
            asked = len(server.chat_requests)
            second = call_safely("checkworthy", program, handle.breaker, text="Penicillin was found in 1928.")
    assert first[1] is not None and first[1].kind == "parse"
    assert second[1] is None and second[0].checkworthy is True
    assert len(server.chat_requests) == asked + 1  # the rerun asked the LM again
