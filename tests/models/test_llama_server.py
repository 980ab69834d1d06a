"""The llama.cpp server wrapper: where ggml's extra weight buffers are turned off, and that llama_cpp then loads
models with plain CPU buffers (the AMX crash it avoids needs an AMX CPU; docs/reliability.md)."""

from __future__ import annotations

import sys

import pytest

from factlab import runtime
from factlab.models import llama_server


def test_cpu_flags_reads_the_flags_line(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Xeon\nflags\t\t: fpu avx2 amx_tile amx_int8\n\nprocessor\t: 1\n")
    assert runtime.cpu_flags(info) == {"fpu", "avx2", "amx_tile", "amx_int8"}
    assert runtime.cpu_flags(tmp_path / "missing") == set()


def test_plain_buffers_reach_llama_cpps_model_params(monkeypatch):
    lib = pytest.importorskip("llama_cpp.llama_cpp")
    original = lib.llama_model_default_params
    monkeypatch.setattr(lib, "llama_model_default_params", original)  # restored after the test
    assert original().use_extra_bufts is True  # llama.cpp's default
    llama_server.disable_extra_buffers()
    llama_server.disable_extra_buffers()  # twice is once: the wrapper is not wrapped again
    assert lib.llama_model_default_params.__wrapped_default__ is original
    patched, default = lib.llama_model_default_params(), original()
    assert patched.use_extra_bufts is False
    others = [name for name, _ in type(default)._fields_ if name != "use_extra_bufts"
              and isinstance(getattr(default, name), (bool, int, float))]
    assert others and all(getattr(patched, name) == getattr(default, name) for name in others)


@pytest.mark.parametrize(("mode", "flags", "plain"), [("auto", {"avx2"}, False), ("auto", {"amx_tile"}, True),
                                                      ("off", {"avx2"}, True), ("on", {"amx_tile"}, False)])
def test_main_passes_the_rest_to_llama_cpps_server(monkeypatch, mode, flags, plain):
    import llama_cpp.server.__main__ as server_main

    seen = {}
    monkeypatch.setattr(llama_server, "cpu_flags", lambda *_: set(flags))
    monkeypatch.setattr(llama_server, "disable_extra_buffers", lambda: seen.setdefault("plain", True))
    monkeypatch.setattr(server_main, "main", lambda: seen.setdefault("argv", list(sys.argv[1:])))
    monkeypatch.setattr(sys, "argv", ["llama_server"])
    llama_server.main(["--extra_buffers", mode, "--model", "m.gguf", "--port", "8080"])
    assert seen["argv"] == ["--model", "m.gguf", "--port", "8080"]
    assert seen.get("plain", False) is plain
