# python benchmarks/blind_layer_labels.py --export   (then a labeller writes the labels file)
# python benchmarks/blind_layer_labels.py --score [--labels A.jsonl B.jsonl] [--key key.jsonl]
"""Precision of each layer path on public abstracts, labelled by someone who sees only the text and the question, not
the code nor which path raised it (issue 47: "precision on a sample that you label blind").

--export: runs every layer path on the same unedited SciFact-corpus abstracts (the test split benchmarks/
scope_overreach.py and benchmarks/strength_overreach.py draw: the first --abstracts of it, each one paragraph, for the
logic paths; the whole split, sentences as paragraphs, for the consistency checks, which fire rarely) and writes,
shuffled with a fixed seed, one item per finding: an opaque id, the abstract, the sentence at issue, the earlier
sentence it is weighed against, and a plain question for its kind. The paths: the rules (`logic=rules`), the
causal-strength path with the design premise (the default `logic=rules_strength` adds it) and with the model premise
(`premise=model`), the scope path (`logic=rules_models` adds it), the default consistency checks and the opt-in
`restated_value`. Decoys are mixed in: sentence pairs from abstracts no path flagged, asked the same questions, so the
labeller's "yes" rate on unflagged text is measured beside each path's; and planted items (benchmarks/
strength_overreach.py's scripted rewrites of an association as a cause), whose "yes" rate says whether the labeller
sees a planted overclaim. Which path raised an item (or that it is a
decoy) goes to a key file the labeller is not shown.

--score: joins each labeller's file (id, label yes / no / unsure, reason) to the key: per path, items labelled,
precision = yes / (yes + no) with a 95% Wilson interval, unsure counted apart, for each labeller and for the labels
they agree on, with Cohen's kappa between the first two; the decoys' yes rate is the floor to read a path against,
the planted items' the labeller's sensitivity. With --recheck (needs the data) only the labelled findings today's
code still raises are scored, and the abstracts each path flags today are counted: labels written for one version
of the layers keep scoring the next. Outputs under outputs/benchmarks/blind_layer_labels/; the labels and the key
(ids, paths, doc ids, sentence digests, reasons: no abstract text) are in datasets/layers/blind/ (its README says who
labelled and how).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from independent_logic import save  # noqa: E402
from strength_overreach import abstracts  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = Path("outputs/benchmarks/blind_layer_labels")
BLIND = ROOT / "datasets" / "layers" / "blind"
LABELS = (BLIND / "labels_1.jsonl", BLIND / "labels_2.jsonl")  # two labellers, each alone (datasets/layers/blind)
KEY = BLIND / "key.jsonl"  # copied from the export's key.jsonl when the labels are committed
QUESTIONS = {
    "causal_overclaim": "Does SENTENCE state a cause-and-effect relation that the study, as described in the abstract "
                        "(see EARLIER), does not establish, e.g. an association or observational result told as a "
                        "cause?",
    "scope_shift": "Does SENTENCE state the finding for a wider population or setting (e.g. people in general, "
                   "patients) than the one the study actually examined (see EARLIER and the abstract)?",
    "carried_over": "Does SENTENCE apply a result to a setting or population the study (see EARLIER) did not cover?",
    "overgeneralisation": "Does SENTENCE state a conclusion more general or more certain than the evidence described "
                          "(see EARLIER) supports?",
    "consistency": "Are SENTENCE and EARLIER inconsistent with each other about the same thing (a number, a unit, "
                   "an abbreviation's meaning, a term) in a way a careful editor should fix?",
}


def whole_sentence(span: str, sentences: list[str]) -> str:
    """The first sentence holding `span` (the rules name a cue word, "reduces"; the labeller needs its sentence).

    >>> whole_sentence("reduces", ["Tea is popular.", "Tea reduces risk."])
    'Tea reduces risk.'
    >>> whole_sentence("absent", ["Tea."])
    'absent'
    """
    return next((s for s in sentences if span and span in s), span)


def sha(text: str) -> str:
    """A short digest of a sentence: the key names the flagged sentence without holding its text."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def findings(everything: list[dict], n_logic: int, logic: dict):
    """Each finding of every path on the abstracts, as {path, kind, doc, abstract, sentence, earlier}: the logic
    paths on the first `n_logic` (each abstract one paragraph), the consistency checks on all (sentences as
    paragraphs; every kind, `restated_value` counted as its own path)."""
    from factlab.matching.segment import sentence_spans
    from factlab.rules.document import KINDS, consistency_findings

    for n, doc in enumerate(everything):
        text = doc["paragraphs"][0]
        sentences = [text[a:b] for a, b in sentence_spans(text)]
        for name, check in logic.items() if n < n_logic else ():
            for issue in check([text], 0):
                yield {"path": name, "kind": issue.kind, "doc": doc["doc"], "abstract": text,
                       "sentence": whole_sentence(issue.keyword, sentences),
                       "earlier": whole_sentence(issue.premise, sentences)}
        for finding in consistency_findings([(str(i), t) for i, t in enumerate(sentences)], kinds=list(KINDS)):
            yield {"path": "consistency_restated_value" if finding.kind == "restated_value" else "consistency_default",
                   "kind": finding.kind, "doc": doc["doc"], "abstract": text,
                   "sentence": sentences[int(finding.at.paragraph_id)],
                   "earlier": sentences[int(finding.other.paragraph_id)]}


