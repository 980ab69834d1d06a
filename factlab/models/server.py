"""Run a GGUF model behind llama.cpp's OpenAI-compatible server on 127.0.0.1 (the vLLM code path, locally).

One server per model file; a running one (ours or another process's) is reused when it was started with the same
settings (context size, extra buffers, prompt cache). A server this process started is stopped when the process
exits.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from filelock import FileLock

from factlab.atomic import read_json, write_json
from factlab.models.llama_server import use_extra_buffers
from factlab.runtime import cache_root


class ServerStartError(RuntimeError):
    """The llama.cpp server did not come up; the message names the model file, the port and the log."""


@dataclass
class LocalServer:
    model_path: Path
    alias: str
    port: int
    pid: int
    owned: bool  # started by this process, so stopped at exit
    settings: dict = field(default_factory=dict)  # what it was started with (server_settings); reused only on a match

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


_RUNNING: dict[str, LocalServer] = {}


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(port: int, alias: str, timeout: float = 2.0, tries: int = 1) -> bool:
    for attempt in range(tries):
        try:
            resp = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=timeout)
            return resp.status_code == 200 and any(m.get("id") == alias for m in resp.json().get("data", []))
        except httpx.ConnectError:
            return False  # nothing listens there
        except (httpx.HTTPError, ValueError):
            if attempt + 1 < tries:
                time.sleep(1.0)  # a busy server answers slowly; do not start a second copy for that
    return False


def _listening(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:`port`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(2.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _die_with_parent() -> None:
    """Runs in the server's child process: ask Linux to SIGTERM it when the owning process dies (even by
    SIGKILL), so no orphaned server keeps the CPU busy."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def server_settings(n_ctx: int, extra_buffers: str, prompt_cache_mb: int, lora_path: str | Path | None = None) -> dict:
    """The start settings a reused server must share: the context size (a smaller one fails long prompts), the
    extra-buffer mode (`auto` avoids a crash on AMX CPUs), the prompt cache's size (memory, speed) and the LoRA
    adapter applied to every request (another adapter is another model)."""
    settings = {"n_ctx": int(n_ctx), "extra_buffers": str(extra_buffers), "prompt_cache_mb": int(prompt_cache_mb)}
    return settings | ({"lora_path": str(lora_path)} if lora_path else {})


