"""The vertical checkers' gold (datasets/layers/verticals_gold.jsonl) and its benchmark
(benchmarks/vertical_checkers.py): every gold line valid and its fixtures present, a bad line named by file, line and
field, and the measured relation accuracy held as a regression floor."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("vertical_checkers", ROOT / "benchmarks" / "vertical_checkers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_gold_line_is_valid_balanced_and_has_its_fixtures(bench):
    cases = bench.load_gold()  # raises on the first bad line, naming file, line and field
    assert bench.fixtures_missing() == []
    assert len(cases) >= 45
    per = Counter((c["lang"], c["checker"]) for c in cases)
    assert set(per) == {(lang, checker) for lang in bench.LANGS for checker in bench.CHECKERS}
    assert min(per.values()) >= 6
    assert Counter(c["lang"] for c in cases)["en"] == Counter(c["lang"] for c in cases)["zh"]
    for lang in bench.LANGS:  # hard negatives and every answer in each language
        mine = [c for c in cases if c["lang"] == lang]
        assert {c["checker"] for c in mine if not c["expect"]["applies"]} == set(bench.CHECKERS)
        assert {c["expect"]["relation"] for c in mine} == set(bench.RELATIONS)
        assert any(c["expect"]["review"] for c in mine)
    sources = json.loads((bench.FIXTURES / "sources.json").read_text(encoding="utf-8"))
    assert all(s.get("url") and s.get("source_id") and s.get("title") for s in sources)


@pytest.mark.parametrize(("edit", "field"), [
    (lambda case: case["expect"].update(relation="refute"), "expect.relation"),
    (lambda case: case.pop("note"), "note"),
    (lambda case: case.update(lang="fr"), "lang"),
    (lambda case: case["expect"].update(applies="yes"), "expect.applies"),
    (lambda case: case["expect"].update(keyword="not in the claim"), "expect.keyword"),
])
def test_a_broken_gold_line_is_named_by_file_line_and_field(bench, tmp_path, edit, field):
    lines = bench.GOLD.read_text(encoding="utf-8").splitlines()[:3]
    broken = json.loads(lines[2])
    edit(broken)
    path = tmp_path / "broken_gold.jsonl"
    path.write_text("\n".join([*lines[:2], json.dumps(broken, ensure_ascii=False)]) + "\n", encoding="utf-8")
    with pytest.raises(bench.GoldError) as error:
        bench.load_gold(path)
    assert str(error.value).startswith(f"{path}: line 3: {field}: ")


def test_a_line_that_is_not_json_is_named(bench, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(bench.GOLD.read_text(encoding="utf-8").splitlines()[0] + "\n{not json\n", encoding="utf-8")
    with pytest.raises(bench.GoldError, match=r"bad\.jsonl: line 2: \(line\): not JSON"):
        bench.load_gold(path)


def test_the_vertical_checkers_hold_on_their_gold(bench):
    # measured: relation accuracy 1.00 (38/38; 19/19 per language), applies 0.96 (48/50), flagged recall 1.00 (13/13);
    # the floors leave a margin of about two cases
    table = bench.score()["table"]
    for lang in ("all", *bench.LANGS):
        row = table["all"][lang]
        assert row["relation_accuracy"]["value"] >= 0.9, (lang, row["relation_accuracy"])
        assert row["applies_accuracy"]["value"] >= 0.9, (lang, row["applies_accuracy"])
        assert row["flagged_recall"]["value"] >= 0.85, (lang, row["flagged_recall"])
    assert table["all"]["all"]["cases"] == len(bench.load_gold())


def test_wilson_interval(bench):
    lo, hi = bench.wilson(13, 13)
    assert 0.75 < lo < 0.78 and hi == 1.0
    assert bench.wilson(0, 0) is None
