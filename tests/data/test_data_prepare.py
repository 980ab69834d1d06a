"""prepare_data: split files that are valid case files again, their corpus copied, and a manifest with counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factlab.config import compose_config
from factlab.data.cases import load_cases
from factlab.data.prepare import manifest_table_main, run


def make_bundle(folder: Path, en_case: dict, zh_case: dict, corpus: list[dict], write_jsonl, count: int = 20) -> None:
    folder.mkdir()
    write_jsonl(folder / "corpus.jsonl", corpus)
    cases = []
    for index in range(count):
        case = json.loads(json.dumps(en_case if index % 2 else zh_case))
        case["case_id"] = f"b-{index:03d}"
        for claim in case["claims"]:
            claim["text"] = f"{claim['text']} ({index})"
        cases.append(case)
    write_jsonl(folder / "cases_mixed.jsonl", cases)


def test_prepare_writes_splits_corpus_and_manifest(tmp_path: Path, en_case, zh_case, corpus, write_jsonl) -> None:
    make_bundle(tmp_path / "bundle", en_case, zh_case, corpus, write_jsonl)
    out = tmp_path / "out"
    cfg = compose_config("prepare_data", [f"dataset.data_root={tmp_path / 'bundle'}", f"output_dir={out}",
                                          "splits.train=0.6", "splits.val=0.2", "splits.test=0.2"])
    manifest = run(cfg)
    assert sorted(p.name for p in out.iterdir()) == ["corpus.jsonl", "manifest.json", "test.jsonl", "train.jsonl",
                                                     "val.jsonl"]
    written = json.loads((out / "manifest.json").read_text())
    assert written["content_hash"] == manifest["content_hash"] and len(written["content_hash"]) == 64
    assert {name: written["counts"][name]["total"]["cases"] for name in ("train", "val", "test")} == {
        "train": 12, "val": 4, "test": 4}
    assert written["counts"]["test"]["lang"] == {"zh": 2, "en": 2}
    assert written["config"]["dataset"]["name"] == "bundled"
    seen = []
    for name in ("train", "val", "test"):
        cases = load_cases(out / f"{name}.jsonl")  # prepared files are valid case files, corpus resolved
        assert {case["split"] for case in cases} == {name}
        seen += [case["case_id"] for case in cases]
    assert sorted(seen) == [f"b-{index:03d}" for index in range(20)]
    assert sorted(sum(written["case_ids"].values(), [])) == sorted(seen)
    again = run(cfg)
    assert again["prepared_hash"] == manifest["prepared_hash"]  # same seed, same files


def test_max_cases_samples_before_splitting(tmp_path: Path, en_case, zh_case, corpus, write_jsonl) -> None:
    make_bundle(tmp_path / "bundle", en_case, zh_case, corpus, write_jsonl)
    out = tmp_path / "out"
    manifest = run(compose_config("prepare_data", [f"dataset.data_root={tmp_path / 'bundle'}", f"output_dir={out}",
                                                   "max_cases=10"]))
    assert sum(manifest["counts"][name]["total"]["cases"] for name in ("train", "val", "test")) == 10
    assert manifest["counts"]["train"]["total"]["cases"] == 8


def test_manifest_table_script_prints_counts_per_split_and_label(tmp_path: Path, en_case, zh_case, corpus,
                                                                 write_jsonl, capsys) -> None:
    make_bundle(tmp_path / "bundle", en_case, zh_case, corpus, write_jsonl)
    out = tmp_path / "out"
    manifest = run(compose_config("prepare_data", [f"dataset.data_root={tmp_path / 'bundle'}", f"output_dir={out}",
                                                   "splits.train=0.6", "splits.val=0.2", "splits.test=0.2"]))
    assert manifest_table_main([str(out)]) == 0
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()[2:]]
    assert [row[1] for row in rows] == ["train", "val", "test"]
    assert [int(row[2]) for row in rows] == [12, 4, 4]
    claims = sum(manifest["counts"]["test"]["label"].values())
    labels = [int(cell) for cell in rows[2][5:8]] + [int(rows[2][8].rstrip(" |"))]
    assert int(rows[2][4]) == claims == sum(labels) and labels[0] == manifest["counts"]["test"]["label"]["correct"]
    with pytest.raises(SystemExit):
        manifest_table_main([str(tmp_path / "nowhere")])
