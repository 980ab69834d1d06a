"""Two runs at once must not break each other (issue 13.4): concurrent builders of one index folder, a reader while
a build runs, and concurrent first-time model assemblies. Real processes, real files."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _corpus(folder: Path, n: int = 120) -> Path:
    folder.mkdir(parents=True)
    for i in range(n):
        text = " ".join(f"Source {i} reports value {i * 7} measured in {1900 + i} by team {j}." for j in range(30))
        (folder / f"s{i:03d}.md").write_text(f"---\ntitle: Source {i}\n---\n{text}\n", encoding="utf-8")
    return folder


def _run_all(codes: list[str], timeout: int = 300) -> list[subprocess.CompletedProcess]:
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for code in codes]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=timeout)
        out.append(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
    return out


BUILD = textwrap.dedent("""
    from factlab.retrieval.config import load_retrieval_config
    from factlab.retrieval.encoders import HashingEncoder
    from factlab.retrieval.retriever import Retriever
    cfg = load_retrieval_config(["retrieval.index.progress=false"])
    for _ in range({rounds}):
        retriever = Retriever.build({sources!r}, {index!r}, cfg, encoder=HashingEncoder(64))
        assert len(retriever.index.chunks) > 100, len(retriever.index.chunks)
        reopened = Retriever.open({index!r}, cfg, encoder=HashingEncoder(64))
        assert len(reopened.index.chunks) == len(retriever.index.chunks)
    print("ok")
""")


def test_concurrent_builders_and_readers_of_one_index_folder(tmp_path):
    sources = _corpus(tmp_path / "sources")
    index = tmp_path / "index"
    runs = _run_all([BUILD.format(rounds=3, sources=str(sources), index=str(index)) for _ in range(3)])
    for run in runs:
        assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]
    leftovers = [p.name for p in index.iterdir() if p.name.endswith(".tmp")]
    assert not leftovers, f"temporary files left behind: {leftovers}"


ASSEMBLE = textwrap.dedent("""
    import sys
    sys.path.insert(0, {parts!r})
    from factlab.models.assemble import assemble
    path = assemble(["fakepart1", "fakepart2", "fakepart3"], "fake.gguf", {sha!r}, cache_dir={cache!r})
    print(path.stat().st_size)
""")


@pytest.mark.parametrize("trial", range(3))
def test_concurrent_first_time_assemblies_of_one_model(tmp_path, trial):
    import hashlib

    parts = tmp_path / "parts"
    whole = b""
    for i in (1, 2, 3):
        package = parts / f"fakepart{i}"
        package.mkdir(parents=True)
        data = bytes([i]) * (6 << 20)  # 6 MiB a chunk: long enough for the runs to overlap
        whole += data
        (package / "part.bin").write_bytes(data)
        (package / "__init__.py").write_text(
            "from pathlib import Path\n\ndef get_part_path():\n    return Path(__file__).with_name('part.bin')\n")
    sha = hashlib.sha256(whole).hexdigest()
    cache = tmp_path / "cache"
    runs = _run_all([ASSEMBLE.format(parts=str(parts), sha=sha, cache=str(cache)) for _ in range(3)])
    for run in runs:
        assert run.returncode == 0 and run.stdout.strip() == str(len(whole)), run.stderr[-2000:]
    assert hashlib.sha256((cache / "fake.gguf").read_bytes()).hexdigest() == sha
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) == ["fake.gguf", "fake.gguf.sha256"]
