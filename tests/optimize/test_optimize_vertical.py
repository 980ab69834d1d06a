"""One program per vertical vs one shared program (factlab/optimize/vertical.py): the per-vertical runs pair with the
shared run's scores on the same test examples, the pooled row holds every vertical's, and a sweep missing either kind
of run says which."""

from __future__ import annotations

import pytest

from factlab.optimize.sweep import SweepRun
from factlab.optimize.vertical import vertical_markdown, vertical_rows


def _run(run_id: str, vertical: str | None, keys: list[str], seed: list[float], compiled: list[float],
         optimizer: str = "gepa_rules", status: str = "FINISHED") -> SweepRun:
    tags = {"vertical": vertical} if vertical else {}
    return SweepRun(run_id, optimizer, status, {}, tags,
                    scores={("baseline", "test"): seed, ("compiled", "test"): compiled},
                    keys={("baseline", "test"): keys, ("compiled", "test"): keys})


def _sweep() -> list[SweepRun]:
    law = [f"law-{i}|p" for i in range(30)]
    med = [f"med-{i}|p" for i in range(30)]
    other = [f"gen-{i}|p" for i in range(10)]
    shared_keys = other + med[::-1] + law  # another order: pairing goes by key, not by position
    shared = _run("shared0000", None, shared_keys, [0.5] * 70, [0.6] * 70)
    own_law = _run("lawrun0000", "law", law, [0.5] * 30, [0.9] * 30)  # own beats shared on law
    own_med = _run("medrun0000", "medical", med, [0.5] * 30, [0.6] * 30)  # level with shared on medical
    unfinished = SweepRun("medrun1111", "gepa_rules", "RUNNING", {}, {"vertical": "medical"})
    return [shared, own_law, own_med, unfinished]


def test_each_vertical_pairs_with_the_shared_program_on_its_own_examples():
    rows = {row[0]: row for row in vertical_rows(_sweep())}
    assert list(rows) == ["law", "medical", "all 2"]
    law, med, pooled = rows["law"], rows["medical"], rows["all 2"]
    assert law[1] == 30 and law[2].startswith("0.500") and law[3].startswith("0.600") and law[4].startswith("0.900")
    assert law[5].startswith("+0.300") and law[6].startswith("+0.400") and law[7].startswith("+0.100")
    assert med[5] == "+0.000 [+0.000, +0.000]" and (med[8], med[9]) == ("medrun00", "shared00")
    assert pooled[1] == 60 and pooled[5].startswith("+0.150")


def test_the_optimizer_filter_and_missing_runs_are_named():
    runs = _sweep() + [_run("nonerun000", None, ["law-0|p"], [0.5], [0.5], optimizer="none")]
    assert vertical_rows(runs, optimizer="gepa_rules")[0][9] == "shared00"  # the later "none" run is not the shared
    with pytest.raises(ValueError, match="no finished per-vertical run .* optimizer 'none'"):
        vertical_rows(runs, optimizer="none")
    with pytest.raises(ValueError, match=r"no finished shared run \(vertical=null\)"):
        vertical_rows(_sweep()[1:])
    assert "| law | 30 |" in vertical_markdown("s", _sweep())
