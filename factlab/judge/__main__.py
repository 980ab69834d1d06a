"""Score claim-evidence pairs with the shipped judge or any other:

    python -m factlab.judge --input pairs.jsonl --output scored.jsonl [--model factlab:judge-e5s-v1 | <folder>]

Reads JSONL rows with at least `claim` and `evidence` (strings; other fields pass through) and writes the same rows in
the same order with `relation` (argmax over support, partial_support, contradict, irrelevant, insufficient), `probs`
(relation -> calibrated probability), `p_support` and `supported` (p_support >= the model's fitted threshold). Long
evidence is read in windows, as in serving. A bad row stops the run before any scoring, naming its line and field.
Exit status: 0 scored; 2 bad input or model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from factlab.data.errors import CaseError
from factlab.data.jsonl import iter_jsonl
from factlab.judge import DEFAULT_JUDGE


class PairInputError(ValueError):
    """A row of the input that is not a JSON object with string `claim` and `evidence`."""


def read_pairs(path: Path) -> list[dict]:
    """The rows of a JSONL file of pairs; raises PairInputError naming file, line and field."""
    rows = []
    if not path.is_file():
        raise PairInputError(f"{path}: no such file")
    try:
        for where, row in iter_jsonl(path):
            if not isinstance(row, dict):
                raise PairInputError(f"{where}: expected a JSON object, got {type(row).__name__}")
            for field in ("claim", "evidence"):
                if not isinstance(row.get(field), str) or not row[field].strip():
                    raise PairInputError(f"{where}: field {field!r} must be a non-empty string")
            rows.append(row)
    except CaseError as exc:  # a line that is not JSON
        raise PairInputError(f"{exc.where}: {exc.problem}") from None
    return rows


def score_rows(rows: list[dict], judge, batch: int = 256, progress: bool = True) -> list[dict]:
    """`rows` with the judge's fields added, in order (scored in chunks of `batch` with a progress bar)."""
    from tqdm import tqdm

    out = []
    with tqdm(total=len(rows), desc="judge", unit="pair", disable=not progress, mininterval=2) as bar:
        for start in range(0, len(rows), batch):
            chunk = rows[start:start + batch]
            scores = judge.score([r["claim"] for r in chunk], [r["evidence"] for r in chunk])
            out += [{**row, **score} for row, score in zip(chunk, scores, strict=True)]
            bar.update(len(chunk))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m factlab.judge", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, type=Path, help="JSONL with claim and evidence per row")
    parser.add_argument("--output", required=True, type=Path, help="JSONL to write (atomically)")
    parser.add_argument("--model", default=DEFAULT_JUDGE,
                        help=f"a shipped name, folder or MLflow URI ({DEFAULT_JUDGE})")
    parser.add_argument("--int8", action="store_true", help="dynamic int8 Linear layers (faster, see the model card)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    from factlab.atomic import atomic_writer
    from factlab.judge.model import Judge
    from factlab.runtime import ModelSourceError, prepare_offline_env
    from factlab.tracking.refs import ModelRefError, resolve_model

    prepare_offline_env()
    try:
        rows = read_pairs(args.input)
        judge = Judge(resolve_model(args.model), int8=args.int8)
    except (PairInputError, ModelRefError, ModelSourceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    scored = score_rows(rows, judge, progress=not args.no_progress)
    with atomic_writer(args.output) as fh:
        for row in scored:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"scored {len(scored)} pairs with {args.model} -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
