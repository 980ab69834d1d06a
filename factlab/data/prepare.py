"""Prepare a dataset for training and evaluation: load, sample, split, write split files and a manifest.

Run through scripts/prepare_data.py (config conf/prepare_data.yaml). Writes into `output_dir`:
`train.jsonl`, `val.jsonl`, `test.jsonl` (valid case files, each case with its `split`; an empty split is not
written), the corpus files those cases name, and `manifest.json` (counts per split / label / language / relation,
the case ids of each split, the content hashes, the resolved config).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from factlab.data.cases import SPLITS, canonical_json, case_row, write_cases
from factlab.data.loaders.build import resolve_path
from factlab.data.registry import content_hash, load_dataset, summarise
from factlab.data.splits import seeded_sample, split_cases
from factlab.schema import LABELS


def run(cfg: DictConfig) -> dict:
    """Load `cfg.dataset`, sample `cfg.max_cases`, split by `cfg.splits` with `cfg.seed`, write to `cfg.output_dir`.

    Returns:
        The manifest (also written as manifest.json).
    """
    resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    dataset = load_dataset(cfg.dataset)
    cases = seeded_sample(dataset.cases, cfg.max_cases, cfg.seed)
    splits = split_cases(cases, cfg.splits, cfg.seed)
    output = resolve_path(cfg.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    corpus_files = _write_corpora(output, cases)
    files = {}
    for name in SPLITS:
        path = output / f"{name}.jsonl"
        path.unlink(missing_ok=True)  # a stale split from an earlier run must not survive
        if splits.get(name):
            write_cases(path, (_with_corpus(case, corpus_files) for case in splits[name]))
            files[name] = path.name
    prepared = [case for name in SPLITS for case in splits.get(name, [])]
    manifest = {
        "dataset": dataset.name,
        "content_hash": dataset.content_hash,  # of everything the dataset config loaded
        "prepared_hash": content_hash(prepared),  # of the written cases (after sampling, with `split`)
        "seed": cfg.seed,
        "max_cases": cfg.max_cases,
        "fractions": dict(resolved["splits"]),
        "counts": {name: summarise(splits.get(name, [])) for name in SPLITS},
        "files": {**files, "corpus": sorted(corpus_files.values())},
        "case_ids": {name: [case["case_id"] for case in splits.get(name, [])] for name in SPLITS},
        "config": resolved,
    }
    (output / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    manifest["output_dir"] = str(output)
    return manifest


def counts_table(manifests: list[dict]) -> str:
    """A markdown table of claims per split and gold label (and cases, languages) for prepared manifests.

    >>> counts = {"total": {"cases": 2, "claims": 3}, "lang": {"en": 2}, "label": {"correct": 2, "wrong": 1}}
    >>> print(counts_table([{"dataset": "d", "content_hash": "ab" * 32, "counts": {"train": counts}}]))
    | dataset | split | cases | lang | claims | correct | wrong | disputed | unverifiable |
    |---|---|---|---|---|---|---|---|---|
    | d (abababababab) | train | 2 | en 2 | 3 | 2 | 1 | 0 | 0 |
    """
    head = ["dataset", "split", "cases", "lang", "claims", *LABELS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for manifest in manifests:
        name = f"{manifest['dataset']} ({manifest['content_hash'][:12]})"
        for split, counts in manifest["counts"].items():
            if not counts["total"]["cases"]:
                continue
            lang = " / ".join(f"{key} {value}" for key, value in sorted(counts["lang"].items()))
            labels = [str(counts["label"].get(label, 0)) for label in LABELS]
            row = [name, split, str(counts["total"]["cases"]), lang, str(counts["total"]["claims"]), *labels]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def manifest_table_main(argv: list[str] | None = None) -> int:
    """scripts/manifest_table.py: `counts_table` of the manifests (manifest.json files, or the folders holding them),
    printed."""
    parser = argparse.ArgumentParser(description="Print a markdown table of cases and claims per split and gold "
                                                 "label from prepare_data manifests.")
    parser.add_argument("manifests", nargs="+", type=Path, help="manifest.json files, or the folders holding them")
    args = parser.parse_args(argv)
    manifests = []
    for path in args.manifests:
        path = path / "manifest.json" if path.is_dir() else path
        if not path.is_file():
            parser.error(f"{path}: no such manifest (write one with scripts/prepare_data.py)")
        manifests.append(json.loads(path.read_text(encoding="utf-8")))
    print(counts_table(manifests))
    return 0


def _write_corpora(output: Path, cases: list[dict]) -> dict[int, str]:
    """Write each distinct corpus named by the cases once into `output`; id(sources) -> its file name there."""
    written: dict[int, str] = {}
    for case in cases:
        if "corpus" not in case or id(case["sources"]) in written:
            continue
        name = Path(case["corpus"]).name
        stem, suffix, number = Path(name).stem, Path(name).suffix, 1
        while name in written.values() or name in {f"{split}.jsonl" for split in SPLITS}:
            number += 1
            name = f"{stem}_{number}{suffix}"
        with (output / name).open("w", encoding="utf-8") as handle:
            handle.writelines(canonical_json(record) + "\n" for record in case["sources"])
        written[id(case["sources"])] = name
    return written


def _with_corpus(case: dict, corpus_files: dict[int, str]) -> dict:
    """The case as written next to its copied corpus file."""
    return {**case_row(case), "corpus": corpus_files[id(case["sources"])]} if "corpus" in case else case
