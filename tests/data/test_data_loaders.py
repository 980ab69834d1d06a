"""Public-dataset loaders on tiny upstream-shaped files: every family maps rows into valid schema cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factlab.data.cases import validate_case
from factlab.data.errors import CaseError, DatasetConfigError
from factlab.data.registry import load_dataset
from factlab.data.views import relation_pairs, rl_rows

PAIR_LABELS = {"Supports": {"relation": "support", "label": "correct"},
               "Refutes": {"relation": "contradict", "label": "wrong"},
               "Neutral": {"relation": "insufficient", "label": "unverifiable"}}


def flat_config(root: Path, **overrides) -> dict:
    config = {"_target_": "factlab.data.loaders.flat.load", "name": "tiny", "data_root": str(root),
              "files": ["pairs.csv"], "format": "csv", "lang": "en", "vertical": "medical", "max_rows": None,
              "fields": {"id": "id", "claim": "claim", "label": "label", "evidence": "evidence", "title": None},
              "labels": PAIR_LABELS, "skip_labels": ["-"], "claim_extra": {}}
    return {**config, **overrides}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "pairs.csv").write_text(
        'id,claim,evidence,label\n'
        '1,Masks cut spread,"Masks reduced transmission, a trial found.",Supports\n'
        '2,Masks cut spread,"No effect was seen.",Refutes\n'
        '3,Zinc cures it,"Zinc was not tested.",Neutral\n'
        '4,Ignored,"No agreement.",-\n', encoding="utf-8")
    return tmp_path


def test_flat_pairs_become_one_case_per_row(root: Path) -> None:
    dataset = load_dataset(flat_config(root))
    assert [c["case_id"] for c in dataset.cases] == ["tiny-1", "tiny-2", "tiny-3"]  # the "-" row is skipped
    first = dataset.cases[0]
    assert first["text"] == "Masks cut spread" and first["vertical"] == "medical"
    claim = first["claims"][0]
    assert (claim["relation"], claim["label"]) == ("support", "correct")
    assert claim["evidence"][0]["text"] == "Masks reduced transmission, a trial found."
    assert claim["evidence"][0]["chunk_id"] == claim["evidence"][0]["source_id"] + "#p1-c1"
    assert [row["relation"] for row in relation_pairs(dataset.cases)] == ["support", "contradict", "insufficient"]


def test_content_hash_is_stable_and_tracks_content(root: Path) -> None:
    first, again = load_dataset(flat_config(root)), load_dataset(flat_config(root))
    assert first.content_hash == again.content_hash and len(first.content_hash) == 64
    (root / "pairs.csv").write_text((root / "pairs.csv").read_text().replace("a trial", "one trial"))
    assert load_dataset(flat_config(root)).content_hash != first.content_hash


def test_max_rows_and_file_prefixes(root: Path) -> None:
    (root / "more.csv").write_text("id,claim,evidence,label\n1,Other claim,Some text.,Supports\n")
    dataset = load_dataset(flat_config(root, files=["*.csv"], max_rows=1))
    assert [c["case_id"] for c in dataset.cases] == ["tiny-more-1", "tiny-pairs-1"]


def test_tsv_keeps_quotes_as_text(root: Path) -> None:
    (root / "pairs.tsv").write_text('id\tclaim\tevidence\tlabel\n7\tHe said "no"\t"Quoted" text.\tNeutral\n')
    case = load_dataset(flat_config(root, files=["pairs.tsv"], format="tsv")).cases[0]
    assert case["text"] == 'He said "no"' and case["claims"][0]["evidence"][0]["text"] == '"Quoted" text.'


def test_pointer_only_json_gets_gold_without_evidence(root: Path) -> None:
    rows = [{"uid": "u1", "claim": "A hops to B.", "label": "SUPPORTED", "supporting_facts": [["A", 0]]}]
    (root / "hops.json").write_text(json.dumps(rows))
    config = flat_config(root, files=["hops.json"], format="json", vertical=None,
                         fields={"id": "uid", "claim": "claim", "label": "label", "evidence": None, "title": None},
                         labels={"SUPPORTED": {"relation": "support", "label": "correct"}},
                         claim_extra={"multi_hop": True})
    case = load_dataset(config).cases[0]
    assert case["sources"] == [] and "evidence" not in case["claims"][0]
    assert case["claims"][0]["multi_hop"] is True
    assert rl_rows([case])[0]["ground_truth"] == {"relation": "support", "label": "correct", "chunk_ids": []}


def test_unmapped_label_names_the_label_and_the_yaml(root: Path) -> None:
    config = flat_config(root, labels={k: v for k, v in PAIR_LABELS.items() if k != "Neutral"})
    with pytest.raises(CaseError, match=r"pairs\.csv row 3 \(line 4\): label: unmapped label 'Neutral'; mapped: "
                                        r"Supports, Refutes; add it to `labels` .* in conf/dataset/tiny\.yaml"):
        load_dataset(config)


def test_bad_label_table_is_refused(root: Path) -> None:
    config = flat_config(root, labels={"Supports": {"relation": "supports", "label": "correct"}})
    with pytest.raises(DatasetConfigError, match=r"conf/dataset/tiny\.yaml: labels\.Supports: expected"):
        load_dataset(config)


def test_missing_file_names_path_and_config_key(root: Path) -> None:
    with pytest.raises(DatasetConfigError, match=r"dataset\.files\[1\] = 'gone\.csv': no file at .*gone\.csv "
                                                 r"\(searched under dataset\.data_root = "):
        load_dataset(flat_config(root, files=["pairs.csv", "gone.csv"]))
    with pytest.raises(DatasetConfigError, match=r"dataset\.data_root = .*FACTLAB_DATA_ROOT.*not found"):
        load_dataset(flat_config(root / "absent"))


def test_missing_field_names_row_and_setting(root: Path) -> None:
    config = flat_config(root, fields={"id": "id", "claim": "sentence", "label": "label", "evidence": "evidence",
                                       "title": None})
    with pytest.raises(CaseError, match=r"row 1 \(line 2\): sentence: missing field \(asked for by fields\.claim"):
        load_dataset(config)


def nested_config(root: Path, evidence: dict, **overrides) -> dict:
    config = {"_target_": "factlab.data.loaders.nested.load", "name": "nest", "data_root": str(root),
              "files": ["rows.jsonl"], "format": "jsonl", "lang": "en", "vertical": None, "max_rows": None,
              "fields": {"id": None, "claim": "claim", "label": "label"},
              "labels": {"SUPPORTS": {"relation": "support", "label": "correct"},
                         "DISPUTED": {"relation": "partial_support", "label": "disputed"}},
              "evidence": {"_partial_": True, **evidence}, "evidence_labels": {}, "skip_labels": [], "claim_extra": {}}
    return {**config, **overrides}


def write_rows(root: Path, rows: list[dict]) -> None:
    (root / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_nested_records_map_per_item_labels_and_group_by_article(tmp_path: Path) -> None:
    write_rows(tmp_path, [{"claim": "Ice melts.", "label": "DISPUTED", "evidences": [
        {"evidence": "Ice melts above 0 C.", "evidence_label": "SUPPORTS", "article": "Ice"},
        {"evidence": "Ice stays frozen in space.", "evidence_label": "REFUTES", "article": "Ice"},
        {"evidence": "Water is wet.", "evidence_label": "NOT_ENOUGH_INFO", "article": "Water"}]}])
    evidence = {"_target_": "factlab.data.loaders.nested.evidence_records", "field": "evidences", "text": "evidence",
                "label": "evidence_label", "title": "article"}
    labels = {"SUPPORTS": "support", "REFUTES": "contradict", "NOT_ENOUGH_INFO": "insufficient"}
    case = load_dataset(nested_config(tmp_path, evidence, evidence_labels=labels)).cases[0]
    claim = case["claims"][0]
    assert (case["case_id"], claim["relation"], claim["label"]) == ("nest-1", "partial_support", "disputed")
    assert [e["relation"] for e in claim["evidence"]] == ["support", "contradict", "insufficient"]
    assert [s["title"] for s in case["sources"]] == ["Ice", "Water"]
    assert case["sources"][0]["text"] == "Ice melts above 0 C. Ice stays frozen in space."
    with pytest.raises(CaseError, match=r"unmapped evidence label 'REFUTES'.*conf/dataset/nest\.yaml"):
        load_dataset(nested_config(tmp_path, evidence, evidence_labels={"SUPPORTS": "support"}))


def test_nested_strings_inherit_the_claim_relation(tmp_path: Path) -> None:
    write_rows(tmp_path, [{"claim": "X works.", "label": "SUPPORTS", "evidence": ["X worked.", "Twice."],
                           "gold_source": "https://www.example.org/x"}])
    evidence = {"_target_": "factlab.data.loaders.nested.evidence_strings", "field": "evidence", "url": "gold_source"}
    case = load_dataset(nested_config(tmp_path, evidence)).cases[0]
    assert [e["relation"] for e in case["claims"][0]["evidence"]] == ["support", "support"]
    assert case["sources"][0]["url"] == "https://www.example.org/x"


def test_nested_indexed_whole_article_long_text_is_paged(tmp_path: Path) -> None:
    sentences = ["(meta data) TITLE: A page"] + [f"Sentence {i} " + "x" * 90 + "." for i in range(20)]
    write_rows(tmp_path, [{"claim": "S 15 is there.", "label": "SUPPORTS", "evidence": sentences,
                           "supporting_sentences": [[15], [15, 16]]}])
    evidence = {"_target_": "factlab.data.loaders.nested.evidence_indexed", "field": "evidence",
                "index_field": "supporting_sentences", "title_prefix": "(meta data) TITLE: "}
    case = load_dataset(nested_config(tmp_path, evidence)).cases[0]
    source = case["sources"][0]
    assert source["title"] == "A page" and len(source["pages"]) == 3
    assert all(len(page) <= 800 for page in source["pages"])
    items = case["claims"][0]["evidence"]
    assert [item["text"][:11] for item in items] == ["Sentence 14", "Sentence 15"]
    assert items[0]["chunk_id"] == f"{source['source_id']}#p3-c1"  # seven ~104-char sentences per page
    validate_case(case, "check")


def test_nested_lines_and_qa(tmp_path: Path) -> None:
    write_rows(tmp_path, [{"claim": "Odelay won.", "label": "SUPPORTS",
                           "evidence": "Odelay\tIt won a [[Grammy_Award|Grammy]].\nBeck\tBeck made [[Odelay]].",
                           "questions": [{"question": "Did it win?", "answers": [
                               {"answer": "Yes", "answer_type": "Boolean", "boolean_explanation": "It won in 1997.",
                                "source_url": "https://a.org"},
                               {"answer": "No answer could be found.", "answer_type": "Unanswerable",
                                "source_url": "https://b.org"}]}]}])
    lines = {"_target_": "factlab.data.loaders.nested.evidence_lines", "field": "evidence"}
    case = load_dataset(nested_config(tmp_path, lines)).cases[0]
    assert [(s["title"], s["text"]) for s in case["sources"]] == [("Odelay", "It won a Grammy."),
                                                                  ("Beck", "Beck made Odelay.")]
    qa = {"_target_": "factlab.data.loaders.nested.evidence_qa", "field": "questions", "question": "question",
          "answers": "answers", "answer": "answer", "url": "source_url", "explanation": "boolean_explanation",
          "answer_type": "answer_type", "skip_types": ["Unanswerable"]}
    case = load_dataset(nested_config(tmp_path, qa)).cases[0]
    assert [e["text"] for e in case["claims"][0]["evidence"]] == ["Q: Did it win? A: Yes It won in 1997."]


def test_corpus_join_reads_numpy_printed_sentences(tmp_path: Path) -> None:
    (tmp_path / "corpus.csv").write_text(
        'doc_id,title,abstract\n'
        '11,Trial A,"[\'Background here.\'\n \'Drug X lowered mortality by 20%.\' ""It\'s safe.""]"\n'
        '12,Trial B,"[\'Unrelated.\']"\n', encoding="utf-8")
    write_rows(tmp_path, [
        {"id": 1, "claim": "X lowers mortality.", "evidence": {"11": [{"sentences": [1], "label": "SUPPORT"}]},
         "cited_doc_ids": [11]},
        {"id": 2, "claim": "X cures all.", "evidence": {}, "cited_doc_ids": [12]}])
    config = {"_target_": "factlab.data.loaders.corpus_join.load", "name": "join", "data_root": str(tmp_path),
              "files": ["rows.jsonl"], "format": "jsonl", "lang": "en", "vertical": "medical", "max_rows": None,
              "fields": {"id": "id", "claim": "claim", "evidence": "evidence", "cited": "cited_doc_ids"},
              "corpus": {"file": "corpus.csv", "format": "csv", "id": "doc_id", "title": "title",
                         "sentences": "abstract"},
              "labels": {"SUPPORT": {"relation": "support", "label": "correct"},
                         "NEI": {"relation": "insufficient", "label": "unverifiable"}},
              "missing_label": "NEI"}
    supported, unknown = load_dataset(config).cases
    assert supported["sources"][0]["text"] == "Background here. Drug X lowered mortality by 20%. It's safe."
    assert [e["text"] for e in supported["claims"][0]["evidence"]] == ["Drug X lowered mortality by 20%."]
    assert (unknown["claims"][0]["label"], unknown["sources"][0]["title"]) == ("unverifiable", "Trial B")
    assert "evidence" not in unknown["claims"][0]
