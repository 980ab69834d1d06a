# python benchmarks/judge_heldout.py --judge e5=<model folder or URI> --judge minilm=<...> [--int8 e5] [--lm ...]
"""Distilled judges side by side on sets that neither trained nor selected them, in one run on this CPU:

- WiCE dev oracle chunks (`dataset=wice_oracle`, never in judge_mix): binary support vs the rest per claim, a claim's
  p(support) the max over its passages (each passage read in windows), cut at the judge's fitted threshold, as the
  WiCE paper scores it; balanced accuracy over the 349 claims.
- OCNLI dev (judge_mix holds the dev file out whole as its test): 3-way accuracy, support / contradict / the rest.
- the judge_mix test split without OCNLI dev: balanced accuracy and macro-F1 over the relations, per language.
- the bundled test split on its gold evidence: the claim's aggregated relation (factlab.programs.judge.aggregate)
  against the gold relation, accuracy per language.
- pairs/s at batch 32 on this CPU (2 threads unless --threads), parameters, training wall time from the model card.

`--int8 NAME` adds NAME's judge with dynamic int8 quantisation of its Linear layers; `--lm` adds the judge program on
a local LM (`--lm-items` claims of the bundled test split and of each set, one call per snippet). Prints a Markdown
table and writes outputs/benchmarks/judge_heldout/results.json.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

OUT = Path("outputs/benchmarks/judge_heldout")


def _three_way(relation: str) -> str:
    return {"support": "support", "contradict": "contradict"}.get(relation, "neutral")


def evaluate(name: str, judge, sets: dict, threads: int) -> dict:
    """Every set's scores for one judge (`judge`: texts, pairs -> probabilities in RELATIONS order)."""
    from factlab.metrics import balanced_accuracy, macro_f1
    from factlab.programs.judge import aggregate
    from factlab.schema import RELATIONS, Judgment

    out: dict[str, object] = {"judge": name}
    started = time.perf_counter()
    n_pairs = 0

    def probs(rows):
        nonlocal n_pairs
        n_pairs += len(rows)
        return judge.predict_proba([r["claim"] for r in rows], [r["evidence"] for r in rows])

    # WiCE: claim-level max p(support)
    wice = sets["wice"]
    p = probs(wice)
    by_claim: dict[str, list[float]] = defaultdict(list)
    gold_of = {}
    for row, row_probs in zip(wice, p, strict=True):
        by_claim[row["claim"]].append(row_probs[RELATIONS.index("support")])
        gold_of[row["claim"]] = "support" if row["relation"] == "support" else "rest"
    threshold = judge.support_threshold
    claims = sorted(by_claim)
    out["wice/binary_bacc"] = balanced_accuracy([gold_of[c] for c in claims],
                                                ["support" if max(by_claim[c]) >= threshold else "rest"
                                                 for c in claims])
    out["wice/claims"] = len(claims)
    # OCNLI dev: 3-way accuracy
    ocnli = sets["ocnli"]
    predicted = [RELATIONS[max(range(len(row)), key=row.__getitem__)] for row in probs(ocnli)]
    out["ocnli/accuracy"] = sum(_three_way(r["relation"]) == _three_way(q) for r, q in
                                zip(ocnli, predicted, strict=True)) / len(ocnli)
    out["ocnli/n"] = len(ocnli)
    # the mix test, per language
    mix = sets["mix"]
    predicted = [RELATIONS[max(range(len(row)), key=row.__getitem__)] for row in probs(mix)]
    for lang in ("en", "zh", "all"):
        pairs = [(r["relation"], q) for r, q in zip(mix, predicted, strict=True) if lang in ("all", r["lang"])]
        if pairs:
            gold, pred = [g for g, _ in pairs], [q for _, q in pairs]
            out[f"mix/{lang}/bacc"] = balanced_accuracy(gold, pred)
            out[f"mix/{lang}/macro_f1"] = macro_f1(gold, pred, RELATIONS)
            out[f"mix/{lang}/n"] = len(pairs)
    # bundled test on gold evidence: claim-level aggregate
    for lang in ("en", "zh"):
        claims = [c for c in sets["bundled"] if c["lang"] == lang]
        correct = 0
        for claim in claims:
            rows = [{"claim": claim["claim"], "evidence": e} for e in claim["evidence"]]
            judgments = []
            for row_probs in probs(rows):
                best = max(range(len(row_probs)), key=row_probs.__getitem__)
                judgments.append(Judgment(RELATIONS[best], row_probs[best]))
            correct += aggregate(judgments)[0] == claim["relation"]
        out[f"bundled/{lang}/accuracy"] = correct / len(claims) if claims else None
        out[f"bundled/{lang}/n"] = len(claims)
    seconds = time.perf_counter() - started
    out["pairs_per_s_all_sets"] = round(n_pairs / seconds, 2)
    out["pairs_per_s_batch32"] = throughput(judge, sets["mix"][:256])
    out["threads"] = threads
    return out


def throughput(judge, rows) -> float:
    judge.predict_proba([r["claim"] for r in rows[:32]], [r["evidence"] for r in rows[:32]])  # warm up
    start = time.perf_counter()
    judge.predict_proba([r["claim"] for r in rows], [r["evidence"] for r in rows])
    return round(len(rows) / (time.perf_counter() - start), 2)


