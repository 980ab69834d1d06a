"""The vertical checkers (factlab/retrieval/verticals.py) on their gold (datasets/layers/verticals_gold.jsonl: claims in
English and Chinese for the link checker, a phone-number lookup table and the quotation matcher, each with what a
user expects: whether the checker applies, the relation it answers, whether it sends the claim to review, and the span
its hint must name), with the fixtures in datasets/layers/verticals/ (phones.csv, references/*.txt, sources.json).

Printed table, per checker and language: cases, applies-accuracy, relation accuracy on the cases the gold says the
checker applies to, hints right (a hint naming the gold keyword, and no hint where the gold has none), and precision /
recall of "flagged" (contradict or review) with 95% Wilson intervals; then every miss.

    python benchmarks/vertical_checkers.py
    python benchmarks/vertical_checkers.py --gold my_gold.jsonl --json outputs/benchmarks/verticals.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "datasets" / "layers" / "verticals_gold.jsonl"
FIXTURES = ROOT / "datasets" / "layers" / "verticals"
CHECKERS = ("link", "lookup", "quote")
LANGS = ("en", "zh")
RELATIONS = ("support", "contradict", "none")
FIELDS = {"case_id": str, "lang": str, "checker": str, "claim": str, "expect": dict, "note": str}
EXPECT = {"applies": bool, "relation": str, "review": bool, "keyword": (str, type(None))}
# How the phone table is configured (the pattern of the tests: area code in brackets or not, "-" or " " separators).
PHONE_PATTERN = r"\(?\d{3,4}\)?[- ]?\d{3,4}[- ]?\d{4}"
_CJK = re.compile(r"[\u4e00-\u9fff]")


class GoldError(ValueError):
    """A bad gold line: the message names the file, the line and the field."""


def fixtures_missing(fixtures: Path = FIXTURES) -> list[str]:
    need = [fixtures / "phones.csv", fixtures / "sources.json", fixtures / "references"]
    missing = [str(p) for p in need if not p.exists()]
    if (fixtures / "references").is_dir() and not list((fixtures / "references").glob("*.txt")):
        missing.append(str(fixtures / "references" / "*.txt"))
    return missing


def load_gold(path: Path = GOLD) -> list[dict]:
    """The gold cases, each line checked: fields and their types, vocabularies, consistency of `expect`."""
    cases, seen = [], set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue

        def bad(field: str, problem: str, number: int = number) -> GoldError:
            return GoldError(f"{path}: line {number}: {field}: {problem}")

        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise bad("(line)", f"not JSON ({exc})") from None
        if not isinstance(case, dict):
            raise bad("(line)", "not a JSON object")
        for name in sorted(set(FIELDS) - set(case)):
            raise bad(name, "missing")
        for name in sorted(set(case) - set(FIELDS)):
            raise bad(name, f"unknown field (fields: {sorted(FIELDS)})")
        for name, kind in FIELDS.items():
            if not isinstance(case[name], kind):
                raise bad(name, f"must be {kind.__name__}, got {case[name]!r}")
        expect = case["expect"]
        for name in sorted(set(EXPECT) - set(expect)):
            raise bad(f"expect.{name}", "missing")
        for name in sorted(set(expect) - set(EXPECT)):
            raise bad(f"expect.{name}", f"unknown field (fields: {sorted(EXPECT)})")
        for name, kind in EXPECT.items():
            if not isinstance(expect[name], kind):
                raise bad(f"expect.{name}", f"wrong type: {expect[name]!r}")
        if not case["case_id"].strip() or case["case_id"] in seen:
            raise bad("case_id", f"empty or repeated: {case['case_id']!r}")
        seen.add(case["case_id"])
        if case["lang"] not in LANGS:
            raise bad("lang", f"{case['lang']!r} is not one of {LANGS}")
        if case["checker"] not in CHECKERS:
            raise bad("checker", f"{case['checker']!r} is not one of {CHECKERS}")
        if expect["relation"] not in RELATIONS:
            raise bad("expect.relation", f"{expect['relation']!r} is not one of {RELATIONS}")
        if not case["claim"].strip() or not case["note"].strip():
            raise bad("claim" if not case["claim"].strip() else "note", "empty")
        if (case["lang"] == "zh") != bool(_CJK.search(case["claim"])):
            raise bad("lang", f"{case['lang']!r} does not fit the claim's script")
        if not expect["applies"] and (expect["relation"] != "none" or expect["review"] or expect["keyword"]):
            raise bad("expect", "a checker that does not apply answers nothing: relation none, no review, no keyword")
        if case["checker"] == "link" and expect["relation"] != "none":
            raise bad("expect.relation", "the link checker never judges a claim: relation must be none")
        if expect["relation"] == "contradict" and not expect["keyword"]:
            raise bad("expect.keyword", "a contradiction names the differing span")
        if expect["keyword"] is not None and expect["keyword"] not in case["claim"]:
            raise bad("expect.keyword", f"{expect['keyword']!r} is not in the claim")
        cases.append(case)
    if not cases:
        raise GoldError(f"{path}: no cases")
    return cases


def build_checkers(fixtures: Path = FIXTURES) -> dict:
    """The three checkers built as conf/verticals builds them: conf/verticals/default.yaml (the offline link checker)
    plus a lookup table on phones.csv and a quotation matcher on references/, instantiated by Hydra."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(ROOT / "conf" / "verticals" / "default.yaml")
    cfg.checkers.append({"_target_": "factlab.retrieval.verticals.LookupTable", "name": "phones",
                         "path": str(fixtures / "phones.csv"), "key_column": "org", "value_column": "phone",
                         "value_pattern": PHONE_PATTERN})
    cfg.checkers.append({"_target_": "factlab.retrieval.verticals.QuoteMatcher", "name": "references",
                         "folder": str(fixtures / "references")})
    router = instantiate(cfg)
    return dict(zip(CHECKERS, router.checkers, strict=True))


