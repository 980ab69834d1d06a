"""Reflow: turn the attributed bad cases of an evaluate.py run into training rows of the blamed stage.

Each row is a case in the case schema (datasets/README.md) carrying ONLY the gold its stage trains on (a judge row:
the claim, its gold evidence and relation; a vertical row: the claim and its vertical; ...), so every view of
factlab/data (DSPy examples for optimize.py, classifier / SFT rows for train.py) reads it unchanged, plus
`provenance` (run id, case id, claim id, method, the evidence for the blame) and `split: train`. Rows go to
`<out_dir>/<stage>/<run id>.jsonl`, deduplicated against every row already there and against the test split of
every dataset named (a reflowed row must never teach a test claim). `dataset.extra=reflow` adds them to a run's data.
`main` is the command line (scripts/reflow.py).
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from factlab.data.cases import canonical_json, load_cases
from factlab.data.jsonl import read_jsonl
from factlab.data.loaders.build import resolve_path
from factlab.evals.gold import gold_claims
from factlab.schema import normalise_text

logger = logging.getLogger(__name__)

# stages without a training format: their blamed cases are counted, not exported
NOT_TRAINABLE: tuple[str, ...] = ("retrieval", "rules", "none", "several")
_CLAIM_KEYS = {  # the claim fields each claim-level stage's row keeps
    "vertical": ("claim_id", "text", "vertical"),
    "query_rewrite": ("claim_id", "text", "queries", "evidence"),
    "judge": ("claim_id", "text", "evidence", "relation", "label"),
}


def _pick(claim: Mapping, keys: Iterable[str]) -> dict:
    return {k: claim[k] for k in keys if k in claim}


def _sources_of(case: Mapping, claims: Sequence[Mapping]) -> list[dict]:
    wanted = {e["source_id"] for c in claims for e in c.get("evidence", [])}
    return [dict(s) for s in case.get("sources", []) if s["source_id"] in wanted]


def stage_row(stage: str, case: Mapping, claim: Mapping, blame: Mapping) -> dict | None:
    """The gold of `stage` for one bad claim, as a case-schema row (without id / provenance); None when the stage
    has no training format or the case lacks its gold.

    Args:
        stage: the blamed stage.
        case: the gold case.
        claim: the gold claim whose label was wrong.
        blame: its attribution row (the matched draft / predicted claim feed the review row).
    """
    base = {"lang": case["lang"], "sources": []}
    if stage == "paragraphs":
        return {**base, "text": case["text"], "paragraphs": case["paragraphs"]} if case.get("paragraphs") else None
    if stage == "checkworthy":
        sentence = claim.get("sentence") or claim["text"]
        gold = next((s for s in case.get("sentences", []) if s["text"] == sentence),
                    {"text": sentence, "checkworthy": True, "reason": ""})
        return {**base, "text": sentence, "sentences": [dict(gold)]}
    if stage in ("extract_claims", "review_claims"):
        spans = case.get("paragraphs") or [[0, len(case["text"])]]
        index = claim.get("paragraph", 0)
        start, end = spans[index] if 0 <= index < len(spans) else (0, len(case["text"]))
        paragraph = case["text"][start:end]
        own = [c for c in gold_claims(case) if c.get("paragraph", 0) == index or len(spans) == 1]
        claims = [{**_pick(c, ("claim_id", "text", "checkworthy")),
                   **({"sentence": c["sentence"]} if c.get("sentence", "") in paragraph else {})} for c in own]
        row = {**base, "text": paragraph, "claims": claims}
        if stage == "extract_claims":
            return row
        draft = blame.get("draft") or blame.get("pred_claim")
        if not draft:
            return None
        item = ({"draft": draft, "action": "keep", "flaw": "none"} if draft == claim["text"] else
                {"draft": draft, "action": "fix", "fixed": claim["text"], "flaw": "none"})
        return {**row, "review": [item]}
    if stage in _CLAIM_KEYS:
        needs = {"vertical": "vertical", "query_rewrite": "evidence", "judge": "relation"}[stage]
        if not claim.get(needs) or (stage == "judge" and not claim.get("evidence")):
            return None
        kept = _pick(claim, _CLAIM_KEYS[stage])
        return {**base, "text": claim["text"], "claims": [kept], "sources": _sources_of(case, [kept])}
    return None


def row_keys(row: Mapping) -> set[str]:
    """The normalised texts of a row that must not meet a test split: its text, claims and sentences.

    >>> sorted(row_keys({"text": "A b.", "claims": [{"text": "C d"}], "sentences": [{"text": "A b."}]}))
    ['a b', 'c d']
    """
    keys = {normalise_text(row["text"])}
    keys |= {normalise_text(c["text"]) for c in row.get("claims", [])}
    keys |= {normalise_text(s["text"]) for s in row.get("sentences", [])}
    return {k for k in keys if k}


def held_out_keys(cases: Iterable[Mapping]) -> tuple[set[str], set[str]]:
    """(case ids, normalised texts: case text, claims, sentences) of test cases."""
    ids, keys = set(), set()
    for case in cases:
        ids.add(case["case_id"])
        keys |= row_keys(case)
    return ids, keys


def content_key(row: Mapping) -> str:
    """What makes two rows of one stage the same row: everything but id, split and provenance."""
    return canonical_json({k: v for k, v in row.items() if k not in ("case_id", "split", "provenance")})


def held_out_cases(datasets: Mapping[str, DictConfig], splits: Mapping[str, float], seed: int,
               prepared_root: Path) -> list[dict]:
    """Test-split cases of the named datasets (these fractions and seed) and of every prepared/*/test.jsonl."""
    from factlab.data.registry import load_dataset
    from factlab.data.splits import split_cases

    out = []
    for name, dataset_cfg in datasets.items():
        try:
            out += split_cases(load_dataset(dataset_cfg).cases, splits, seed)["test"]
        except Exception as exc:  # a public dataset missing on this machine: say so, keep going
            logger.warning("reflow: test split of dataset %s unavailable (%s); rows are not checked against it",
                           name, exc)
    for path in sorted(prepared_root.glob("*/test.jsonl")):
        out += load_cases(path)
    return out


