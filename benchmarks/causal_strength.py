# python benchmarks/causal_strength.py [--model factlab:causal-strength-e5s-v1] [--bootstrap 1000]
"""The logic layer's causal-strength model on public data it was not tuned on: InSciOut (Wright & Augenstein,
EMNLP 2021; press-release vs abstract conclusion pairs), side by side with the cue-word rules of
factlab/rules/logic.py and a majority baseline, in one run.

1. Strength of each sentence (none / correlational / conditional_causal / direct_causal) on the 563 test pairs' 1,126
   sentences: accuracy and macro-F1. The model was trained on causal_language_pubmed + causal_language_eureka only
   (factlab/data/loaders/causal_strength.py drops any of their sentences that InSciOut holds).
2. Exaggeration detection as the issue frames it, without training on it: a pair "exaggerates" when
   strength(press release) > strength(abstract), "downplays" when <, else "same"; 3-way macro-F1 (the paper's
   metric) and precision / recall / F1 of "exaggerates". Two model readings: the argmax class's ordinal, and the
   expected strength (sum of p * ordinal) with a margin chosen on InSciOut's 100 TRAIN pairs (never the test).
   The gold-strength row (the annotators' own strengths compared) is the ceiling of this framing.
Intervals: 95% bootstrap over pairs. Writes outputs/benchmarks/causal_strength/results.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

OUT = Path("outputs/benchmarks/causal_strength")
DIRECTIONS = ("downplays", "same", "exaggerates")


def rule_strength(rules, sentence: str) -> int:
    """The cue-word rules' reading of a sentence's causal strength (0-3): a causal verb with a hedge -> conditional
    (2), without -> direct (3); a correlational cue -> correlational (1); nothing -> none (0).

    >>> from factlab.rules.logic import LogicRules
    >>> [rule_strength(LogicRules(), s) for s in ("Coffee prevents illness.", "Coffee is associated with health.")]
    [3, 1]
    """
    causal, correlational, hedge = (rules.cue(name, sentence) for name in ("causal", "correlational", "hedge"))
    if causal and not correlational:
        return 2 if hedge else 3
    if correlational:
        return 1
    return 2 if causal else 0


def direction(press: float, abstract: float, margin: float = 0.0) -> str:
    """exaggerates / downplays / same from two strengths.

    >>> direction(3, 1), direction(1.2, 1.0, margin=0.5), direction(0, 2)
    ('exaggerates', 'same', 'downplays')
    """
    if press - abstract > margin:
        return "exaggerates"
    if abstract - press > margin:
        return "downplays"
    return "same"


def scores(gold: list[str], pred: list[str], labels) -> dict[str, float]:
    from factlab.metrics import classification_metrics

    out = classification_metrics(gold, pred, list(labels))
    result = {"accuracy": out["accuracy"], "macro_f1": out["macro_f1"]}
    if "exaggerates" in labels:
        tp = sum(g == p == "exaggerates" for g, p in zip(gold, pred, strict=True))
        predicted, actual = pred.count("exaggerates"), gold.count("exaggerates")
        precision = tp / predicted if predicted else 0.0
        recall = tp / actual if actual else 0.0
        result.update(exaggerates_precision=precision, exaggerates_recall=recall,
                      exaggerates_f1=2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return result


def with_ci(gold: list[str], pred: list[str], labels, samples: int, seed: int) -> dict:
    from factlab.metrics import bootstrap_ci

    units = list(zip(gold, pred, strict=True))
    point = scores(gold, pred, labels)

    def stat(us):
        return scores([u[0] for u in us], [u[1] for u in us], labels)

    intervals = bootstrap_ci(units, stat, list(point), samples, seed, 0.95)
    return {name: {"mean": round(value, 4), "ci95": [round(v, 4) for v in intervals[name]]}
            for name, value in point.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="factlab:causal-strength-e5s-v1",
                        help="the head: factlab:<shipped name>, a head folder, or an MLflow URI")
    parser.add_argument("--data-root", default=None, help="default: FACTLAB_DATA_ROOT or ../shared/data")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import os

    from factlab.data.loaders.causal_strength import STRENGTHS, data_file, insciout_pairs, strength
    from factlab.judge.heads import HeadClassifier
    from factlab.rules.logic import LogicRules
    from factlab.runtime import prepare_offline_env
    from factlab.stages.classifiers import resolve_model

    prepare_offline_env()
    root = Path(args.data_root or os.environ.get("FACTLAB_DATA_ROOT", "../shared/data"))
    train, test = (insciout_pairs(data_file(root, key)) for key in ("insciout_train", "insciout_test"))
    head = HeadClassifier(resolve_model(args.model))
    rules = LogicRules()
    ordinal = np.arange(len(STRENGTHS), dtype=np.float64)

    def model_read(pairs):
        texts = [p[side] for p in pairs for side in ("press", "abstract")]
        started = time.perf_counter()
        probs = np.asarray(head.predict_proba(texts), dtype=np.float64)
        ms = 1000 * (time.perf_counter() - started) / len(texts)
        labels = [head.labels[i] for i in probs.argmax(axis=1)]
        return labels, probs @ ordinal, ms

    results: dict = {"model": args.model, "pairs": {"train": len(train), "test": len(test)}}
    # the margin of the expected-strength reading, chosen on the 100 train pairs (3-way macro-F1)
    _, expected_train, _ = model_read(train)
    gold_train = [p["exaggeration"] for p in train]
    grid = [round(m, 2) for m in np.arange(0.0, 1.01, 0.05)]
    margin = max(grid, key=lambda m: (scores(gold_train, [direction(expected_train[2 * i], expected_train[2 * i + 1], m)
                                                        for i in range(len(train))], DIRECTIONS)["macro_f1"], -m))
    labels, expected, ms = model_read(test)
    rule_labels = [STRENGTHS[rule_strength(rules, p[side])] for p in test for side in ("press", "abstract")]
    gold_sentences = [p[f"{side}_strength"] for p in test for side in ("press", "abstract")]
    results["sentence_strength"] = {
        "n": len(gold_sentences),
        "majority (correlational)": with_ci(gold_sentences, ["correlational"] * len(gold_sentences), STRENGTHS,
                                            args.bootstrap, args.seed),
        "rules": with_ci(gold_sentences, rule_labels, STRENGTHS, args.bootstrap, args.seed),
        "model": with_ci(gold_sentences, labels, STRENGTHS, args.bootstrap, args.seed),
        "model_ms_per_sentence": round(ms, 2),
    }
    gold = [p["exaggeration"] for p in test]
    s = strength
    readings = {
        "majority (same)": ["same"] * len(test),
        "rules": [direction(rule_strength(rules, p["press"]), rule_strength(rules, p["abstract"])) for p in test],
        "model, argmax ordinal": [direction(s(labels[2 * i]), s(labels[2 * i + 1])) for i in range(len(test))],
        f"model, expected strength, margin {margin} (from train)": [
            direction(expected[2 * i], expected[2 * i + 1], margin) for i in range(len(test))],
        "gold strengths (ceiling of the framing)": [direction(s(p["press_strength"]), s(p["abstract_strength"]))
                                                    for p in test],
    }
    results["exaggeration"] = {"n": len(test), "gold": {d: gold.count(d) for d in DIRECTIONS}, "margin": margin,
                               **{name: with_ci(gold, pred, DIRECTIONS, args.bootstrap, args.seed)
                                  for name, pred in readings.items()}}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2) + "\n")

    def cell(entry, name):
        return f"{entry[name]['mean']:.3f} [{entry[name]['ci95'][0]:.2f}, {entry[name]['ci95'][1]:.2f}]"

    print(f"\nSentence strength, InSciOut test ({len(gold_sentences)} sentences; model {ms:.1f} ms a sentence)\n")
    print("| reader | accuracy | macro-F1 |\n|---|---|---|")
    for name in ("majority (correlational)", "rules", "model"):
        entry = results["sentence_strength"][name]
        print(f"| {name} | {cell(entry, 'accuracy')} | {cell(entry, 'macro_f1')} |")
    print(f"\nExaggeration, InSciOut test ({len(test)} pairs: {results['exaggeration']['gold']})\n")
    print("| reader | 3-way macro-F1 | accuracy | exaggerates P | R | F1 |\n|---|---|---|---|---|---|")
    for name in readings:
        entry = results["exaggeration"][name]
        print(f"| {name} | {cell(entry, 'macro_f1')} | {cell(entry, 'accuracy')} | "
              f"{entry['exaggerates_precision']['mean']:.3f} | {entry['exaggerates_recall']['mean']:.3f} | "
              f"{cell(entry, 'exaggerates_f1')} |")
    print(f"\nwritten: {OUT / 'results.json'}")


if __name__ == "__main__":
    main()
