"""The timeliness check (factlab/rules/timeliness.py) on its gold (datasets/layers/timeliness_gold.jsonl: a claim,
its sources with dates in the metadata or only in the text, each judged snippet's relation, and the effect a user
expects: support_kept, support_downgraded or no_change, with the newest source's id): accuracy of the effect and of the
newest-source pick, per language, with 95% Wilson intervals, then every miss (printed table).

    python benchmarks/timeliness.py [gold.jsonl] [timeliness=<conf option>]
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GOLD = ROOT / "datasets" / "layers" / "timeliness_gold.jsonl"
EFFECTS = ("support_kept", "support_downgraded", "no_change")
LANGS = ("en", "zh")


class GoldError(ValueError):
    """A gold line that cannot be scored; the message names the file, the line and the field."""


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion; (0, 1) when n is 0.

    >>> [round(x, 3) for x in wilson(17, 18)]
    [0.742, 0.99]
    """
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _need(row: dict, key: str, kind: type | tuple, where: str, field: str, optional: bool = False):
    if key not in row:
        if optional:
            return None
        raise GoldError(f"{where}: field {field}: missing")
    value = row[key]
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        raise GoldError(f"{where}: field {field}: expected {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _check_case(case: object, where: str) -> dict:
    from factlab.schema import RELATIONS

    if not isinstance(case, dict):
        raise GoldError(f"{where}: a line must be a JSON object, got {type(case).__name__}")
    _need(case, "case_id", str, where, "case_id")
    if _need(case, "lang", str, where, "lang") not in LANGS:
        raise GoldError(f"{where}: field lang: {case['lang']!r} is not one of {', '.join(LANGS)}")
    if not _need(case, "claim", str, where, "claim").strip():
        raise GoldError(f"{where}: field claim: empty")
    sources = _need(case, "sources", list, where, "sources")
    if not 1 <= len(sources) <= 3:
        raise GoldError(f"{where}: field sources: 1 to 3 source records, got {len(sources)}")
    ids = {}
    for i, source in enumerate(sources):
        field = f"sources[{i}]"
        if not isinstance(source, dict):
            raise GoldError(f"{where}: field {field}: expected a source record object")
        sid = _need(source, "source_id", str, where, f"{field}.source_id")
        _need(source, "title", str, where, f"{field}.title")
        text = _need(source, "text", str, where, f"{field}.text")
        _need(source, "year", int, where, f"{field}.year", optional=True)
        _need(source, "date", str, where, f"{field}.date", optional=True)
        tier = _need(source, "tier", int, where, f"{field}.tier", optional=True)
        if tier is not None and tier < 1:
            raise GoldError(f"{where}: field {field}.tier: must be >= 1, got {tier}")
        ids[sid] = text
    judged = _need(case, "judged", list, where, "judged")
    if not judged:
        raise GoldError(f"{where}: field judged: at least one judged snippet")
    for i, item in enumerate(judged):
        field = f"judged[{i}]"
        if not isinstance(item, dict):
            raise GoldError(f"{where}: field {field}: expected an object")
        sid = _need(item, "source_id", str, where, f"{field}.source_id")
        if sid not in ids:
            raise GoldError(f"{where}: field {field}.source_id: {sid!r} is not among the case's sources")
        if _need(item, "text", str, where, f"{field}.text") not in ids[sid]:
            raise GoldError(f"{where}: field {field}.text: not a verbatim part of source {sid!r}")
        if _need(item, "relation", str, where, f"{field}.relation") not in RELATIONS:
            raise GoldError(f"{where}: field {field}.relation: {item['relation']!r} is not one of "
                            f"{', '.join(RELATIONS)}")
        _need(item, "confidence", (int, float), where, f"{field}.confidence", optional=True)
    expected = _need(case, "expected", dict, where, "expected")
    if _need(expected, "effect", str, where, "expected.effect") not in EFFECTS:
        raise GoldError(f"{where}: field expected.effect: {expected['effect']!r} is not one of {', '.join(EFFECTS)}")
    if "newest" not in expected:
        raise GoldError(f"{where}: field expected.newest: missing (a source_id, or null when no source is dated)")
    if expected["newest"] is not None and expected["newest"] not in ids:
        raise GoldError(f"{where}: field expected.newest: {expected['newest']!r} is not among the case's sources")
    return case


def load_gold(path: Path = GOLD) -> list[dict]:
    """The gold cases, each checked; GoldError names the file, the line and the field of the first bad one."""
    from factlab.data.errors import CaseError
    from factlab.data.jsonl import read_jsonl

    try:
        return read_jsonl(path, _check_case, "case_id")
    except CaseError as exc:
        raise GoldError(f"{exc.where}: {exc.problem}" if exc.field == "(line)" else
                        f"{exc.where}: field {exc.field}: {exc.problem}") from None


def judged_of(case: dict) -> list:
    """The case's judged snippets as (Evidence, Judgment) pairs, in order."""
    from factlab.schema import Evidence, Judgment

    tiers = {s["source_id"]: s.get("tier", 3) for s in case["sources"]}
    titles = {s["source_id"]: s["title"] for s in case["sources"]}
    return [(Evidence(source_id=item["source_id"], chunk_id=f"{item['source_id']}#p1-c{i + 1}", text=item["text"],
                      tier=tiers[item["source_id"]], title=titles[item["source_id"]]),
             Judgment(item["relation"], item.get("confidence", 0.9)))
            for i, item in enumerate(case["judged"])]


def effect(before: list, after: list) -> str:
    """support_downgraded when a support / partial support became insufficient, else support_kept when there was
    one, else no_change."""
    supporting = ("support", "partial_support")
    if any(b[1].relation in supporting and a.relation == "insufficient" for b, a in zip(before, after, strict=True)):
        return "support_downgraded"
    return "support_kept" if any(b[1].relation in supporting for b in before) else "no_change"


def score(gold_path: Path = GOLD, timeliness=None) -> dict:
    from factlab.rules.timeliness import Timeliness

    check = timeliness if timeliness is not None else Timeliness()
    counts: Counter = Counter()
    misses = []
    for case in load_gold(gold_path):
        before = judged_of(case)
        after, notes, newest = check.apply(case["claim"], before, {s["source_id"]: s for s in case["sources"]})
        got_effect, got_newest = effect(before, after), newest.source_id if newest else None
        want = case["expected"]
        for key in ("all", case["lang"]):
            counts[(key, "n")] += 1
            counts[(key, "effect")] += got_effect == want["effect"]
            counts[(key, "newest")] += got_newest == want["newest"]
            counts[(key, "downgrades")] += want["effect"] == "support_downgraded"
            counts[(key, "downgrades_found")] += want["effect"] == got_effect == "support_downgraded"
            counts[(key, "false_downgrades")] += got_effect == "support_downgraded" != want["effect"]
        if got_effect != want["effect"]:
            misses.append((case["case_id"], "effect", want["effect"], got_effect, check.tense(case["claim"]), notes))
        if got_newest != want["newest"]:
            misses.append((case["case_id"], "newest", want["newest"], got_newest, check.tense(case["claim"]), notes))
    table = {}
    for key in ("all", *LANGS):
        n = counts[(key, "n")]
        table[key] = {"cases": n, "effect": counts[(key, "effect")], "newest": counts[(key, "newest")],
                      "effect_acc": counts[(key, "effect")] / n if n else None,
                      "newest_acc": counts[(key, "newest")] / n if n else None,
                      "effect_ci": wilson(counts[(key, "effect")], n), "newest_ci": wilson(counts[(key, "newest")], n),
                      "downgrades": f"{counts[(key, 'downgrades_found')]} / {counts[(key, 'downgrades')]}",
                      "false_downgrades": counts[(key, "false_downgrades")]}
    return {"table": table, "misses": misses}


def _cell(row: dict, name: str) -> str:
    lo, hi = row[f"{name}_ci"]
    return f"{row[name]}/{row['cases']} = {row[f'{name}_acc']:.2f} [{lo:.2f}, {hi:.2f}]"


def main(argv: list[str]) -> None:
    gold, check = GOLD, None
    for arg in argv:
        if arg.startswith("timeliness="):
            from hydra.utils import instantiate

            from factlab.config import compose_option

            check = instantiate(compose_option("timeliness", arg.split("=", 1)[1]))
        else:
            gold = Path(arg)
    result = score(gold, check)
    print("| lang | cases | effect accuracy [95% CI] | newest-source accuracy [95% CI] | downgrades found | "
          "false downgrades |")
    print("|---|---|---|---|---|---|")
    for key, row in result["table"].items():
        print(f"| {key} | {row['cases']} | {_cell(row, 'effect')} | {_cell(row, 'newest')} | {row['downgrades']} | "
              f"{row['false_downgrades']} |")
    for case_id, what, want, got, tense, notes in result["misses"]:
        print(f"missed  {case_id} {what}: want {want}, got {got} (claim {tense.kind}, cue {tense.cue!r}); "
              f"notes: {notes}")


if __name__ == "__main__":
    main(sys.argv[1:])
