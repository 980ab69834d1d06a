"""The public attack sets' loader (factlab/data/attacks.py, conf/attacks/injection.yaml): every family yields
attack texts with family, category and language; poisonedrag its questions with both answers and the planted passages;
notinject its benign prompts. Without the data the loader names the path and the variable to set."""

from __future__ import annotations

import pytest
from reliability_support import public_attack_sets

from factlab.config import compose_option
from factlab.data.attacks import AttackDataMissing, load


def test_missing_data_names_the_path_and_the_fix(tmp_path):
    cfg = compose_option("attacks", "injection")
    with pytest.raises(AttackDataMissing, match="FACTLAB_DATA_ROOT"):
        load(name="injection", data_root=str(tmp_path), families=cfg.families, poisonedrag=cfg.poisonedrag,
             notinject=cfg.notinject)


@pytest.mark.data
def test_every_family_loads():
    sets = public_attack_sets(max_rows=50)
    assert set(sets.attacks) == {"bipia", "injecagent", "tensor_trust", "piarena", "xsafety"}
    for family, attacks in sets.attacks.items():
        assert 0 < len(attacks) <= 50 and all(a.family == family and a.text.strip() and a.category for a in attacks)
        assert all(len(a.text) <= 602 for a in attacks), family  # max_chars 600 plus the " …" of a cut text
    assert {a.lang for a in sets.attacks["xsafety"]} <= {"zh", "en"}
    assert all(q.correct and q.incorrect and q.correct != q.incorrect and len(q.passages) == 5 for q in sets.poisoned)
    assert sets.benign and all(b.trigger_words for b in sets.benign)
