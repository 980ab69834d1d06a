"""Cases -> VERL's RL parquet rows (what `scripts/prepare_rl_data.py` writes and both RL recipes read).

A row: `data_source` ("factlab/<dataset>"), `prompt` (chat messages: the Search-R1 system prompt and the claim),
`ability`, `reward_model` (`style` "rule", `ground_truth` = relation, label, gold chunk ids), `agent_name`
("tool_agent": VERL's tool-calling agent loop) and `extra_info` (split, index, case id, claim, lang, vertical,
multi_hop and `tools_kwargs`: the `search` tool's corpus key).

The sources of all selected cases form ONE corpus per prepared dataset (deduplicated by source id), so the model
searches among every case's sources, not just the gold ones.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from factlab.data.views import rl_rows
from factlab.train.rl.format import TOOL_NAME, system_prompt

logger = logging.getLogger(__name__)

ABILITY = "fact_verification"
SPLITS: tuple[str, ...] = ("train", "val", "test")


def union_sources(cases: Iterable[dict]) -> list[dict]:
    """Every source record of the cases once, by source id (the first copy wins; differing copies are logged).

    >>> a = {"source_id": "a", "text": "x"}
    >>> [s["source_id"] for s in union_sources([{"sources": [a]}, {"sources": [a, {"source_id": "b", "text": "y"}]}])]
    ['a', 'b']
    """
    seen: dict[str, dict] = {}
    conflicts = 0
    for case in cases:
        for source in case.get("sources") or []:
            first = seen.setdefault(source["source_id"], source)
            conflicts += first is not source and first != source
    if conflicts:
        logger.warning("%d sources share a source_id with different content; the first copy is kept", conflicts)
    return list(seen.values())


def corpus_key(dataset: str, sources: Sequence[dict]) -> str:
    """`<dataset>-<8 hex of the corpus content hash>`: a new key whenever the corpus changes.

    >>> corpus_key("bundled", [{"source_id": "a", "text": "x"}])
    'bundled-6fc2ccea'
    """
    from factlab.data.registry import content_hash

    return f"{dataset}-{content_hash(sources)[:8]}"


def verl_rows(cases: Iterable[dict], dataset: str, split: str, corpus: str) -> list[dict]:
    """VERL rows of the claims of `cases` that have a gold relation or label.

    >>> case = {"case_id": "x", "lang": "en", "vertical": "medical", "claims": [{"text": "c", "label": "correct"}]}
    >>> row = verl_rows([case], "bundled", "train", "bundled-00")[0]
    >>> row["data_source"], row["prompt"][1], row["extra_info"]["tools_kwargs"]
    ('factlab/bundled', {'role': 'user', 'content': 'c'}, {'search': {'create_kwargs': {'corpus': 'bundled-00'}}})
    """
    cases = list(cases)
    by_id = {case["case_id"]: case for case in cases}
    claims = {(case["case_id"], claim["text"]): claim for case in cases for claim in case.get("claims", [])}
    rows = []
    for index, row in enumerate(rl_rows(cases)):
        info = row["extra_info"]
        case, claim = by_id[info["case_id"]], claims[(info["case_id"], info["claim"])]
        prompt = [{"role": "system", "content": system_prompt()}, *row["prompt"][1:]]
        rows.append({
            "data_source": f"factlab/{dataset}",
            "prompt": prompt,
            "ability": ABILITY,
            "reward_model": {"style": "rule", "ground_truth": row["ground_truth"]},
            "agent_name": "tool_agent",
            "extra_info": {**info, "split": split, "index": index,
                           "vertical": claim.get("vertical") or case.get("vertical") or "general",
                           "multi_hop": bool(claim.get("multi_hop")), "need_tools_kwargs": True,
                           "tools_kwargs": {TOOL_NAME: {"create_kwargs": {"corpus": corpus}}}},
        })
    return rows


ROW_SAMPLES = ("first", "seeded")


def write_rl_data(splits: dict[str, list[dict]], dataset: str, out_dir: str | Path, multi_hop_only: bool = False,
                  max_rows: dict[str, int | None] | None = None, row_sample: str = "seeded", seed: int = 0) -> dict:
    """Write `<split>.parquet` per split and the union corpus of all splits' sources; return the manifest.

    Args:
        splits: split name -> cases (as `factlab.data.splits.split_cases` returns them).
        dataset: the dataset name (data_source and corpus key).
        out_dir: output folder: `<split>.parquet`, `corpora/<key>/corpus.jsonl`, `manifest.json`.
        multi_hop_only: keep only claims marked `multi_hop`.
        max_rows: at most this many rows per split (None = all).
        row_sample: which rows a capped split keeps: `first` (the split's first rows: whole cases in split order, so
            32 bundled train rows are a handful of English cases) or `seeded` (a seeded sample over the whole split,
            `factlab.data.splits.seeded_sample`, in split order: every language and vertical in proportion).
        seed: the sample's seed (`seeded`).

    Returns:
        The manifest: `files` and `rows` per split, the `corpus` key and its `corpus_dir`.

    Raises:
        ValueError: no multi-hop claim (with multi_hop_only), no train row, or an unknown `row_sample`.
    """
    import pandas as pd

    from factlab.data.splits import seeded_sample

    if row_sample not in ROW_SAMPLES:
        raise ValueError(f"row_sample: expected one of {ROW_SAMPLES}, got {row_sample!r}")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if multi_hop_only:
        splits = {name: [{**case, "claims": [c for c in case.get("claims", []) if c.get("multi_hop")]}
                         for case in cases] for name, cases in splits.items()}
        splits = {name: [case for case in cases if case["claims"]] for name, cases in splits.items()}
        if not any(splits.values()):
            raise ValueError(f"dataset {dataset!r}: no claim is marked multi_hop; drop multi_hop_only")
    sources = union_sources(case for cases in splits.values() for case in cases)
    key = corpus_key(dataset, sources)
    corpus_dir = out / "corpora" / key
    corpus_dir.mkdir(parents=True, exist_ok=True)
    (corpus_dir / "corpus.jsonl").write_text(
        "".join(json.dumps(source, ensure_ascii=False) + "\n" for source in sources), encoding="utf-8")
    manifest = {"dataset": dataset, "corpus": key, "corpus_dir": str(corpus_dir.resolve()), "files": {}, "rows": {}}
    for split in SPLITS:
        rows = verl_rows(splits.get(split, []), dataset, split, key)
        limit = (max_rows or {}).get(split) or None
        rows = seeded_sample(rows, limit, seed) if row_sample == "seeded" else rows[:limit]
        if not rows:
            continue
        path = out / f"{split}.parquet"
        pd.DataFrame(rows).to_parquet(path)
        manifest["files"][split] = str(path.resolve())
        manifest["rows"][split] = len(rows)
    if "train" not in manifest["files"]:
        raise ValueError(f"dataset {dataset!r}: no train rows (claims with a gold relation or label); "
                         "pick another dataset or lower the val/test fractions")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return manifest


def prepare(cases: Sequence[dict], dataset: str, out_dir: str | Path, split_fractions: dict[str, float],
            seed: int = 0, multi_hop_only: bool = False, max_rows: dict[str, int | None] | None = None,
            row_sample: str = "seeded") -> dict:
    """Split the cases at case level (factlab.data.splits) and `write_rl_data` them; returns the manifest."""
    from factlab.data.splits import split_cases

    splits = split_cases(list(cases), split_fractions, seed)
    return write_rl_data(splits, dataset, out_dir, multi_hop_only=multi_hop_only, max_rows=max_rows,
                         row_sample=row_sample, seed=seed)