def raised(root: Path, n_abstracts: int, head_ref: str, scope_ref: str) -> tuple[set, dict]:
    """What the code raises today on the export's abstracts: ({(path, doc, sentence digest)}, flagged abstracts per
    path), so labels written for an earlier version still score the findings that remain."""
    everything, _ = abstracts(root, 10 ** 6)
    found, flagged = set(), defaultdict(set)
    for item in findings(everything, n_abstracts, paths(head_ref, scope_ref)):
        found.add((item["path"], item["doc"], sha(item["sentence"])))
        flagged[item["path"]].add(item["doc"])
    return found, {name: len(docs) for name, docs in flagged.items()}


def paths(head_ref: str, scope_ref: str) -> dict:
    """The logic paths by name: a callable (paragraphs, index) -> issues."""
    from factlab.checkers.scope import ScopeShift
    from factlab.checkers.strength import StrengthOverclaim, head_from
    from factlab.rules.logic import LogicRules

    rules, head = LogicRules(), head_from(head_ref)
    return {"logic_rules": lambda ps, i: rules.check_paragraph(ps[i], list(ps[:i])),
            "strength_design": StrengthOverclaim(head, rules).check,
            "strength_model_premise": StrengthOverclaim(head, rules, premise="model").check,
            "scope": ScopeShift(scope_ref, rules).check}


