"""Files that are never seen half-written and builds that happen once, for every writer in factlab.

A writer writes to a temporary file with a unique name next to the target and renames it over the target
(`os.replace` is atomic on one file system), so a reader sees the old file or the new one, never a torn one, and two
writers never write into the same temporary file. `build_lock` is an inter-process file lock for work that must run
once (assembling a model, building an index): the second process waits, then finds the work done.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def atomic_writer(path: str | Path, binary: bool = False) -> Iterator[IO]:
    """Open a unique temporary file beside `path`; on a clean exit it is flushed, synced and renamed over `path`,
    on an error it is removed and `path` is left as it was.

    >>> import tempfile; target = Path(tempfile.mkdtemp()) / "a.txt"
    >>> with atomic_writer(target) as fh:
    ...     _ = fh.write("whole")
    >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
    ('whole', ['a.txt'])
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path: str | Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically; return the path."""
    with atomic_writer(path) as fh:
        fh.write(text)
    return Path(path)


def write_json(path: str | Path, value: Any, **dumps) -> Path:
    """Write `value` as JSON (UTF-8, Chinese kept readable) to `path` atomically; return the path."""
    return write_text(path, json.dumps(value, ensure_ascii=False, **dumps) + "\n")


def read_json(path: str | Path, default: Any, what: str) -> Any:
    """The JSON in `path`, or `default` when the file is missing or unreadable (a torn file from an older run is
    moved aside to `<name>.torn` with a warning naming `what` it held), so one bad file never blocks a rerun."""
    path = Path(path)
    if not path.exists():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        torn = path.with_name(path.name + ".torn")
        logger.warning("%s %s is unreadable (%s); moved aside to %s and starting afresh", what, path, exc, torn)
        os.replace(path, torn)
        return default


def build_lock(path: str | Path, timeout: float = -1):
    """An inter-process lock for building `path` once (`<path>.lock`); `timeout` -1 waits as long as it takes."""
    from filelock import FileLock

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(path) + ".lock", timeout=timeout)