def reflow_run(cfg: DictConfig, prepared_root: Path) -> dict:
    """Export the attributed bad cases of MLflow run `cfg.reflow.run` (see the module docstring).

    Args:
        cfg: the composed evaluate config (its `reflow` and `tracking` nodes are used).
        prepared_root: folder of prepared datasets (prepared/<name>/test.jsonl are test splits too).

    Returns:
        Counts: exported per stage, skipped (no training format / no gold), dropped (test overlap, duplicates).
    """
    import mlflow

    from factlab.config import compose_config
    from factlab.data.registry import load_dataset
    from factlab.evals.job import ARTIFACTS
    from factlab.tracking.store import tracking_uri

    run_id = cfg.reflow.run
    if not run_id:
        raise ValueError("reflow: pass the evaluate.py run to export: python scripts/reflow.py run=<MLflow run id>")
    uri = tracking_uri(cfg.tracking.tracking_uri)
    client = mlflow.MlflowClient(tracking_uri=uri)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            config = json.loads(Path(client.download_artifacts(run_id, f"{ARTIFACTS}/config.json", tmp)).read_text())
            attribution = Path(client.download_artifacts(run_id, f"{ARTIFACTS}/attribution.jsonl", tmp))
        except Exception as exc:
            raise ValueError(f"reflow: run {run_id} in {uri} has no {ARTIFACTS}/config.json and "
                             f"{ARTIFACTS}/attribution.jsonl; pass the id of an evaluate.py run") from exc
        blamed = read_jsonl(attribution)
    dataset_cfg = OmegaConf.create(config["dataset"])
    cases = {c["case_id"]: c for c in load_dataset(dataset_cfg).cases}
    names = {str(n): compose_config("evaluate", [f"dataset={n}"]).dataset for n in cfg.reflow.test_datasets}
    names[dataset_cfg.name] = dataset_cfg
    test_ids, keys = held_out_keys(held_out_cases(names, config["splits"], config["seed"], prepared_root))

    wanted: dict[tuple[str, str, str], dict] = {}
    for row in blamed:
        for method in cfg.reflow.methods:
            if method not in row:
                raise ValueError(f"reflow.methods: {method!r} is not an attribution method of run {run_id}")
            entry = wanted.setdefault((row["case_id"], row["claim_id"], row[method]), {"row": row, "methods": {}})
            entry["methods"][method] = row[f"{method}_evidence"]
    out_dir = resolve_path(cfg.reflow.out_dir)
    counts: dict[str, dict[str, int]] = {}
    rows_by_stage: dict[str, list[dict]] = {}
    for (case_id, claim_id, stage), entry in wanted.items():
        tally = counts.setdefault(stage, {"exported": 0, "no_training_format": 0, "in_test": 0, "duplicate": 0})
        case = cases.get(case_id)
        claim = next((c for c in (case or {}).get("claims", []) if c["claim_id"] == claim_id), None)
        row = stage_row(stage, case, claim, entry["row"]) if stage not in NOT_TRAINABLE and claim else None
        if row is None:
            tally["no_training_format"] += 1
            continue
        if case_id in test_ids or row_keys(row) & keys:
            tally["in_test"] += 1
            continue
        row.update(case_id=f"reflow-{stage}-{run_id[:8]}-{case_id}-{claim_id}", split="train",
                   provenance={"run_id": run_id, "dataset": dataset_cfg.name, "split": config["split"],
                               "case_id": case_id, "claim_id": claim_id, "stage": stage,
                               "methods": sorted(entry["methods"]), "evidence": entry["methods"]})
        rows_by_stage.setdefault(stage, []).append(row)
    written = write_rows(rows_by_stage, out_dir, run_id, counts)
    return {"run_id": run_id, "counts": counts, "files": written}


