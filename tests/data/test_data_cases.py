"""Case-file loading and validation: good rows load; every bad row names file, line, field, expected vs got."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factlab.data.cases import case_row, load_cases, load_corpus, write_cases
from factlab.data.errors import CaseError


def test_good_file_loads_with_corpus_resolved_once(case_dir: Path, en_case, zh_case, corpus, write_jsonl) -> None:
    write_jsonl(case_dir / "cases.jsonl", [en_case, zh_case, {**en_case, "case_id": "t-en-0002"}])
    cases = load_cases(case_dir / "cases.jsonl")
    assert [c["case_id"] for c in cases] == ["t-en-0001", "t-zh-0001", "t-en-0002"]
    assert cases[0]["sources"] == corpus
    assert cases[0]["sources"] is cases[2]["sources"]  # one load per corpus file, shared
    assert cases[0]["corpus"] == "corpus.jsonl"
    assert cases[1]["sources"][0]["source_id"] == "zh-src"


def test_written_cases_read_back_unchanged(case_dir: Path, tmp_path: Path) -> None:
    cases = load_cases(case_dir / "cases.jsonl")
    write_cases(case_dir / "copy.jsonl", cases)
    again = load_cases(case_dir / "copy.jsonl")
    assert [case_row(c) for c in again] == [case_row(c) for c in cases]
    assert "sources" not in case_row(again[0]) and "sources" in case_row(again[1])


def _set(path: str, value: object):
    """A mutation setting a dotted path (ints index lists) of the en case."""
    def mutate(case: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        target = case
        for key in parents:
            target = target[key]
        target[last] = value
    return mutate


def _delete(path: str):
    def mutate(case: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        target = case
        for key in parents:
            target = target[key]
        del target[last]
    return mutate


BAD_ROWS = [
    # (mutation, field named in the error, words the message must carry)
    (_delete("case_id"), "case_id", ["missing required field"]),
    (_set("lang", "fr"), "lang", ["expected one of zh, en", "'fr'"]),
    (_set("text", ""), "text", ["non-empty"]),
    (_set("text", 5), "text", ["expected string, got integer"]),
    (_set("vertical", "cooking"), "vertical", ["expected one of", "'cooking'"]),
    (_set("error_type", "typo"), "error_type", ["citation_splicing", "'typo'"]),
    (_set("colour", "red"), "colour", ["unknown field"]),
    (_set("paragraphs", [[0, 45], [40, 88]]), "paragraphs[1]", ["non-overlapping"]),
    (_set("paragraphs", [[0, 999]]), "paragraphs[0]", ["len(text) = 88"]),
    (_set("paragraphs", [[0, "x"]]), "paragraphs[0]", ["[start, end] integers"]),
    (_set("sentences.1.text", "Not in the text."), "sentences[1].text", ["verbatim substring of `text`"]),
    (_set("sentences.1.text", "It was mass produced"), "sentences[1].text",
     ["one whole sentence as the pipeline splits", "'It was mass produced'"]),
    (_set("sentences.0.checkworthy", "yes"), "sentences[0].checkworthy", ["expected boolean, got string"]),
    (_set("claims.1.relation", "supports"), "claims[1].relation", ["expected one of support", "write 'support'"]),
    (_set("claims.1.relation", "maybe"), "claims[1].relation", ["partial_support", "'maybe'"]),
    (_set("claims.1.label", "true"), "claims[1].label",
     ["correct, wrong, disputed, unverifiable", "'true'", "conf/dataset/<name>.yaml"]),
    (_set("claims.1.claim_id", "c1"), "claims[1].claim_id", ["unique claim ids"]),
    (_set("claims.1.paragraph", 5), "claims[1].paragraph", ["index into `paragraphs`"]),
    (_set("claims.0.sentence", "Elsewhere."), "claims[0].sentence", ["verbatim substring"]),
    (_set("claims.0.paragraph", 1), "claims[0].paragraph", ["expected 0 (the paragraph holding its `sentence`)"]),
    (_set("sentences.0.checkworthy", False), "claims[0].sentence", ["mark not check-worthy", "Penicillin was"]),
    (_set("sentences.1.checkworthy", True), "sentences[1]", ["at least one claim", "'I love it.'"]),
    (_set("claims.0.checkworthy", 1), "claims[0].checkworthy", ["expected boolean, got integer"]),
    (_set("claims.0.queries", ["ok", ""]), "claims[0].queries[1]", ["non-empty string"]),
    (_set("claims.0.evidence.1.source_id", "nowhere"), "claims[0].evidence[1].chunk_id",
     ["expected nowhere#p<page>-c<n>"]),
    (_set("claims.0.evidence.0.chunk_id", "who-penicillin#p2-c1"), "claims[0].evidence[0].chunk_id",
     ["page 1..1 of who-penicillin"]),
    (_set("claims.0.evidence.0.chunk_id", "who-penicillin-p1"), "claims[0].evidence[0].chunk_id",
     ["who-penicillin#p<page>-c<n>"]),
    (_set("claims.0.evidence.1.text", "Fleming worked in London at St Mary's."), "claims[0].evidence[1].text",
     ["page 1 of source blog-penicillin"]),
    (_delete("claims.0.evidence.0.relation"), "claims[0].evidence[0].relation", ["missing required field"]),
    (_set("claims.0.evidence.0.tier", 4), "claims[0].evidence[0].tier", ["1, 2 or 3", "4"]),
    (_set("review.0.action", "keep"), "review[0].fixed", ["exactly when action is 'fix'"]),
    (_set("review.0.flaw", "bad"), "review[0].flaw", ["wrong_subject", "'bad'"]),
    (_delete("corpus"), "corpus", ["exactly one of `corpus`", "neither"]),
    (_set("sources", []), "corpus", ["exactly one of `corpus`", "both"]),
    (_set("corpus", "missing.jsonl"), "corpus", ["missing.jsonl", "looked for"]),
    (_set("split", "dev"), "split", ["train, val, test", "'dev'"]),
]


@pytest.mark.parametrize(("mutate", "field", "words"), BAD_ROWS, ids=[row[1] + ":" + row[2][0] for row in BAD_ROWS])
def test_bad_row_names_file_line_field(case_dir: Path, en_case, zh_case, write_jsonl, mutate, field: str,
                                       words: list[str]) -> None:
    bad = en_case
    mutate(bad)
    path = write_jsonl(case_dir / "cases.jsonl", [zh_case, bad])  # the bad row is on line 2
    with pytest.raises(CaseError) as caught:
        load_cases(path)
    error = caught.value
    assert (error.where, error.field) == (f"{path} line 2", field)
    message = str(error)
    assert message.startswith(f"{path} line 2: {field}: ")
    for word in words:
        assert word in message


def test_inline_source_errors_name_the_source_path(case_dir: Path, zh_case, write_jsonl) -> None:
    bad = zh_case
    bad["sources"][0]["source_id"] = "ZH SRC"
    path = write_jsonl(case_dir / "cases.jsonl", [bad])
    with pytest.raises(CaseError, match=r"line 1: sources\[0\]\.source_id: expected \[a-z0-9-\]\+, got 'ZH SRC'"):
        load_cases(path)


def test_duplicate_case_id_names_both_lines(case_dir: Path, en_case, zh_case, write_jsonl) -> None:
    path = write_jsonl(case_dir / "cases.jsonl", [zh_case, en_case, zh_case])
    with pytest.raises(CaseError, match=r"line 3: case_id: .*'t-zh-0001' again \(first at .*line 1\)"):
        load_cases(path)


def test_invalid_json_and_non_object_rows(case_dir: Path, zh_case, write_jsonl) -> None:
    path = write_jsonl(case_dir / "cases.jsonl", [zh_case, "{not json"])
    with pytest.raises(CaseError, match=r"line 2: \(line\): not JSON"):
        load_cases(path)
    path = write_jsonl(case_dir / "cases.jsonl", ["[1, 2]"])
    with pytest.raises(CaseError, match=r"line 1: \(row\): expected an object, got list"):
        load_cases(path)


def test_invalid_utf8_names_file_and_line(case_dir: Path, zh_case) -> None:
    path = case_dir / "cases.jsonl"
    good = json.dumps(zh_case).encode()
    path.write_bytes(good + b'\n\n{"case_id": "b\xff"}\n')
    with pytest.raises(CaseError, match=r"cases\.jsonl line 3: \(bytes\): expected UTF-8 text"):
        load_cases(path)


def test_empty_file_and_empty_result_are_errors(case_dir: Path) -> None:
    empty = case_dir / "empty.jsonl"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(CaseError, match=r"empty\.jsonl: \(file\): expected at least one case"):
        load_cases(empty)
    with pytest.raises(CaseError, match="expected at least one case, got none"):
        load_cases(case_dir / "cases.jsonl", max_rows=0)
    with pytest.raises(CaseError, match="expected at least one case file"):
        load_cases([])


def test_bad_corpus_record_names_corpus_file_and_line(case_dir: Path, corpus, write_jsonl) -> None:
    write_jsonl(case_dir / "corpus.jsonl", [corpus[0], {**corpus[1], "text": "both"}])
    with pytest.raises(CaseError, match=r"corpus\.jsonl line 2: text: expected exactly one of `text` or `pages`"):
        load_cases(case_dir / "cases.jsonl")
    write_jsonl(case_dir / "corpus.jsonl", [corpus[0], corpus[0]])
    with pytest.raises(CaseError, match=r"corpus\.jsonl line 2: source_id: .*'who-penicillin' again"):
        load_corpus(case_dir / "corpus.jsonl")


def test_max_rows_reads_the_first_rows(case_dir: Path) -> None:
    assert [c["case_id"] for c in load_cases(case_dir / "cases.jsonl", max_rows=1)] == ["t-en-0001"]
