"""The deterministic layers scored on their written gold (read by `factlab.data.benchmark_gold`): the consistency
layer (factlab/rules/document.py), the common-cause grouping (factlab/cards/build.py), the timeliness check
(factlab/rules/timeliness.py) and the vertical checkers (factlab/retrieval/verticals.py). benchmarks/*.py print these
tables; the tests hold them at their floors.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from factlab.data.benchmark_gold import (
    COMMON_CAUSE_GOLD,
    CONSISTENCY_GOLD,
    LANGS,
    TIMELINESS_GOLD,
    VERTICAL_CHECKERS,
    VERTICALS_FIXTURES,
    VERTICALS_GOLD,
    read_common_cause_gold,
    read_consistency_gold,
    read_timeliness_gold,
    read_verticals_gold,
    verticals_fixtures_missing,
)
from factlab.data.loaders.build import REPO_ROOT
from factlab.metrics import SetScores, wilson_interval

# How the vertical benchmark's phone table is configured (the pattern of the tests: area code in brackets or not,
# "-" or " " separators).
PHONE_PATTERN = r"\(?\d{3,4}\)?[- ]?\d{3,4}[- ]?\d{4}"


# ---------------------------------------------------------------- consistency layer

def score_consistency(gold_path: Path = CONSISTENCY_GOLD) -> dict:
    """Precision, recall and clean documents with a finding, per language, of the consistency findings against
    the gold's; with the misses, the extras and the SetScores tally."""
    from factlab.rules.document import consistency_findings

    scores = SetScores()
    for doc in read_consistency_gold(gold_path):
        pairs = [(f"p{i + 1}", text) for i, text in enumerate(doc["paragraphs"])]
        want = {(f["kind"], f["keyword"], f"p{f['paragraph']}") for f in doc["findings"]}
        got = {(f.kind, f.keyword, f.paragraph_id) for f in consistency_findings(pairs)}
        scores.add(doc["doc_id"], ["all", doc["lang"]], want, got)
    table = {key: {**row, "findings": row["gold"]} for key, row in scores.table(["all", *LANGS]).items()}
    return {"table": table, "misses": scores.misses, "extras": scores.extras, "scores": scores}


# ---------------------------------------------------------------- common-cause grouping

def common_cause_cards(doc: dict, rules) -> list:
    """The paragraph cards of a common-cause gold document, each claim carded by `rules` from its judged
    evidence."""
    from factlab.cards.build import build_claim_card, build_paragraph_card
    from factlab.rules.business import JudgedEvidence
    from factlab.schema import Evidence, Judgment

    cards, offset = [], 0
    for p_index, claims in enumerate(doc["paragraphs"]):
        built = []
        for c_index, claim in enumerate(claims):
            judged = [JudgedEvidence(Evidence(source_id=s, chunk_id=f"{s}#p1-c{i + 1}", text=claim["text"], tier=t),
                                     Judgment(relation=r, confidence=0.9, reason="gold"))
                      for i, (s, t, r) in enumerate(claim["evidence"])]
            built.append(build_claim_card(claim_id=f"p{p_index + 1}-c{c_index + 1}", text=claim["text"],
                                          judged=judged, rules=rules))
        text = " ".join(c["text"] for c in claims)
        cards.append(build_paragraph_card(f"p{p_index + 1}", offset, offset + len(text), text, built))
        offset += len(text) + 2
    return cards


def score_common_cause(gold_path: Path = COMMON_CAUSE_GOLD) -> dict:
    """Exact-group precision / recall and documents with a false group, per language, of the common-cause groups
    of the cards the default business rules build; with the misses, the extras and the SetScores tally."""
    from hydra.utils import instantiate

    from factlab.cards.build import common_cause_findings
    from factlab.config import compose_config

    rules = instantiate(compose_config("verify", ["input=x", "sources=y"]).business)
    scores = SetScores()
    for doc in read_common_cause_gold(gold_path):
        want = {(source, tuple(f"p{i}" for i in group)) for source, group in doc["flagged"]}
        groups: dict[str, list[str]] = {}
        for f in common_cause_findings(common_cause_cards(doc, rules)):
            groups.setdefault(f.evidence.split(" ")[0], []).append(f.paragraph_id)
        scores.add(doc["doc_id"], ["all", doc["lang"]], want, {(s, tuple(p)) for s, p in groups.items()})
    table = {key: {**row, "groups": row["gold"], "docs_with_a_false_group": row["docs_with_extra"]}
             for key, row in scores.table(["all", *LANGS]).items()}
    return {"table": table, "misses": scores.misses, "extras": scores.extras, "scores": scores}


# ---------------------------------------------------------------- timeliness

def timeliness_judged(case: dict) -> list:
    """A timeliness gold case's judged snippets as (Evidence, Judgment) pairs, in order."""
    from factlab.schema import Evidence, Judgment

    tiers = {s["source_id"]: s.get("tier", 3) for s in case["sources"]}
    titles = {s["source_id"]: s["title"] for s in case["sources"]}
    return [(Evidence(source_id=item["source_id"], chunk_id=f"{item['source_id']}#p1-c{i + 1}", text=item["text"],
                      tier=tiers[item["source_id"]], title=titles[item["source_id"]]),
             Judgment(item["relation"], item.get("confidence", 0.9)))
            for i, item in enumerate(case["judged"])]


