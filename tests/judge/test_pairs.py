"""Reading public pair sets: formats, label mapping onto relations, clear errors, dedup against target premises."""

from __future__ import annotations

import json

import pytest

from factlab.judge.pairs import NOT_SUPPORT, Pair, PairDataError, dedupe, map_label, read_set


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_jsonl_rows_map_nli_labels_and_skip_no_majority(tmp_path):
    rows = [{"premise": "A dog runs.", "hypothesis": "An animal moves.", "label": "entailment"},
            {"premise": "A dog runs.", "hypothesis": "A cat sleeps.", "label": "contradiction"},
            {"premise": "A dog runs.", "hypothesis": "It is sunny.", "label": "neutral"},
            {"premise": "A dog runs.", "hypothesis": "?", "label": "-"}]
    write(tmp_path / "nli" / "train.jsonl", "\n".join(json.dumps(r) for r in rows))
    spec = {"files": ["nli/*.jsonl"], "reader": "jsonl", "lang": "en", "evidence": "premise", "claim": "hypothesis",
            "label": "label"}
    pairs = read_set("toy", spec, tmp_path)
    assert [p.relations for p in pairs] == [("support",), ("contradict",), ("insufficient",)]
    assert pairs[0].claim == "An animal moves." and pairs[0].evidence == "A dog runs." and pairs[0].source == "toy"


def test_binary_labels_keep_every_relation_but_support():
    assert map_label("not_entailment", "x") == NOT_SUPPORT
    assert "support" not in NOT_SUPPORT
    assert Pair("c", "e", NOT_SUPPORT, "en", "s").relation is None
    assert Pair("c", "e", ("support",), "en", "s").mask() == [1, 0, 0, 0, 0]


def test_tsv_with_named_columns_and_header(tmp_path):
    write(tmp_path / "a.tsv", "1\t前提\t假设\tcontradiction\n")
    write(tmp_path / "b.tsv", "text_a\ttext_b\tlabel\n前提\t假设\tentailment\n")
    one = read_set("a", {"files": ["a.tsv"], "reader": "tsv", "columns": ["id", "p", "h", "label"], "lang": "zh",
                         "evidence": "p", "claim": "h", "label": "label"}, tmp_path)
    two = read_set("b", {"files": ["b.tsv"], "reader": "tsv", "lang": "zh", "evidence": "text_a", "claim": "text_b",
                         "label": "label"}, tmp_path)
    assert one[0].relations == ("contradict",) and two[0].relations == ("support",) and two[0].lang == "zh"


def test_unknown_label_names_file_and_line(tmp_path):
    write(tmp_path / "x.jsonl", json.dumps({"p": "a", "h": "b", "label": "maybe"}) + "\n")
    spec = {"files": ["x.jsonl"], "reader": "jsonl", "lang": "en", "evidence": "p", "claim": "h", "label": "label"}
    with pytest.raises(PairDataError, match=r"x\.jsonl:1: unknown label 'maybe'"):
        read_set("x", spec, tmp_path)


def test_missing_field_names_the_field(tmp_path):
    write(tmp_path / "x.jsonl", json.dumps({"p": "a", "label": "e"}) + "\n")
    spec = {"files": ["x.jsonl"], "reader": "jsonl", "lang": "en", "evidence": "p", "claim": "h", "label": "label"}
    with pytest.raises(PairDataError, match="x.jsonl:1: missing field 'h'"):
        read_set("x", spec, tmp_path)


def test_missing_root_or_file_is_a_clear_error(tmp_path):
    spec = {"files": ["none/*.jsonl"], "reader": "jsonl", "lang": "en", "evidence": "p", "claim": "h", "label": "l"}
    with pytest.raises(PairDataError, match="FACTLAB_DATA_ROOT"):
        read_set("x", spec, tmp_path / "absent")
    with pytest.raises(PairDataError, match="no file matches"):
        read_set("x", spec, tmp_path)


def test_parallel_line_files(tmp_path):
    write(tmp_path / "s1.dev", "A man sleeps.\nA man eats.\n")
    write(tmp_path / "s2.dev", "A person rests.\nNobody eats.\n")
    write(tmp_path / "labels.dev", "entailment\ncontradiction\n")
    pairs = read_set("snli", {"files": ["labels.dev"], "reader": "lines", "lang": "en", "evidence": "s1",
                              "claim": "s2"}, tmp_path)
    assert [(p.claim, p.relations) for p in pairs] == [("A person rests.", ("support",)),
                                                       ("Nobody eats.", ("contradict",))]


def test_contract_nli_reads_evidence_spans_and_windows_for_not_mentioned(tmp_path):
    text = "Clause one. Clause two. Clause three."
    doc = {"id": 1, "text": text, "spans": [[0, 11], [12, 23], [24, 37]], "annotation_sets": [{"annotations": {
        "h1": {"choice": "Entailment", "spans": [1]}, "h2": {"choice": "NotMentioned", "spans": []}}}]}
    labels = {"h1": {"hypothesis": "Two exists."}, "h2": {"hypothesis": "Four exists."}}
    write(tmp_path / "c.json", json.dumps({"documents": [doc], "labels": labels}))
    pairs = read_set("contract", {"files": ["c.json"], "reader": "contract_nli", "lang": "en", "window_spans": 2},
                     tmp_path)
    assert pairs[0] == Pair("Two exists.", "Clause two.", ("support",), "en", "contract")
    assert pairs[1].relations == ("insufficient",) and pairs[1].evidence.startswith("Clause")


def test_dedupe_drops_repeats_and_target_premises():
    pairs = [Pair("c", "Premise one.", ("support",), "en", "a"), Pair("c", "premise ONE", ("support",), "en", "a"),
             Pair("d", "Held out premise", ("support",), "en", "b"), Pair("e", "Other.", ("support",), "en", "b")]
    kept, dropped = dedupe(pairs, {"held out premise"})
    assert [p.claim for p in kept] == ["c", "e"]
    assert dropped == {"a/repeat": 1, "b/target_premise": 1}
