"""The scope data (factlab/data/loaders/scope.py) on a small corpus written here in the SciFact corpus's layout: weak
labels from population words, contrastive edits that keep their abstract's split, clear errors; and on the public
corpus when it is there (marked `data`)."""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path

import pytest

from factlab.data.errors import DatasetConfigError
from factlab.data.loaders.scope import CORPUS, SCOPES, edits, load, scope_of

FRACTIONS = {"train": 0.6, "val": 0.2, "test": 0.2}
SENTENCES = ["Mice fed the extract gained less weight over six weeks.", "Nurses on night shifts slept less.",
             "The extract helps people lose weight in everyday life.", "The enzyme binds its substrate at two sites.",
             "Mice and humans share this gene in all tissues.", "Patients were randomised to the two arms."]


def _write(root: Path, docs: int = 20) -> Path:
    path = root / CORPUS
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [f'{1000 + d},Title {d},"{[s.replace("the", f"the {d}") for s in SENTENCES]}",False' for d in range(docs)]
    path.write_text("doc_id,title,abstract,structured\n" + "\n".join(rows) + "\n")
    return root


def test_weak_labels_leave_out_mixed_and_bare_patient_sentences():
    assert [scope_of(s) for s in SENTENCES] == ["lab", "restricted", "general", "none", None, None]
    assert scope_of("Patients with diabetes slept less.") == "restricted"  # a named group, not "people at large"


def test_edits_swap_the_population_phrase_for_each_other_scope():
    out = edits("Mice fed the extract gained less weight.", "lab", random.Random(0))
    assert [scope for _, scope in out] == ["restricted", "general"]
    assert all(text.endswith("fed the extract gained less weight.") and not text.startswith("Mice") for text, _ in out)
    assert all(scope_of(text) == scope for text, scope in out)  # the edit reads as the scope it is labelled
    assert edits("The enzyme binds its substrate.", "none", random.Random(0)) == []


def test_load_labels_edits_and_keeps_an_abstract_in_one_split(tmp_path):
    cases = load(name="scope", data_root=str(_write(tmp_path)), fractions=FRACTIONS, seed=0)
    assert {c["scope"] for c in cases} == set(SCOPES)
    assert Counter(c["source"] for c in cases) == {"weak": 80, "edit": 120}  # 4 labelled sentences, 3 with 2 edits
    by_doc: dict[str, set[str]] = {}
    for case in cases:
        by_doc.setdefault(case["case_id"].split("-")[1], set()).add(case["split"])
    assert all(len(splits) == 1 for splits in by_doc.values()) and len(by_doc) == 20
    assert {c["split"] for c in cases} == set(FRACTIONS)
    capped = load(name="scope", data_root=str(tmp_path), fractions=FRACTIONS, seed=0, per_label=5,
                  edits_per_sentence=False)
    assert Counter(c["scope"] for c in capped) == {"lab": 5, "restricted": 5, "general": 5, "none": 5}
    assert len(load(name="scope", data_root=str(tmp_path), fractions=FRACTIONS, seed=0, max_rows=7)) == 7


def test_a_missing_file_or_an_empty_field_names_it(tmp_path):
    with pytest.raises(DatasetConfigError, match="corpus_train.csv not found"):
        load(name="scope", data_root=str(tmp_path), fractions=FRACTIONS, seed=0)
    path = _write(tmp_path) / CORPUS
    path.write_text(path.read_text() + ',Title,"[\'x\']",False\n')
    with pytest.raises(DatasetConfigError, match=r"corpus_train.csv, line 22: field doc_id is empty"):
        load(name="scope", data_root=str(tmp_path), fractions=FRACTIONS, seed=0)


@pytest.mark.data
def test_the_public_corpus_gives_every_scope_in_every_split():
    root = os.environ.get("FACTLAB_DATA_ROOT", "../shared/data")
    if not (Path(root) / CORPUS).is_file():
        pytest.skip(f"{root}/{CORPUS} not present")
    cases = load(name="scope", data_root=root, fractions={"train": 0.7, "val": 0.15, "test": 0.15}, seed=0,
                 per_label=300)
    assert {(c["split"], c["scope"]) for c in cases} == {(s, c) for s in ("train", "val", "test") for c in SCOPES}
