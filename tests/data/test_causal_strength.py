"""The causal-strength data (factlab/data/loaders/causal_strength.py) on small files written here in the public
sets' own layouts: each file read by its own label codes, InSciOut's sentences kept out, a press release's sentences
in one split, clear errors; and on the public data when it is there (marked `data`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factlab.data.errors import DatasetConfigError
from factlab.data.loaders.causal_strength import FILES, STRENGTHS, load

FRACTIONS = {"train": 0.6, "val": 0.2, "test": 0.2}


def _write(root: Path, pubmed: list[tuple[str, str]], eureka: list[tuple[str, str, str]], pairs: list[dict]) -> Path:
    for key, rows, header in (("pubmed", pubmed, "sentence,label"), ("eureka", eureka, "sentId,sentence,label")):
        path = root / FILES[key]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + "\n" + "".join(",".join(f'"{v}"' for v in row) + "\n" for row in rows))
    for key in ("insciout_train", "insciout_test"):
        path = root / FILES[key]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(pair) + "\n" for pair in pairs))
    return root


PAIR = {"press_release_conclusion": "Tea prevents stroke.", "press_release_strength": 3,
        "abstract_conclusion": "Tea drinking was associated with fewer strokes.", "abstract_strength": 1,
        "exaggeration_label": "exaggerates"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    pubmed = [(f"Finding {i} was associated with outcome {i}.", "3") for i in range(20)]
    pubmed += [("Exercise reduces mortality in adults.", "1"), ("Tea prevents stroke.", "1")]  # the second: InSciOut's
    eureka = [(f"{1000 + i // 3}-w-x-{i % 3}-sentence", f"Press sentence {i} says X causes Y.", "3") for i in range(30)]
    eureka += [("999-w-x-0-title", "Coffee linked to longer life", "1")]
    return _write(tmp_path, pubmed, eureka, [PAIR])


def test_each_file_is_read_by_its_own_label_codes(root: Path):
    cases = {c["text"]: c for c in load(name="causal_strength", data_root=str(root), fractions=FRACTIONS, seed=0)}
    assert cases["Exercise reduces mortality in adults."]["strength"] == "direct_causal"  # pubmed 1
    assert cases["Finding 0 was associated with outcome 0."]["strength"] == "correlational"  # pubmed 3
    assert cases["Coffee linked to longer life"]["strength"] == "correlational"  # eureka 1
    assert cases["Press sentence 0 says X causes Y."]["strength"] == "direct_causal"  # eureka 3
    assert all(c["strength"] in STRENGTHS and c["split"] in FRACTIONS for c in cases.values())


def test_insciout_sentences_are_never_trained_on_unless_asked(root: Path):
    cases = load(name="causal_strength", data_root=str(root), fractions=FRACTIONS, seed=0)
    assert "Tea prevents stroke." not in {c["text"] for c in cases}
    with_train = load(name="causal_strength", data_root=str(root), fractions=FRACTIONS, seed=0, insciout_train=True)
    added = [c for c in with_train if c["source"] == "insciout_train"]
    assert {(c["text"], c["strength"], c["split"]) for c in added} == {
        ("Tea prevents stroke.", "direct_causal", "train"),
        ("Tea drinking was associated with fewer strokes.", "correlational", "train")}


def test_a_press_release_stays_in_one_split(root: Path):
    cases = load(name="causal_strength", data_root=str(root), fractions=FRACTIONS, seed=0)
    papers: dict[int, set[str]] = {}  # sentences 3k, 3k+1, 3k+2 share the PMID 1000 + k
    for case in (c for c in cases if c["source"] == "eureka" and c["text"].startswith("Press")):
        number = int(case["text"].split()[2])
        papers.setdefault(number // 3, set()).add(case["split"])
    assert papers and all(len(splits) == 1 for splits in papers.values())
    assert len({s for splits in papers.values() for s in splits}) >= 2


def test_a_bad_label_names_the_file_and_line(root: Path):
    path = root / FILES["pubmed"]
    path.write_text(path.read_text() + '"A sentence.","7"\n')
    with pytest.raises(DatasetConfigError, match=r"pubmed_causal_language_use.csv, line 24: field label"):
        load(name="causal_strength", data_root=str(root), fractions=FRACTIONS, seed=0)


def test_a_missing_file_is_named(tmp_path: Path):
    with pytest.raises(DatasetConfigError, match="causal_language_pubmed/data/pubmed_causal_language_use.csv"):
        load(name="causal_strength", data_root=str(tmp_path), fractions=FRACTIONS, seed=0)


@pytest.mark.data
def test_the_public_sets_load_with_insciout_held_out(public_data_root: Path):
    cases = load(name="causal_strength", data_root=str(public_data_root), fractions={"train": 0.7, "val": 0.15,
                                                                                     "test": 0.15}, seed=0)
    assert len(cases) > 5000 and {c["source"] for c in cases} == {"pubmed", "eureka"}
    assert {c["strength"] for c in cases} == set(STRENGTHS)
