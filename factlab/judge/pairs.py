"""Claim-evidence pairs for the relation judge, read from the public sets in `FACTLAB_DATA_ROOT` (../shared/data).

Each set is one entry of a recipe's `sets:` table (conf/recipe/judge_e5.yaml): files (globs under the data root), a
reader (the upstream format), the language, and which field is the evidence (premise) and which the claim
(hypothesis). Labels map onto factlab's relations (`factlab.schema.RELATIONS`); a label that leaves several relations
open (binary "not entailment", WiCE "not supported") keeps them all, as a set: the training loss is the probability
of the set, so a binary set teaches "not support" without claiming contradiction or neutrality.

| upstream label | relations |
|---|---|
| entailment, e, supported, supports | support |
| contradiction, c, contradictory, refutes | contradict |
| neutral, n, notmentioned, not enough info | insufficient |
| partially_supported | partial_support |
| not_entailment, non_entailment, not_supported | contradict, insufficient, partial_support, irrelevant |

Nothing here downloads; a missing data root or file raises `PairDataError` naming it.
"""

from __future__ import annotations

import csv
import glob
import json
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from factlab.data.jsonl import iter_jsonl, jsonl_values
from factlab.schema import RELATIONS, normalise_text

NOT_SUPPORT = ("contradict", "insufficient", "partial_support", "irrelevant")
LABELS: dict[str, tuple[str, ...]] = {
    "entailment": ("support",), "e": ("support",), "supported": ("support",), "supports": ("support",),
    "support": ("support",),
    "contradiction": ("contradict",), "c": ("contradict",), "contradictory": ("contradict",),
    "refutes": ("contradict",), "contradict": ("contradict",),
    "neutral": ("insufficient",), "n": ("insufficient",), "notmentioned": ("insufficient",),
    "not enough info": ("insufficient",), "insufficient": ("insufficient",),
    "partially_supported": ("partial_support",), "partial_support": ("partial_support",),
    "irrelevant": ("irrelevant",),
    "not_entailment": NOT_SUPPORT, "non_entailment": NOT_SUPPORT, "not_supported": NOT_SUPPORT,
}
NLI3 = {"support": "entailment", "contradict": "contradiction"}  # every other relation reads as neutral


class PairDataError(ValueError):
    """A set that cannot be read: a missing root or file, or a row without a field, naming file and line."""


@dataclass(frozen=True)
class Pair:
    """One claim against one piece of evidence, with the relations its label allows."""

    claim: str
    evidence: str
    relations: tuple[str, ...]
    lang: str
    source: str  # the set's name
    family: str = ""  # contrastive edit family, shuffled, ... ("" for upstream pairs)

    @property
    def relation(self) -> str | None:
        """The single relation of a 3-way / 5-way label, None for a set of several."""
        return self.relations[0] if len(self.relations) == 1 else None

    def mask(self) -> list[int]:
        return [int(r in self.relations) for r in RELATIONS]


def map_label(raw: object, where: str) -> tuple[str, ...] | None:
    """The relations of an upstream label; None for a label to skip ("-": no annotator majority)."""
    key = str(raw).strip().lower()
    if key in ("-", ""):
        return None
    if key not in LABELS:
        raise PairDataError(f"{where}: unknown label {raw!r}; expected one of {', '.join(sorted(LABELS))}")
    return LABELS[key]


def _files(root: Path, patterns: Sequence[str], name: str) -> list[Path]:
    if not root.is_dir():
        raise PairDataError(f"data root {root} does not exist: set FACTLAB_DATA_ROOT to the folder of public sets "
                            "(../shared/data)")
    found: list[Path] = []
    for pattern in patterns:
        matched = sorted(Path(p) for p in glob.glob(str(root / pattern)))
        if not matched:
            raise PairDataError(f"set {name}: no file matches {root / pattern}")
        found += matched
    return found


def _field(row: Mapping, key: str, where: str) -> str:
    if key not in row or row[key] is None:
        raise PairDataError(f"{where}: missing field {key!r}; the row has {', '.join(map(str, row))}")
    return str(row[key]).strip()


def _rows(path: Path, reader: str, spec: Mapping) -> Iterator[tuple[str, Mapping]]:
    """(where, row) per record of a file in one of the simple formats."""
    if reader == "jsonl":
        yield from iter_jsonl(path)
    elif reader == "zip_jsonl":
        with zipfile.ZipFile(path) as archive, archive.open(spec["member"]) as raw:
            yield from jsonl_values(raw, f"{path}!{spec['member']}")
    elif reader in ("csv", "tsv"):
        delimiter = "," if reader == "csv" else "\t"
        with path.open(encoding="utf-8-sig", newline="") as fh:
            quoting = csv.QUOTE_MINIMAL if reader == "csv" else csv.QUOTE_NONE
            lines = csv.reader(fh, delimiter=delimiter, quoting=quoting)
            columns = spec.get("columns")
            if not columns:
                columns = next(lines)
            for number, values in enumerate(lines, 1 if spec.get("columns") else 2):
                if values:
                    yield f"{path}:{number}", dict(zip(columns, values, strict=False))
    else:
        raise PairDataError(f"{path}: unknown reader {reader!r}")


