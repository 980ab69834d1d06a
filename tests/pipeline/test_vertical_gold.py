"""The vertical checkers' gold (datasets/layers/verticals_gold.jsonl, read by factlab.data.benchmark_gold) and its
score (factlab.evals.layer_gold.score_verticals, printed by benchmarks/vertical_checkers.py): every gold line valid
and its fixtures present, a bad line named by file, line and field, and the measured relation accuracy held as a
regression floor."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from factlab.data.benchmark_gold import (
    LANGS,
    VERTICAL_CHECKERS,
    VERTICAL_RELATIONS,
    VERTICALS_FIXTURES,
    VERTICALS_GOLD,
    read_verticals_gold,
    verticals_fixtures_missing,
)
from factlab.data.errors import CaseError
from factlab.evals.layer_gold import score_verticals
from factlab.metrics import wilson_interval


def test_every_gold_line_is_valid_balanced_and_has_its_fixtures():
    cases = read_verticals_gold()  # raises on the first bad line, naming file, line and field
    assert verticals_fixtures_missing() == []
    assert len(cases) >= 45
    per = Counter((c["lang"], c["checker"]) for c in cases)
    assert set(per) == {(lang, checker) for lang in LANGS for checker in VERTICAL_CHECKERS}
    assert min(per.values()) >= 6
    assert Counter(c["lang"] for c in cases)["en"] == Counter(c["lang"] for c in cases)["zh"]
    for lang in LANGS:  # hard negatives and every answer in each language
        mine = [c for c in cases if c["lang"] == lang]
        assert {c["checker"] for c in mine if not c["expect"]["applies"]} == set(VERTICAL_CHECKERS)
        assert {c["expect"]["relation"] for c in mine} == set(VERTICAL_RELATIONS)
        assert any(c["expect"]["review"] for c in mine)
    sources = json.loads((VERTICALS_FIXTURES / "sources.json").read_text(encoding="utf-8"))
    assert all(s.get("url") and s.get("source_id") and s.get("title") for s in sources)


@pytest.mark.parametrize(("edit", "field"), [
    (lambda case: case["expect"].update(relation="refute"), "expect.relation"),
    (lambda case: case.pop("note"), "note"),
    (lambda case: case.update(lang="fr"), "lang"),
    (lambda case: case["expect"].update(applies="yes"), "expect.applies"),
    (lambda case: case["expect"].update(keyword="not in the claim"), "expect.keyword"),
])
def test_a_broken_gold_line_is_named_by_file_line_and_field(tmp_path, edit, field):
    lines = VERTICALS_GOLD.read_text(encoding="utf-8").splitlines()[:3]
    broken = json.loads(lines[2])
    edit(broken)
    path = tmp_path / "broken_gold.jsonl"
    path.write_text("\n".join([*lines[:2], json.dumps(broken, ensure_ascii=False)]) + "\n", encoding="utf-8")
    with pytest.raises(CaseError) as error:
        read_verticals_gold(path)
    assert str(error.value).startswith(f"{path}:3: {field}: ")


def test_a_line_that_is_not_json_is_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(VERTICALS_GOLD.read_text(encoding="utf-8").splitlines()[0] + "\n{not json\n", encoding="utf-8")
    with pytest.raises(CaseError, match=r"bad\.jsonl:2: \(line\): not JSON"):
        read_verticals_gold(path)


def test_the_vertical_checkers_hold_on_their_gold():
    # measured: relation accuracy 1.00 (38/38; 19/19 per language), applies 0.96 (48/50), flagged recall 1.00 (13/13);
    # the floors leave a margin of about two cases
    table = score_verticals()["table"]
    for lang in ("all", *LANGS):
        row = table["all"][lang]
        assert row["relation_accuracy"]["value"] >= 0.9, (lang, row["relation_accuracy"])
        assert row["applies_accuracy"]["value"] >= 0.9, (lang, row["applies_accuracy"])
        assert row["flagged_recall"]["value"] >= 0.85, (lang, row["flagged_recall"])
    assert table["all"]["all"]["cases"] == len(read_verticals_gold())


def test_wilson_interval():
    lo, hi = wilson_interval(13, 13)
    assert 0.75 < lo < 0.78 and hi == 1.0
    assert wilson_interval(0, 0) is None