def timeliness_effect(before: list, after: list) -> str:
    """support_downgraded when a support / partial support became insufficient, else support_kept when there was
    one, else no_change."""
    supporting = ("support", "partial_support")
    if any(b[1].relation in supporting and a.relation == "insufficient" for b, a in zip(before, after, strict=True)):
        return "support_downgraded"
    return "support_kept" if any(b[1].relation in supporting for b in before) else "no_change"


def score_timeliness(gold_path: Path = TIMELINESS_GOLD, timeliness=None) -> dict:
    """Accuracy of the effect and of the newest-source pick, per language, with 95% Wilson intervals ((0, 1) without
    cases), downgrades found and false downgrades; and every miss as (case id, what, want, got, tense, notes).
    `timeliness` is the check to score (default: `Timeliness()`)."""
    from collections import Counter

    from factlab.rules.timeliness import Timeliness

    check = timeliness if timeliness is not None else Timeliness()
    counts: Counter = Counter()
    misses = []
    for case in read_timeliness_gold(gold_path):
        before = timeliness_judged(case)
        after, notes, newest = check.apply(case["claim"], before, {s["source_id"]: s for s in case["sources"]})
        got_effect, got_newest = timeliness_effect(before, after), newest.source_id if newest else None
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
                      "effect_ci": wilson_interval(counts[(key, "effect")], n) or (0.0, 1.0),
                      "newest_ci": wilson_interval(counts[(key, "newest")], n) or (0.0, 1.0),
                      "downgrades": f"{counts[(key, 'downgrades_found')]} / {counts[(key, 'downgrades')]}",
                      "false_downgrades": counts[(key, "false_downgrades")]}
    return {"table": table, "misses": misses}


# ---------------------------------------------------------------- vertical checkers

def build_vertical_checkers(fixtures: Path = VERTICALS_FIXTURES) -> dict:
    """The three checkers built as conf/verticals builds them: conf/verticals/default.yaml (the offline link checker)
    plus a lookup table on phones.csv and a quotation matcher on references/, instantiated by Hydra."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(REPO_ROOT / "conf" / "verticals" / "default.yaml")
    cfg.checkers.append({"_target_": "factlab.retrieval.verticals.LookupTable", "name": "phones",
                         "path": str(fixtures / "phones.csv"), "key_column": "org", "value_column": "phone",
                         "value_pattern": PHONE_PATTERN})
    cfg.checkers.append({"_target_": "factlab.retrieval.verticals.QuoteMatcher", "name": "references",
                         "folder": str(fixtures / "references")})
    router = instantiate(cfg)
    return dict(zip(VERTICAL_CHECKERS, router.checkers, strict=True))


def run_vertical_case(checker, case: dict, sources: list[dict]) -> dict:
    """What `checker` answers on a gold case: applies, relation (contradict over support over none), review, hints."""
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


def _rate(k: int, n: int) -> dict:
    return {"k": k, "n": n, "value": k / n if n else None, "ci95": wilson_interval(k, n)}


def _vertical_row(results: list[tuple[dict, dict]]) -> dict:
    applies = [(c, g) for c, g in results if c["expect"]["applies"]]
    gold_flag = [c["expect"]["relation"] == "contradict" or c["expect"]["review"] for c, _ in results]
    got_flag = [g["relation"] == "contradict" or g["review"] for _, g in results]
    tp = sum(a and b for a, b in zip(gold_flag, got_flag, strict=True))
    return {"cases": len(results),
            "applies_accuracy": _rate(sum(c["expect"]["applies"] == g["applies"] for c, g in results), len(results)),
            "relation_accuracy": _rate(sum(c["expect"]["relation"] == g["relation"] for c, g in applies), len(applies)),
            "hints_right": _rate(sum(hints_right(c, g) for c, g in results), len(results)),
            "flagged_precision": _rate(tp, sum(got_flag)), "flagged_recall": _rate(tp, sum(gold_flag))}


def score_verticals(gold_path: Path = VERTICALS_GOLD, fixtures: Path = VERTICALS_FIXTURES) -> dict:
    """Per checker and language (and "all"): cases, applies accuracy, relation accuracy where the gold applies, hints
    right, flagged (contradict or review) precision / recall, each {k, n, value, ci95 (Wilson)}; and every miss."""
    cases = read_verticals_gold(gold_path)
    missing = verticals_fixtures_missing(fixtures)
    if missing:
        raise FileNotFoundError(f"vertical gold fixtures missing: {missing}")
    checkers = build_vertical_checkers(fixtures)
    sources = json.loads((fixtures / "sources.json").read_text(encoding="utf-8"))
    results = [(case, run_vertical_case(checkers[case["checker"]], case, sources)) for case in cases]
    table: dict = {}
    for checker in (*VERTICAL_CHECKERS, "all"):
        for lang in ("all", *LANGS):
            chosen = [(c, g) for c, g in results if checker in ("all", c["checker"]) and lang in ("all", c["lang"])]
            if chosen:
                table.setdefault(checker, {})[lang] = _vertical_row(chosen)
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