def export(args) -> None:
    from factlab.data.loaders.build import resolve_path
    from factlab.matching.segment import sentence_spans
    from factlab.rules.document import KINDS
    from factlab.runtime import prepare_offline_env

    prepare_offline_env()
    root = resolve_path(os.environ.get("FACTLAB_DATA_ROOT", "../shared/data"))
    everything, edited = abstracts(root, 10 ** 6)  # the whole test split (the consistency checks are cheap and rare)
    clean = everything[:args.abstracts]  # the same first abstracts as the other benchmarks' unedited rows
    rng = random.Random(args.seed)
    items = list(findings(everything, len(clean), paths(args.model, args.scope)))
    flagged_docs = {item["doc"] for item in items}
    by_path = defaultdict(list)
    for item in items:
        by_path[item["path"]].append(item)
    sample = []
    for _, group in sorted(by_path.items()):
        rng.shuffle(group)
        sample += group[:args.per_path]
    # decoys: a later sentence and an earlier one of an abstract no path flagged, each logic question in turn
    quiet = [d for d in clean if d["doc"] not in flagged_docs]
    rng.shuffle(quiet)
    questions = ["causal_overclaim", "scope_shift", "overgeneralisation"]
    for n, doc in enumerate(quiet[:args.decoys]):
        text = doc["paragraphs"][0]
        sentences = [text[a:b] for a, b in sentence_spans(text)]
        if len(sentences) < 2:
            continue
        later = rng.randrange(1, len(sentences))
        sample.append({"path": "decoy", "kind": questions[n % len(questions)], "doc": doc["doc"], "abstract": text,
                       "sentence": sentences[later], "earlier": sentences[rng.randrange(0, later)]})
    # planted: the scripted causal rewrites of benchmarks/strength_overreach.py (an association in an abstract
    # rewritten as a cause): the labeller's "yes" rate on them is a check that a planted overclaim is seen
    for doc in edited[:args.planted]:
        text = doc["paragraphs"][0]
        sentences = [text[a:b] for a, b in sentence_spans(text)]
        later = sentences.index(doc["edited"]) if doc["edited"] in sentences else len(sentences) - 1
        sample.append({"path": "planted", "kind": "causal_overclaim", "doc": doc["doc"], "abstract": text,
                       "sentence": doc["edited"], "earlier": sentences[rng.randrange(0, max(1, later))]})
    rng.shuffle(sample)
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "to_label.jsonl").open("w", encoding="utf-8") as fh, (OUT / "key.jsonl").open("w") as key:
        for n, item in enumerate(sample):
            item_id = f"b{n:03d}"
            question = QUESTIONS["consistency" if item["kind"] in KINDS else item["kind"]]
            fh.write(json.dumps({"id": item_id, "abstract": item["abstract"], "SENTENCE": item["sentence"],
                                 "EARLIER": item["earlier"], "question": question}, ensure_ascii=False) + "\n")
            key.write(json.dumps({"id": item_id, "path": item["path"], "kind": item["kind"], "doc": item["doc"],
                                  "sentence_sha1": sha(item["sentence"])}) + "\n")
    counts = {name: len(group) for name, group in sorted(by_path.items())}
    per_doc = {name: c / (len(everything) if name.startswith("consistency") else len(clean))
               for name, c in counts.items()}
    save(OUT, {"abstracts_logic": len(clean), "abstracts_consistency": len(everything), "findings_per_path": counts,
               "findings_per_abstract": per_doc, "sampled": len(sample),
               "decoys": sum(i["path"] == "decoy" for i in sample),
               "planted": sum(i["path"] == "planted" for i in sample)})
    print(f"{len(clean)} abstracts (logic), {len(everything)} (consistency); findings per path: {counts}; "
          f"{len(sample)} items to label -> {OUT / 'to_label.jsonl'} (key: {OUT / 'key.jsonl'})")


def read_labels(path: Path, key: dict) -> dict[str, str]:
    """id -> label of one labeller's file, checked against the key (file, line, field)."""
    from factlab.data.jsonl import read_jsonl

    labels = {}
    for line, row in enumerate(read_jsonl(path), start=1):
        if row.get("id") not in key:
            raise SystemExit(f"{path}, line {line}: id {row.get('id')!r} is not in the key (export again with the "
                             "same --abstracts / --per-path / --decoys / --seed)")
        if row.get("label") not in ("yes", "no", "unsure"):
            raise SystemExit(f"{path}, line {line}: field label must be yes / no / unsure, got {row.get('label')!r}")
        labels[row["id"]] = row["label"]
    return labels


def kappa(a: list[str], b: list[str]) -> float:
    """Cohen's kappa of two labellers on the same items.

    >>> kappa(["yes", "no", "no", "yes"], ["yes", "no", "yes", "yes"])
    0.5
    """
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    expected = sum((a.count(c) / n) * (b.count(c) / n) for c in set(a) | set(b))
    return (observed - expected) / (1 - expected) if expected < 1 else 1.0


