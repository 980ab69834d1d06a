"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for reliability tests: it answers /v1/models, and each
/v1/chat/completions request with the next scripted reply (a status and body, a chat answer, or a hang), recording
every request. Real sockets, real HTTP: what DSPy / LiteLLM see is what a broken vLLM or hosted endpoint sends."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def chat_answer(content: str) -> tuple[int, dict]:
    return 200, {"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": content}}],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


class FakeOpenAI:
    """Context manager: `with FakeOpenAI(replies) as server: server.api_base ...`.

    Args:
        replies: per chat request, in order, one of `(status, body)`, `"hang"`; the last one repeats.
        models_hang_after: after this many /models requests, /models hangs too (None = never).
    """

    def __init__(self, replies: list, models_hang_after: int | None = None, hang_s: float = 30.0) -> None:
        self.replies, self.models_hang_after, self.hang_s = list(replies), models_hang_after, hang_s
        self.chat_requests: list[dict] = []
        self.model_requests = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, body) -> None:
                data = json.dumps(body).encode() if not isinstance(body, bytes) else body
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 (http.server's naming)
                with fake._lock:
                    fake.model_requests += 1
                    hang = fake.models_hang_after is not None and fake.model_requests > fake.models_hang_after
                if hang:
                    time.sleep(fake.hang_s)
                    return
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.chat_requests.append(body)
                    reply = fake.replies[min(len(fake.chat_requests), len(fake.replies)) - 1]
                if reply == "hang":
                    time.sleep(fake.hang_s)
                    return
                self._send(*reply)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.api_base = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


if __name__ == "__main__":  # `python fake_openai.py <replies.json> <port file>`: serve until killed (subprocess tests)
    import sys
    from pathlib import Path

    script = json.loads(Path(sys.argv[1]).read_text())
    with FakeOpenAI([tuple(r) if isinstance(r, list) else r for r in script]) as server:
        Path(sys.argv[2]).write_text(server.api_base)
        while True:
            time.sleep(1)
