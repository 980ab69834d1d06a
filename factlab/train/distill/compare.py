"""Distilled classifiers side by side on their test predictions, with intervals: the table of
`python scripts/distill_table.py` (its command line is `main`).

Each run's `test_predictions.jsonl` (written by `classifier.evaluate_and_register`) holds, per test row, the gold,
the teacher's target and the classifier's prediction. From them, per run: the classifier's accuracy and macro-F1
against the gold with percentile bootstrap intervals resampling cases (the sentences of one case go together), per
language; the teacher's own accuracy against the gold on the same rows (teacher=lm labels the test split too, so this
is the stage program the classifier replaces, scored on the same rows; teacher=gold reads 1.0); the classifier's
paired gain over its teacher, and over a reference run (e.g. the same recipe trained on the gold), on the rows both
scored.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

from factlab.data.errors import CaseError
from factlab.data.jsonl import iter_jsonl
from factlab.metrics import bootstrap_ci, macro_f1, markdown_table, paired_gain


class PredictionsError(ValueError):
    """A test_predictions.jsonl that cannot be read: names the file, the line and the field."""


REQUIRED = ("gold", "teacher", "predicted", "lang", "case_id", "text")


def read_predictions(path: str | Path) -> list[dict]:
    """The rows of one run's test_predictions.jsonl (a file, or the run's work folder holding it)."""
    path = Path(path)
    if path.is_dir():
        path = path / "test_predictions.jsonl"
    if not path.is_file():
        raise PredictionsError(f"{path}: no such file (a distill run's work folder holds test_predictions.jsonl)")
    rows = []
    try:
        for where, row in iter_jsonl(path):
            missing = [field for field in REQUIRED if field not in row]
            if missing:
                raise PredictionsError(f"{where}: missing field {missing[0]!r}")
            rows.append(row)
    except CaseError as error:  # a line that is not JSON
        raise PredictionsError(f"{error.where}: {error.problem}") from None
    if not rows:
        raise PredictionsError(f"{path}: no rows")
    return rows


def row_key(row: Mapping) -> tuple:
    """What makes two runs' rows the same test row."""
    return row["case_id"], row["text"], row.get("pair")


def _by_case(rows: Sequence[Mapping]) -> list[list[Mapping]]:
    cases: dict[object, list[Mapping]] = {}
    for row in rows:
        cases.setdefault(row["case_id"], []).append(row)
    return list(cases.values())


def _scores(field: str, labels: Sequence[str]):
    def statistic(cases: Sequence[Sequence[Mapping]]) -> dict[str, float | None]:
        rows = [row for case in cases for row in case if row[field] is not None]
        if not rows:
            return {"accuracy": None, "macro_f1": None}
        gold = [row["gold"] for row in rows]
        pred = [row[field] for row in rows]
        return {"accuracy": sum(g == p for g, p in zip(gold, pred, strict=True)) / len(rows),
                "macro_f1": macro_f1(gold, pred, labels)}
    return statistic


def _fmt(value: float | None, interval: tuple[float, float] | None = None, sign: bool = False) -> str:
    if value is None:
        return "-"
    text = f"{value:+.3f}" if sign else f"{value:.3f}"
    if interval is not None:
        low, high = interval
        text += f" [{low:+.3f}, {high:+.3f}]" if sign else f" [{low:.3f}, {high:.3f}]"
    return text


def _gain(pairs_by_case: Sequence[Sequence[tuple[float, float]]], samples: int, seed: int, confidence: float):
    if not any(pairs_by_case):
        return None, None
    return paired_gain(pairs_by_case, samples, seed, confidence)