def score(args) -> None:
    from factlab.data.jsonl import read_jsonl
    from factlab.metrics import wilson_interval

    key = {row["id"]: row for row in read_jsonl(Path(args.key))}
    labellers = {Path(p).stem: read_labels(Path(p), key) for p in args.labels}
    results: dict = {"items": len(key), "labellers": {}}
    if args.recheck:  # keep only the labelled findings today's code still raises (decoys and planted items stay)
        from factlab.data.loaders.build import resolve_path
        from factlab.runtime import prepare_offline_env

        prepare_offline_env()
        found, flagged = raised(resolve_path(os.environ.get("FACTLAB_DATA_ROOT", "../shared/data")), args.abstracts,
                                args.model, args.scope)
        kept = {i for i, row in key.items() if row["path"] in ("decoy", "planted")
                or (row["path"], row["doc"], row.get("sentence_sha1")) in found}
        results["recheck"] = {"flagged_abstracts_now": flagged,
                              "labelled_still_raised": {p: sum(i in kept for i, r in key.items() if r["path"] == p)
                                                        for p in sorted({r["path"] for r in key.values()})}}
        print(f"today's code, abstracts flagged per path: {flagged}; labelled findings still raised: "
              f"{results['recheck']['labelled_still_raised']}")
        key = {i: row for i, row in key.items() if i in kept}
        labellers = {who: {i: lab for i, lab in labels.items() if i in kept} for who, labels in labellers.items()}
    if len(labellers) > 1:
        names = list(labellers)[:2]
        shared = [i for i in key if all(i in labellers[n] for n in names)]
        results["kappa"] = kappa([labellers[names[0]][i] for i in shared], [labellers[names[1]][i] for i in shared])
        print(f"agreement of {names[0]} and {names[1]} on {len(shared)} items: Cohen's kappa {results['kappa']:.2f}")
        every = list(labellers.values())
        labellers["agreed (yes by all / no by all; else unsure)"] = {
            i: next((label for label in ("yes", "no") if all(lab.get(i) == label for lab in every)), "unsure")
            for i in key}
    for who, labels in labellers.items():
        rows = defaultdict(lambda: {"yes": 0, "no": 0, "unsure": 0, "missing": 0})
        for item_id, entry in key.items():
            rows[entry["path"]][labels.get(item_id, "missing")] += 1
        print(f"\n{who}\n\n| path | items | yes | no | unsure | precision = yes / (yes + no) [95% Wilson] |")
        print("|---|---|---|---|---|---|")
        results["labellers"][who] = {}
        for name, row in sorted(rows.items()):
            decided = row["yes"] + row["no"]
            interval = wilson_interval(row["yes"], decided) if decided else None
            precision = row["yes"] / decided if decided else None
            results["labellers"][who][name] = {**row, "precision": precision, "ci95": interval}
            shown = f"{precision:.2f} [{interval[0]:.2f}, {interval[1]:.2f}]" if decided else "-"
            print(f"| {name} | {sum(row.values())} | {row['yes']} | {row['no']} | {row['unsure']} | {shown} |")
    save(OUT / "scored", results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--export", action="store_true")
    mode.add_argument("--score", action="store_true")
    parser.add_argument("--recheck", action="store_true",
                        help="with --score: only the labelled findings the code still raises (needs the data)")
    parser.add_argument("--labels", nargs="+", default=[str(p) for p in LABELS],
                        help="one labels file per labeller (id, label, reason)")
    parser.add_argument("--key", default=str(KEY), help="the export's key (which path raised each id)")
    parser.add_argument("--model", default="factlab:causal-strength-e5s-v1")
    parser.add_argument("--scope", default="factlab:scope-e5s-v1")
    parser.add_argument("--abstracts", type=int, default=300)
    parser.add_argument("--per-path", type=int, default=30, help="findings sampled per path (all when fewer)")
    parser.add_argument("--decoys", type=int, default=30)
    parser.add_argument("--planted", type=int, default=15, help="scripted causal rewrites mixed in")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    export(args) if args.export else score(args)


if __name__ == "__main__":
    main()