def run_case(checker, case: dict, sources: list[dict]) -> dict:
    if not checker.applies(case["claim"]):
        return {"applies": False, "relation": "none", "review": False, "hints": []}
    answer = checker.check(case["claim"], sources)
    relations = {j.relation for _, j in answer.judged}
    relation = "contradict" if "contradict" in relations else "support" if "support" in relations else "none"
    return {"applies": True, "relation": relation, "review": answer.review, "hints": list(answer.hints)}


def hints_right(case: dict, got: dict) -> bool:
    """No hint where the gold has no keyword; else a hint naming it (a lookup hint gives the claim's digits)."""
    keyword = case["expect"]["keyword"]
    if keyword is None:
        return not got["hints"]
    text = " ".join(got["hints"])
    return keyword in text or (case["checker"] == "lookup" and re.sub(r"\D", "", keyword) in text)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """95% Wilson score interval of k successes in n trials (None when n == 0).

    >>> [round(v, 3) for v in wilson(8, 10)]
    [0.49, 0.943]
    >>> wilson(0, 0) is None
    True
    """
    if n == 0:
        return None
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _rate(k: int, n: int) -> dict:
    return {"k": k, "n": n, "value": k / n if n else None, "ci95": wilson(k, n)}


def _row(results: list[tuple[dict, dict]]) -> dict:
    applies = [(c, g) for c, g in results if c["expect"]["applies"]]
    gold_flag = [c["expect"]["relation"] == "contradict" or c["expect"]["review"] for c, _ in results]
    got_flag = [g["relation"] == "contradict" or g["review"] for _, g in results]
    tp = sum(a and b for a, b in zip(gold_flag, got_flag, strict=True))
    return {"cases": len(results),
            "applies_accuracy": _rate(sum(c["expect"]["applies"] == g["applies"] for c, g in results), len(results)),
            "relation_accuracy": _rate(sum(c["expect"]["relation"] == g["relation"] for c, g in applies), len(applies)),
            "hints_right": _rate(sum(hints_right(c, g) for c, g in results), len(results)),
            "flagged_precision": _rate(tp, sum(got_flag)), "flagged_recall": _rate(tp, sum(gold_flag))}


def score(gold_path: Path = GOLD, fixtures: Path = FIXTURES) -> dict:
    cases = load_gold(gold_path)
    missing = fixtures_missing(fixtures)
    if missing:
        raise FileNotFoundError(f"vertical gold fixtures missing: {missing}")
    checkers = build_checkers(fixtures)
    sources = json.loads((fixtures / "sources.json").read_text(encoding="utf-8"))
    results = [(case, run_case(checkers[case["checker"]], case, sources)) for case in cases]
    table: dict = {}
    for checker in (*CHECKERS, "all"):
        for lang in ("all", *LANGS):
            chosen = [(c, g) for c, g in results if checker in ("all", c["checker"]) and lang in ("all", c["lang"])]
            if chosen:
                table.setdefault(checker, {})[lang] = _row(chosen)
    misses = []
    for case, got in results:
        want = case["expect"]
        wrong = [name for name in ("applies", "relation", "review") if want[name] != got[name]]
        wrong += [] if hints_right(case, got) else ["hints"]
        if wrong:
            misses.append({"case_id": case["case_id"], "wrong": wrong, "expect": want,
                           "got": {k: got[k] for k in ("applies", "relation", "review")}, "hints": got["hints"],
                           "note": case["note"]})
    return {"table": table, "misses": misses}


def _fmt(rate: dict, interval: bool = False) -> str:
    if rate["value"] is None:
        return "-"
    text = f"{rate['value']:.2f} ({rate['k']}/{rate['n']})"
    if interval:
        lo, hi = rate["ci95"]
        text += f" [{lo:.2f}, {hi:.2f}]"
    return text


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gold", type=Path, default=GOLD, help="gold JSONL (default: %(default)s)")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES, help="phones.csv, references/, sources.json")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write the numbers here")
    args = parser.parse_args(argv)
    result = score(args.gold, args.fixtures)
    print("| checker | lang | cases | applies acc. | relation acc. (gold applies) | hints right | "
          "flagged precision [95% CI] | flagged recall [95% CI] |")
    print("|---|---|---|---|---|---|---|---|")
    for checker, rows in result["table"].items():
        for lang, row in rows.items():
            print(f"| {checker} | {lang} | {row['cases']} | {_fmt(row['applies_accuracy'])} | "
                  f"{_fmt(row['relation_accuracy'])} | {_fmt(row['hints_right'])} | "
                  f"{_fmt(row['flagged_precision'], True)} | {_fmt(row['flagged_recall'], True)} |")
    for miss in result["misses"]:
        got, want = miss["got"], miss["expect"]
        print(f"missed  {miss['case_id']} ({', '.join(miss['wrong'])}): expected applies={want['applies']} "
              f"relation={want['relation']} review={want['review']} keyword={want['keyword']!r}; got "
              f"applies={got['applies']} relation={got['relation']} review={got['review']} hints={miss['hints']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