def compare_runs(runs: Mapping[str, Sequence[Mapping]], reference: str | None = None, samples: int = 2000,
                 seed: int = 0, confidence: float = 0.95) -> dict:
    """Per run: n, accuracy and macro-F1 against the gold with intervals (resampling cases), per-language accuracy,
    the teacher's accuracy on the same rows, the paired gain over the teacher and over `reference`.

    Args:
        runs: name -> test prediction rows (`read_predictions`).
        reference: a name in `runs` whose classifier the others are paired against (None = none).
        samples, seed, confidence: the bootstrap's.

    Returns:
        {"rows": per-run dicts, "table": markdown}.

    >>> a = [{"case_id": i, "text": "t", "pair": None, "gold": "y", "teacher": "y", "predicted": "y", "lang": "en"}
    ...      for i in range(4)]
    >>> b = [dict(r, teacher="n", predicted="n" if r["case_id"] < 2 else "y") for r in a]
    >>> out = compare_runs({"gold": a, "lm": b}, reference="gold", samples=50)
    >>> [(r["name"], r["accuracy"], r["teacher_accuracy"], r["gain_over_reference"]) for r in out["rows"]]
    [('gold', 1.0, 1.0, None), ('lm', 0.5, 0.0, -0.5)]
    """
    if reference is not None and reference not in runs:
        raise ValueError(f"reference {reference!r} is not one of the runs: {', '.join(runs)}")
    labels = sorted({row["gold"] for rows in runs.values() for row in rows if row["gold"] is not None})
    ref = {row_key(row): row for row in runs[reference]} if reference else {}
    out = []
    for name, rows in runs.items():
        rows = [row for row in rows if row["gold"] in labels]
        cases = _by_case(rows)
        mine = _scores("predicted", labels)
        point = mine(cases)
        ci = bootstrap_ci(cases, mine, ["accuracy", "macro_f1"], samples, seed, confidence)
        taught = [row for row in rows if row["teacher"] is not None]
        teacher = _scores("teacher", labels)
        teacher_point = teacher(cases)
        teacher_ci = bootstrap_ci(cases, teacher, ["accuracy"], samples, seed, confidence)
        over_teacher = _gain([[(float(r["teacher"] == r["gold"]), float(r["predicted"] == r["gold"]))
                               for r in case if r["teacher"] is not None] for case in cases], samples, seed, confidence)
        over_reference = (None, None)
        if reference and name != reference:
            pairs = [[(float(ref[row_key(r)]["predicted"] == r["gold"]), float(r["predicted"] == r["gold"]))
                      for r in case if row_key(r) in ref] for case in cases]
            over_reference = _gain(pairs, samples, seed, confidence)
        by_lang = {}
        for lang in sorted({row["lang"] for row in rows}):
            subset = [row for row in rows if row["lang"] == lang]
            by_lang[lang] = (sum(r["predicted"] == r["gold"] for r in subset) / len(subset), len(subset))
        out.append({
            "name": name, "n": len(rows), "cases": len(cases), "accuracy": point["accuracy"],
            "accuracy_ci": ci.get("accuracy"), "macro_f1": point["macro_f1"], "macro_f1_ci": ci.get("macro_f1"),
            "by_lang": by_lang, "teacher_rows": len(taught), "teacher_accuracy": teacher_point["accuracy"],
            "teacher_accuracy_ci": teacher_ci.get("accuracy"), "gain_over_teacher": over_teacher[0],
            "gain_over_teacher_ci": over_teacher[1], "gain_over_reference": over_reference[0],
            "gain_over_reference_ci": over_reference[1],
        })
    header = ["run", "test rows (cases)", "accuracy", "macro-F1", "by language", "teacher on the same rows",
              "classifier - teacher", f"classifier - {reference}" if reference else "classifier - reference"]
    table = markdown_table(header, [[
        r["name"], f"{r['n']} ({r['cases']})", _fmt(r["accuracy"], r["accuracy_ci"]),
        _fmt(r["macro_f1"], r["macro_f1_ci"]),
        ", ".join(f"{lang} {acc:.3f} ({n})" for lang, (acc, n) in r["by_lang"].items()),
        f"{_fmt(r['teacher_accuracy'], r['teacher_accuracy_ci'])} ({r['teacher_rows']} labelled)",
        _fmt(r["gain_over_teacher"], r["gain_over_teacher_ci"], sign=True),
        _fmt(r["gain_over_reference"], r["gain_over_reference_ci"], sign=True),
    ] for r in out])
    return {"rows": out, "table": table}


def main(argv: list[str] | None = None) -> dict:
    """scripts/distill_table.py: `name=<work folder or test_predictions.jsonl>` per run -> the table, printed (and
    written to `--out`); returns `compare_runs`'s result."""
    parser = argparse.ArgumentParser(description="Distilled classifiers side by side on their test predictions: "
                                                 "accuracy and macro-F1 against the gold with 95% bootstrap intervals, "
                                                 "the teacher's accuracy, and paired gains.")
    parser.add_argument("runs", nargs="+", metavar="name=path")
    parser.add_argument("--reference", help="the run every other classifier is paired against")
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--out", help="also write the table to this markdown file")
    args = parser.parse_args(argv)
    runs = {}
    for spec in args.runs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            parser.error(f"{spec!r}: expected name=path")
        runs[name] = read_predictions(path)
    out = compare_runs(runs, reference=args.reference, samples=args.samples)
    print(out["table"])
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(out["table"] + "\n", encoding="utf-8")
    return out