def read_set(name: str, spec: Mapping, data_root: str | Path) -> list[Pair]:
    """All pairs of one set of the recipe's table (see the module docstring)."""
    root = Path(data_root)
    reader, lang = spec["reader"], spec["lang"]
    files = _files(root, spec["files"], name)
    special = {"lines": _read_lines, "contract_nli": _read_contract_nli, "wice": _read_wice}
    if reader in special:
        return special[reader](name, spec, files)
    pairs = []
    for path in files:
        for where, row in _rows(path, reader, spec):
            relations = map_label(_field(row, spec["label"], where), where)
            if relations is None:
                continue
            pairs.append(Pair(_field(row, spec["claim"], where), _field(row, spec["evidence"], where), relations,
                              lang, name))
    return pairs


def _read_lines(name: str, spec: Mapping, files: list[Path]) -> list[Pair]:
    """Parallel line files (e-SNLI: s1.<split>, s2.<split>, labels.<split>): `files` are the label files."""
    pairs = []
    for labels in files:
        suffix = labels.name.split(".", 1)[1]
        premises = (labels.parent / f"{spec['evidence']}.{suffix}").read_text(encoding="utf-8").splitlines()
        claims = (labels.parent / f"{spec['claim']}.{suffix}").read_text(encoding="utf-8").splitlines()
        for number, (label, premise, claim) in enumerate(zip(labels.read_text(encoding="utf-8").splitlines(),
                                                             premises, claims, strict=True), 1):
            relations = map_label(label, f"{labels}:{number}")
            if relations is not None:
                pairs.append(Pair(claim.strip(), premise.strip(), relations, spec["lang"], name))
    return pairs


def _read_contract_nli(name: str, spec: Mapping, files: list[Path]) -> list[Pair]:
    """ContractNLI at window level: an entailed or contradicted hypothesis against the text of its evidence spans; a
    not-mentioned one against a run of `window_spans` spans of the document (its evidence spans are elsewhere or
    absent, so the window cannot settle it)."""
    import random

    pairs, rng = [], random.Random(0)
    size = int(spec.get("window_spans", 4))
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        hypotheses = {key: value["hypothesis"] for key, value in data["labels"].items()}
        for doc in data["documents"]:
            spans = [doc["text"][a:b].strip() for a, b in doc["spans"]]
            for key, note in doc["annotation_sets"][0]["annotations"].items():
                relations = map_label(note["choice"], f"{path}: document {doc['id']} {key}")
                if note["spans"]:
                    evidence = " ".join(spans[i] for i in sorted(note["spans"]))
                else:
                    start = rng.randrange(max(1, len(spans) - size))
                    evidence = " ".join(spans[start:start + size])
                if relations and evidence:
                    pairs.append(Pair(hypotheses[key], evidence, relations, spec["lang"], name))
    return pairs


def _read_wice(name: str, spec: Mapping, files: list[Path]) -> list[Pair]:
    """WiCE rows (claim, evidence sentences, supporting sentence ids): the claim against the supporting sentences
    (or, with none, the whole article, read in windows by whoever reads it)."""
    pairs = []
    for path in files:
        for where, row in _rows(path, "jsonl", spec):
            relations = map_label(_field(row, "label", where), where)
            sentences = row["evidence"]
            ids = sorted({i for group in row.get("supporting_sentences") or [] for i in group})
            evidence = " ".join(sentences[i] for i in ids if i < len(sentences)) or " ".join(sentences)
            if relations:
                pairs.append(Pair(_field(row, "claim", where), evidence, relations, spec["lang"], name))
    return pairs


def premise_key(text: str) -> str:
    """The key premises are compared by across sets (normalised text)."""
    return normalise_text(text)


def dedupe(pairs: Sequence[Pair], drop_premises: set[str]) -> tuple[list[Pair], dict[str, int]]:
    """Pairs without repeats (same claim and evidence) and without a premise in `drop_premises` (a target set's).

    Returns:
        The kept pairs and counts per set of what was dropped (`<set>/repeat`, `<set>/target_premise`).
    """
    seen: set[tuple[str, str]] = set()
    kept, dropped = [], {}
    for pair in pairs:
        evidence = premise_key(pair.evidence)
        key = (premise_key(pair.claim), evidence)
        reason = "repeat" if key in seen else "target_premise" if evidence in drop_premises else None
        if reason:
            dropped[f"{pair.source}/{reason}"] = dropped.get(f"{pair.source}/{reason}", 0) + 1
            continue
        seen.add(key)
        kept.append(pair)
    return kept, dropped