def ensure_server(model_path: str | Path, alias: str, n_ctx: int = 4096, n_threads: int | None = None,
                  port: int | None = None, start_timeout_s: float = 180.0,
                  state_dir: str | Path | None = None, reuse_running: bool = True,
                  extra_buffers: str = "auto", prompt_cache_mb: int = 0,
                  lora_path: str | Path | None = None) -> LocalServer:
    """Return a healthy server for `model_path`, reusing a running one or starting a new one.

    Args:
        model_path: the GGUF file.
        alias: the model name the server answers to (the `model` of OpenAI requests).
        n_ctx: context window in tokens.
        n_threads: CPU threads; default all cores.
        port: fixed port; default a free one.
        start_timeout_s: how long to wait for health before giving up.
        state_dir: where the registry of running servers and their logs live.
        reuse_running: reuse a server another live process started for the same file with the same settings
            (`server_settings`). It saves a start and CPU, but that server stops when its owner exits, even mid-run
            of this process. A server started with other settings is not reused: a second one starts.
        extra_buffers: `auto` | `on` | `off`: may ggml put weights in its extra CPU buffers (AMX, repacked)?
            `auto` = not where the CPU advertises AMX, whose ggml matmul crashes there
            (`factlab.models.llama_server`).
        prompt_cache_mb: MB of KV states of earlier requests the server keeps, to restore the one sharing the
            longest prompt prefix (0 = only the previous request's; `factlab.models.llama_server`).
        lora_path: a llama.cpp GGUF LoRA adapter applied to every request (`factlab.models.lora`); None = none.

    Raises:
        ServerStartError: the model file is missing, the process died, or health did not come in time.
    """
    model_path = Path(model_path)
    use_extra_buffers(extra_buffers, ())  # a bad mode fails here, not in the server's log
    settings = server_settings(n_ctx, extra_buffers, prompt_cache_mb, lora_path)
    mine = _RUNNING.get(alias)
    if mine is not None and mine.settings == settings and mine.model_path == model_path and server_alive(mine):
        return mine  # other settings: a second server (the first may still serve an LM of this process)
    if not model_path.exists():
        raise ServerStartError(f"model file {model_path} does not exist (alias {alias!r})")
    state = Path(state_dir or cache_root() / "servers")
    state.mkdir(parents=True, exist_ok=True)
    registry = state / f"{alias}.json"
    with FileLock(str(registry) + ".lock", timeout=start_timeout_s + 30):
        if reuse_running and registry.exists():
            info = read_json(registry, {}, "llama.cpp server record")
            # A busy llama.cpp server can hold /v1/models for a whole generation: a listening port of the
            # recorded live process is enough to reuse it (a second server would only halve both).
            if info.get("model_path") == str(model_path) and info.get("settings") == settings:
                server = LocalServer(model_path, alias, info["port"], info["pid"], owned=False, settings=settings)
                if server_alive(server):
                    _RUNNING[alias] = server
                    return server
        server = _start(model_path, alias, n_ctx, n_threads or os.cpu_count() or 1, port or free_port(),
                        start_timeout_s, state / f"{alias}.log", extra_buffers, prompt_cache_mb, lora_path)
        server.settings = settings
        write_json(registry, {"model_path": str(model_path), "port": server.port, "pid": server.pid,
                              "settings": settings})
    _RUNNING[alias] = server
    return server


def _start(model_path: Path, alias: str, n_ctx: int, n_threads: int, port: int, timeout_s: float,
           log_path: Path, extra_buffers: str = "auto", prompt_cache_mb: int = 0,
           lora_path: str | Path | None = None) -> LocalServer:
    cmd = [sys.executable, "-m", "factlab.models.llama_server", "--extra_buffers", extra_buffers,
           "--prompt_cache_mb", str(int(prompt_cache_mb)),
           "--model", str(model_path), "--model_alias", alias,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(n_threads)]
    if lora_path:
        cmd += ["--lora_path", str(lora_path)]
    log = log_path.open("ab")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=_die_with_parent)
    server = LocalServer(model_path, alias, port, proc.pid, owned=True)
    atexit.register(stop_server, server)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerStartError(
                f"llama.cpp server for {model_path} on port {port} exited with code {proc.returncode}; "
                f"last log lines ({log_path}):\n{_tail(log_path)}"
            )
        if _healthy(port, alias):
            return server
        time.sleep(0.5)
    stop_server(server)
    raise ServerStartError(
        f"llama.cpp server for {model_path} on port {port} not healthy after {timeout_s:.0f}s; "
        f"log {log_path}:\n{_tail(log_path)}"
    )


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def server_alive(server: LocalServer) -> bool:
    """Whether the server's process lives and its port accepts connections: a busy llama.cpp server can hold every
    HTTP request (even /v1/models) for a whole generation, so an HTTP probe would call it down."""
    return _alive(server.pid) and _listening(server.port)


def stop_server(server: LocalServer) -> None:
    """Stop a server this process started (no-op for reused ones)."""
    if not server.owned or not _alive(server.pid):
        return
    try:
        os.killpg(server.pid, signal.SIGTERM)
        for _ in range(50):
            if not _alive(server.pid):
                break
            time.sleep(0.1)
        else:
            os.killpg(server.pid, signal.SIGKILL)
        os.waitpid(server.pid, os.WNOHANG)
    except (OSError, ChildProcessError):
        pass
    if _RUNNING.get(server.alias) is server:
        del _RUNNING[server.alias]
