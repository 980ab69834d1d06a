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


def _serve(monkeypatch, argv: list[str]):
    """Run llama_server.main(argv) through llama_cpp's own server main up to the app: returns the ModelSettings
    llama_cpp parsed from the arguments it got."""
    import llama_cpp.server.__main__ as server_main

    seen = {}
    monkeypatch.setattr(server_main, "create_app", lambda server_settings, model_settings: seen.update(
        model=model_settings[0]))
    monkeypatch.setattr(server_main.uvicorn, "run", lambda *a, **k: None)
    monkeypatch.setattr(sys, "argv", ["llama_server"])
    llama_server.main(argv)
    return seen["model"]


@pytest.mark.parametrize(("mode", "flags", "plain"), [("auto", {"avx2"}, False), ("auto", {"amx_tile"}, True),
                                                      ("off", {"avx2"}, True), ("on", {"amx_tile"}, False)])
def test_main_passes_the_rest_to_llama_cpps_server(monkeypatch, mode, flags, plain):
    seen = {}
    monkeypatch.setattr(llama_server, "cpu_flags", lambda *_: set(flags))
    monkeypatch.setattr(llama_server, "disable_extra_buffers", lambda: seen.setdefault("plain", True))
    model = _serve(monkeypatch, ["--extra_buffers", mode, "--model", "m.gguf", "--n_ctx", "1024"])
    assert (model.model, model.n_ctx) == ("m.gguf", 1024)
    assert seen.get("plain", False) is plain


@pytest.mark.parametrize("mb", [0, 512])
def test_the_prompt_cache_reaches_llama_cpps_server_settings(monkeypatch, mb):
    seen = {}
    monkeypatch.setattr(llama_server, "keep_kv_only", lambda: seen.setdefault("kv_only", True))
    model = _serve(monkeypatch, ["--prompt_cache_mb", str(mb), "--model", "m.gguf"])
    assert (model.cache, model.cache_type, model.cache_size) == ((True, "ram", 512 << 20) if mb else
                                                                 (False, "ram", model.cache_size))
    assert seen.get("kv_only", False) is bool(mb)
    # llama_cpp's server defaults to logits_all=True, which keeps every prompt token's logits in each cached
    # state (the kv-only patch skips only models without it): factlab's server turns it off
    assert model.logits_all is False


def test_logits_all_is_refused_with_the_prompt_cache_and_allowed_without(monkeypatch, capsys):
    assert _serve(monkeypatch, ["--logits_all", "true", "--model", "m.gguf"]).logits_all is True
    with pytest.raises(SystemExit):
        llama_server.main(["--prompt_cache_mb", "512", "--logits_all", "true", "--model", "m.gguf"])
    assert "--logits_all true with --prompt_cache_mb" in capsys.readouterr().err


def test_a_negative_prompt_cache_size_is_refused(capsys):
    with pytest.raises(SystemExit):
        llama_server.main(["--prompt_cache_mb", "-1", "--model", "m.gguf"])
    assert "--prompt_cache_mb -1" in capsys.readouterr().err


def test_kv_only_states_skip_the_logits_buffer_and_restore_it(monkeypatch):
    """save_state copies `_scores` (n_batch x n_vocab floats: 311 MB for Qwen2.5); the patch hands it an empty buffer
    and gives the model its own back, and load_state of such a state leaves the model's buffer as it was."""
    import numpy as np

    llama_mod = pytest.importorskip("llama_cpp.llama")
    seen = {}

    def save(self):
        seen["saved_rows"] = self._scores.shape[0]
        return llama_mod.LlamaState(input_ids=self.input_ids[:self.n_tokens].copy(), scores=self._scores.copy(),
                                    n_tokens=self.n_tokens, llama_state=b"kv", llama_state_size=2, seed=0)

    def load(self, state):
        self.scores[: state.n_tokens, :] = state.scores.copy()  # llama_cpp's first line: fails on a shape mismatch
        seen["loaded"] = state.llama_state

    monkeypatch.setattr(llama_mod.Llama, "save_state", save)
    monkeypatch.setattr(llama_mod.Llama, "load_state", load)
    llama_server.keep_kv_only()
    llama_server.keep_kv_only()  # twice is once
    assert llama_mod.Llama.save_state.__kv_only__ is True

    model = llama_mod.Llama.__new__(llama_mod.Llama)  # no model file: only the attributes the two methods read
    model._logits_all, model._n_vocab, model.n_tokens = False, 8, 3
    model.input_ids = np.arange(6, dtype=np.intc)
    buffer = model.scores = np.ones((4, 8), dtype=np.single)
    state = model.save_state()
    assert seen["saved_rows"] == 0 and state.scores.shape == (0, 8) and list(state.input_ids) == [0, 1, 2]
    assert model.scores is buffer
    model.load_state(state)
    assert seen["loaded"] == b"kv" and model.scores is buffer and float(buffer.sum()) == 32.0
