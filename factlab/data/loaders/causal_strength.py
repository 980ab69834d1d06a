"""Causal strength of a science finding: how strongly a sentence asserts that one thing causes another. Public data
nobody here wrote, in one label set (`STRENGTHS`, weakest first):

- causal_language_pubmed (Yu, Li & Wang, EMNLP 2019): 3,061 PubMed conclusion sentences, coded 0 no relationship /
  1 direct causal / 2 conditional causal / 3 correlational;
- causal_language_eureka (Yu et al., COLING 2020): 2,076 EurekAlert press-release sentences, coded 0 not a claim /
  1 correlational / 2 conditional causal / 3 direct causal (1 and 3 are the REVERSE of pubmed's: each file is mapped
  by its own table below, never by position);
- sci_exaggeration (Wright & Augenstein, EMNLP 2021; InSciOut): press-release / abstract conclusion pairs with a
  strength for each sentence (0 no relationship / 1 correlational / 2 conditional causal / 3 causal). Its test pairs
  are the exaggeration benchmark (`benchmarks/causal_strength.py`): they are never trained on, and a pubmed / eureka
  sentence whose normalised text is one of InSciOut's (train or test) is dropped from every split (counted).

Splits: pubmed / eureka by unit with the config's `fractions` and seed, stratified by source; a unit is a paper for
eureka (its sentId starts with the PMID: the headline and first sentences of one press release stay together) and a
sentence for pubmed (the file carries no paper id). InSciOut's train pairs join the train split only when
`insciout_train` is on (off by default: 100 pairs, and the benchmark's claim is "not trained on exaggeration data").
"""

from __future__ import annotations

import csv
import logging
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from factlab.data.errors import DatasetConfigError
from factlab.data.jsonl import read_jsonl
from factlab.data.loaders.build import resolve_path
from factlab.data.splits import assign_splits
from factlab.schema import normalise_text

logger = logging.getLogger(__name__)

STRENGTHS = ("none", "correlational", "conditional_causal", "direct_causal")  # ordinal: index = strength
PUBMED = {"0": "none", "1": "direct_causal", "2": "conditional_causal", "3": "correlational"}
EUREKA = {"0": "none", "1": "correlational", "2": "conditional_causal", "3": "direct_causal"}
INSCIOUT = {0: "none", 1: "correlational", 2: "conditional_causal", 3: "direct_causal"}
FILES = {
    "pubmed": "causal_language_pubmed/data/pubmed_causal_language_use.csv",
    "eureka": "causal_language_eureka/data/annotated_eureka.csv",
    "insciout_train": "sci_exaggeration/data/insciout_train.jsonl",
    "insciout_test": "sci_exaggeration/data/insciout_test.jsonl",
}


def strength(label: str) -> int:
    """The ordinal strength of a label (none 0 .. direct_causal 3).

    >>> strength("conditional_causal")
    2
    """
    return STRENGTHS.index(label)


def data_file(root: Path, key: str) -> Path:
    """The file `FILES[key]` under the data root; a clear error naming it when it is missing."""
    path = root / FILES[key]
    if not path.is_file():
        raise DatasetConfigError(f"causal_strength: {path} not found (FACTLAB_DATA_ROOT / data_root must hold "
                                 f"{FILES[key]}; ../shared/data/README.md)")
    return path


def _csv_rows(path: Path, text_field: str, codes: Mapping[str, str], source: str) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8", newline="") as fh:
        for line, record in enumerate(csv.DictReader(fh), start=2):
            label = str(record.get("label", "")).strip()
            text = str(record.get(text_field) or "").strip()
            if label not in codes or not text:
                raise DatasetConfigError(f"{path}, line {line}: field {'label' if label not in codes else text_field} "
                                         f"is {label if label not in codes else text!r}; expected one of "
                                         f"{sorted(codes)} and a non-empty sentence")
            unit = f"{source}-{record['sentId'].split('-', 1)[0]}" if "sentId" in record else f"{source}-{line}"
            rows.append({"case_id": f"{source}-{line}", "lang": "en", "text": text, "strength": codes[label],
                         "source": source, "unit": unit})
    return rows


def insciout_pairs(path: Path) -> list[dict]:
    """InSciOut pairs: {pair_id, press, abstract, press_strength, abstract_strength, exaggeration} (labels as
    `STRENGTHS`; exaggeration same / exaggerates / downplays), each line checked (file, line, field)."""

    def check(row, where):
        for key in ("press_release_conclusion", "abstract_conclusion"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise DatasetConfigError(f"{where}: field {key}: expected a non-empty sentence")
        for key in ("press_release_strength", "abstract_strength"):
            if row.get(key) not in INSCIOUT:
                raise DatasetConfigError(f"{where}: field {key}: expected 0-3, got {row.get(key)!r}")
        if row.get("exaggeration_label") not in ("same", "exaggerates", "downplays"):
            raise DatasetConfigError(f"{where}: field exaggeration_label: got {row.get('exaggeration_label')!r}")
        return row

    return [{"pair_id": f"{path.stem}-{i}", "press": r["press_release_conclusion"].strip(),
             "abstract": r["abstract_conclusion"].strip(), "press_strength": INSCIOUT[r["press_release_strength"]],
             "abstract_strength": INSCIOUT[r["abstract_strength"]], "exaggeration": r["exaggeration_label"]}
            for i, r in enumerate(read_jsonl(path, check))]


def load(*, name: str, data_root: str, fractions: Mapping[str, float], seed: int, insciout_train: bool = False,
         max_rows: int | None = None) -> list[dict]:
    """pubmed + eureka sentences (and InSciOut's train sentences when asked), each case with its `strength` and
    `split`; duplicates (same normalised text) kept once, InSciOut's sentences never in pubmed / eureka rows."""
    root = resolve_path(data_root)
    rows = (_csv_rows(data_file(root, "pubmed"), "sentence", PUBMED, "pubmed")
            + _csv_rows(data_file(root, "eureka"), "sentence", EUREKA, "eureka"))
    held = {normalise_text(t) for key in ("insciout_train", "insciout_test")
            for p in insciout_pairs(data_file(root, key)) for t in (p["press"], p["abstract"])}
    seen: set[str] = set()
    kept, dropped = [], Counter()
    for row in rows:
        key = normalise_text(row["text"])
        if key in held:
            dropped["in InSciOut"] += 1
        elif key in seen:
            dropped["duplicate"] += 1
        else:
            seen.add(key)
            kept.append(row)
    if dropped:
        logger.info("causal_strength: dropped %s", dict(dropped))
    kept = kept[:max_rows] if max_rows else kept
    units = {row["unit"]: row["source"] for row in kept}
    # one unit per paper (eureka) or sentence (pubmed); "lang" carries the source so the splitter stratifies by it
    assignment = assign_splits([{"case_id": unit, "lang": source, "text": unit} for unit, source in units.items()],
                               dict(fractions), seed)
    cases = [{**{k: v for k, v in row.items() if k != "unit"}, "split": assignment[row["unit"]]} for row in kept]
    if insciout_train:
        for pair in insciout_pairs(data_file(root, "insciout_train")):
            for side in ("press", "abstract"):
                cases.append({"case_id": f"{pair['pair_id']}-{side}", "lang": "en", "text": pair[side],
                              "strength": pair[f"{side}_strength"], "source": "insciout_train", "split": "train"})
    return cases