def write_rows(rows_by_stage: Mapping[str, Sequence[dict]], out_dir: Path, name: str,
               counts: dict[str, dict[str, int]]) -> dict[str, str]:
    """Write each stage's rows to `<out_dir>/<stage>/<name>.jsonl`, minus rows already in another file of that folder
    (or twice in these); every written row is loaded back as a valid case. Updates `counts[stage]` ("exported",
    "duplicate") and returns the files written per stage (a stage with nothing new writes nothing, and an older
    file of this name is removed)."""
    written = {}
    for stage, rows in rows_by_stage.items():
        tally = counts.setdefault(stage, {})
        tally.setdefault("duplicate", 0)
        folder = out_dir / stage
        target = folder / f"{name}.jsonl"
        seen = {content_key(r) for p in sorted(folder.glob("*.jsonl")) if p != target for r in read_jsonl(p)}
        fresh = []
        for row in rows:
            key = content_key(row)
            if key in seen:
                tally["duplicate"] += 1
                continue
            seen.add(key)
            fresh.append(row)
        if not fresh:
            target.unlink(missing_ok=True)
            continue
        folder.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(canonical_json(r) + "\n" for r in fresh), encoding="utf-8")
        load_cases(target)  # every written row must load as a valid case
        tally["exported"] = len(fresh)
        written[stage] = str(target)
    return written


def main(argv: list[str] | None = None) -> dict:
    """scripts/reflow.py: Hydra overrides of conf/evaluate.yaml (`run=<id>` is `reflow.run=<id>`) -> `reflow_run`'s
    counts and files, printed as JSON and returned."""
    import sys

    from factlab.config import CONF_DIR, compose_config

    args = list(sys.argv[1:] if argv is None else argv)
    overrides = [f"reflow.{a}" if a.startswith("run=") else a for a in args]
    if not any(a.startswith("reflow.run=") for a in overrides):
        raise SystemExit("usage: python scripts/reflow.py run=<MLflow run id of an evaluate.py run> [overrides]")
    cfg = compose_config("evaluate", overrides)
    result = reflow_run(cfg, CONF_DIR.parent / "prepared")
    print(json.dumps(result, indent=2))
    return result
