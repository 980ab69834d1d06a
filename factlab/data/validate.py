# python -m factlab.data.validate datasets/bundled/cases_zh.jsonl [more.jsonl ...]
"""Validate case files (or corpus files) and print a summary; exit 1 with the first error.

A file whose first row has `source_id` and no `case_id` is a corpus file. A case file is checked field by field
and for consistency (sentences inside `text`, paragraph offsets, evidence inside an existing source page).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from factlab.data.cases import load_cases, load_corpus
from factlab.data.errors import DataError
from factlab.data.registry import summarise
from factlab.data.rows import read_rows


def is_corpus_file(path: Path | str) -> bool:
    """True when the first row looks like a source record (source_id, no case_id)."""
    for _, row in read_rows(path, "jsonl", max_rows=1):
        return isinstance(row, dict) and "source_id" in row and "case_id" not in row
    return False


def corpus_summary(records: list[dict]) -> dict[str, dict[str, int]]:
    """Counts of source records per lang / vertical / tier.

    >>> corpus_summary([{"lang": "zh", "tier": 1}])["tier"]
    {'1': 1}
    """
    summary: dict[str, dict[str, int]] = {"total": {"sources": len(records)}}
    for key in ("lang", "vertical", "tier"):
        summary[key] = dict(Counter(str(record.get(key, "(none)")) for record in records).most_common())
    return summary


def validate_file(path: Path | str) -> dict:
    """Validate one case or corpus file and return its summary.

    Raises:
        DataError: the first problem, naming file, line and field.
    """
    if is_corpus_file(path):
        return {"file": str(path), "kind": "corpus", **corpus_summary(load_corpus(path))}
    summary = summarise(load_cases(path))
    return {"file": str(path), "kind": "cases", **{key: value for key, value in summary.items() if key != "split"}}


def main(argv: list[str] | None = None) -> int:
    """Validate the files named on the command line; 0 when all are valid, 1 on the first error."""
    parser = argparse.ArgumentParser(prog="python -m factlab.data.validate", description=__doc__)
    parser.add_argument("files", nargs="+", type=Path, help="case or corpus JSONL files")
    args = parser.parse_args(argv)
    for path in args.files:
        try:
            summary = validate_file(path)
        except (DataError, OSError) as exc:
            print(f"INVALID {exc}", file=sys.stderr)
            return 1
        print(f"OK {path}")
        for key, counts in summary.items():
            if key not in ("file", "kind"):
                print(f"  {key}: {json.dumps(counts, ensure_ascii=False)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