def load_sets(ocnli_cap: int, mix_cap: int, seed: int) -> dict:
    from factlab.config import compose_config
    from factlab.data.registry import load_dataset
    from factlab.data.splits import seeded_sample, split_cases
    from factlab.data.views import relation_pairs

    def rows(cases):
        return [r for r in relation_pairs(cases) if r["kind"] == "evidence"]

    mix = load_dataset(compose_config("train", ["dataset=judge_mix"]).dataset).cases
    test = [c for c in mix if c["split"] == "test"]
    ocnli = [c for c in test if c["case_id"].startswith("ocnli-dev")]
    rest = [c for c in test if not c["case_id"].startswith("ocnli-dev") and not c["case_id"].startswith("bundled")]
    wice = load_dataset(compose_config("train", ["dataset=wice_oracle"]).dataset).cases
    bundled = split_cases(load_dataset(compose_config("train", ["dataset=bundled"]).dataset).cases,
                          compose_config("train").splits, seed)["test"]
    gold = [{"claim": claim["text"], "lang": case["lang"], "relation": claim["relation"],
             "evidence": [e["text"] for e in claim["evidence"]]}
            for case in bundled for claim in case.get("claims", []) if claim.get("relation") and claim.get("evidence")]
    return {"wice": rows(wice), "ocnli": seeded_sample(rows(ocnli), ocnli_cap, seed),
            "mix": seeded_sample(rows(rest), mix_cap, seed), "bundled": gold}


class Int8:
    """A judge with dynamic int8 quantisation of every Linear layer (weights int8, activations quantised per call)."""

    def __init__(self, classifier) -> None:
        import torch

        self.inner = classifier
        classifier.model = torch.ao.quantization.quantize_dynamic(classifier.model, {torch.nn.Linear},
                                                                  dtype=torch.qint8)
        self.support_threshold = classifier.support_threshold

    def predict_proba(self, texts, pairs):
        return self.inner.predict_proba(texts, pairs)


class ProgramJudge:
    """The judge stage program on a local LM as a `predict_proba` (a one-hot of its answer)."""

    support_threshold = 0.5

    def __init__(self, lm: str) -> None:
        from hydra.utils import instantiate

        from factlab.config import compose_config
        from factlab.stages.build import build_program

        cfg = compose_config("run_stage", ["stage=judge", f"lm@student={lm}", "student.cache=false"])
        self.handle, self.program = instantiate(cfg.student), build_program(cfg.stage)

    def predict_proba(self, texts, pairs):
        from factlab.models.errors import call_safely
        from factlab.schema import RELATIONS

        out = []
        with self.handle.context():
            for claim, evidence in zip(texts, pairs, strict=True):
                pred, error = call_safely("judge", self.program, self.handle.breaker, claim=claim,
                                          evidence=[evidence])
                relation = pred.judgments[0].relation if error is None and pred.judgments else "insufficient"
                out.append([1.0 if r == relation else 0.0 for r in RELATIONS])
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", action="append", default=[], help="NAME=<model folder or MLflow URI>")
    parser.add_argument("--int8", action="append", default=[], help="also NAME's judge with dynamic int8")
    parser.add_argument("--lm", nargs="*", default=[], help="conf/lm options to run the judge program on")
    parser.add_argument("--lm-items", type=int, default=40, help="rows per set for the LM programs")
    parser.add_argument("--ocnli", type=int, default=1000, help="OCNLI dev rows (of 2,950)")
    parser.add_argument("--mix", type=int, default=1500, help="judge_mix test rows (OCNLI and bundled excluded)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    from factlab.models.classifier import SequenceClassifier
    from factlab.runtime import prepare_offline_env
    from factlab.tracking.refs import resolve_model
    from factlab.train.registry import parameter_count

    prepare_offline_env()
    torch.set_num_threads(args.threads)
    sets = load_sets(args.ocnli, args.mix, args.seed)
    print({name: len(rows) for name, rows in sets.items()})
    results = []
    for spec in args.judge:
        name, ref = spec.split("=", 1)
        folder = resolve_model(ref)
        judge = SequenceClassifier(folder, batch_size=32)
        row = evaluate(name, judge, sets, args.threads)
        row.update(parameters=parameter_count(folder), train_s=judge.meta.get("train_seconds"),
                   train_rows=judge.meta.get("train_rows"), base_model=judge.meta.get("base_model"))
        results.append(row)
        print(json.dumps(row))
        if name in args.int8:
            quantised = evaluate(f"{name} int8", Int8(SequenceClassifier(folder, batch_size=32)), sets, args.threads)
            results.append({**quantised, "parameters": row["parameters"], "base_model": row["base_model"]})
            print(json.dumps(results[-1]))
    for lm in args.lm:
        small = {k: v[: args.lm_items] for k, v in sets.items()}
        row = evaluate(f"program on {lm}", ProgramJudge(lm), small, args.threads)
        results.append({**row, "note": f"{args.lm_items} rows per set"})
        print(json.dumps(results[-1]))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2))
    keys = ["wice/binary_bacc", "ocnli/accuracy", "mix/en/bacc", "mix/zh/bacc", "mix/all/macro_f1",
            "bundled/en/accuracy", "bundled/zh/accuracy", "pairs_per_s_batch32", "parameters", "train_s"]
    print("| judge | " + " | ".join(keys) + " |\n|" + "---|" * (len(keys) + 1))
    for row in results:
        cells = [f"{row.get(k):.3f}" if isinstance(row.get(k), float) else str(row.get(k, "")) for k in keys]
        print(f"| {row['judge']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
