# python benchmarks/judge_heldout.py --judge e5=<model folder or URI> --judge minilm=<...> [--int8 e5] [--lm ...]
"""Distilled judges side by side on sets that neither trained nor selected them, in one run on this CPU:

- WiCE dev oracle chunks (`dataset=wice_oracle`, never in judge_mix): binary support vs the rest per claim, a claim's
  p(support) the max over its passages (each passage read in windows), cut at the judge's fitted threshold, as the
  WiCE paper scores it; balanced accuracy over the 349 claims.
- OCNLI dev (judge_mix holds the dev file out whole as its test): 3-way accuracy, support / contradict / the rest.
- the judge_mix test split without OCNLI dev: balanced accuracy and macro-F1 over the relations, per language.
- the bundled test split on its gold evidence: the claim's aggregated relation (factlab.programs.judge.aggregate)
  against the gold relation, accuracy per language.
- held-out contrastive edits (factlab.data.contrastive applied to the judge_mix TEST split's support pairs, so never
  trained on): per family, the share of edited claims whose p(support) falls under the judge's threshold, counted
  only where the judge passed the unedited claim (p(support) at or over it), and how many unedited claims it passed.
- pairs/s at batch 32 on this CPU (2 threads unless --threads), parameters, training wall time from the model card.
- 95% bootstrap intervals of the headline numbers (rows / claims resampled within each set).

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


def _argmax(probs) -> int:
    return max(range(len(probs)), key=probs.__getitem__)


def set_metrics(units: dict, threshold: float) -> dict:
    """Every set's metrics from its scored units (each set a list; resampled together by the bootstrap)."""
    from factlab.metrics import balanced_accuracy, macro_f1
    from factlab.schema import RELATIONS

    out: dict[str, float | None] = {}
    wice = units["wice"]  # (gold support?, max p(support) over the claim's passages)
    if wice:
        out["wice/binary_bacc"] = balanced_accuracy(["support" if g else "rest" for g, _ in wice],
                                                    ["support" if p >= threshold else "rest" for _, p in wice])
    ocnli = units["ocnli"]  # (gold relation, predicted relation)
    if ocnli:
        out["ocnli/accuracy"] = sum(_three_way(g) == _three_way(q) for g, q in ocnli) / len(ocnli)
    for lang in ("en", "zh", "all"):
        pairs = [(g, q) for g, q, row_lang in units["mix"] if lang in ("all", row_lang)]
        if pairs:
            gold, pred = [g for g, _ in pairs], [q for _, q in pairs]
            out[f"mix/{lang}/bacc"] = balanced_accuracy(gold, pred)
            out[f"mix/{lang}/macro_f1"] = macro_f1(gold, pred, RELATIONS)
    for lang in ("en", "zh"):
        hits = [correct for correct, row_lang in units["bundled"] if row_lang == lang]
        out[f"bundled/{lang}/accuracy"] = sum(hits) / len(hits) if hits else None
    edited = units["edits"]  # (family, p(support) of the unedited claim, of the edited claim)
    if edited:
        out["edits/original/passed"] = sum(p0 >= threshold for _, p0, _ in edited) / len(edited)
    for family in sorted({f for f, _, _ in edited}):  # caught: the edit flips a passed claim under the threshold
        caught = [p < threshold for f, p0, p in edited if f == family and p0 >= threshold]
        out[f"edits/{family}/caught"] = sum(caught) / len(caught) if caught else None
    return out


def evaluate(name: str, judge, sets: dict, threads: int, ci_samples: int = 300) -> dict:
    """Every set's scores for one judge (`judge`: texts, pairs -> probabilities in RELATIONS order), with 95%
    bootstrap intervals (claims / rows resampled within each set)."""
    from factlab.metrics import bootstrap_ci
    from factlab.programs.judge import aggregate
    from factlab.schema import RELATIONS, Judgment

    started = time.perf_counter()
    n_pairs = 0
    support = RELATIONS.index("support")

    def probs(rows):
        nonlocal n_pairs
        n_pairs += len(rows)
        return judge.predict_proba([r["claim"] for r in rows], [r["evidence"] for r in rows])

    by_claim: dict[str, list[float]] = defaultdict(list)  # WiCE: a claim's p(support) = max over its passages
    gold_of = {}
    for row, row_probs in zip(sets["wice"], probs(sets["wice"]), strict=True):
        by_claim[row["claim"]].append(row_probs[support])
        gold_of[row["claim"]] = row["relation"] == "support"
    units: dict[str, list] = {"wice": [(gold_of[c], max(by_claim[c])) for c in sorted(by_claim)]}
    units["ocnli"] = [(r["relation"], RELATIONS[_argmax(q)]) for r, q in zip(sets["ocnli"], probs(sets["ocnli"]),
                                                                            strict=True)]
    units["mix"] = [(r["relation"], RELATIONS[_argmax(q)], r["lang"]) for r, q in
                    zip(sets["mix"], probs(sets["mix"]), strict=True)]
    units["bundled"] = []
    for claim in sets["bundled"]:  # claim-level: the snippets' judgments aggregated as the pipeline does
        rows = [{"claim": claim["claim"], "evidence": e} for e in claim["evidence"]]
        judgments = [Judgment(RELATIONS[_argmax(q)], q[_argmax(q)]) for q in probs(rows)]
        units["bundled"].append((aggregate(judgments)[0] == claim["relation"], claim["lang"]))
    originals = [{"claim": r["original"], "evidence": r["evidence"]} for r in sets["edits"]]
    units["edits"] = [(r["family"], q0[support], q[support]) for r, q0, q in
                      zip(sets["edits"], probs(originals), probs(sets["edits"]), strict=True)]
    seconds = time.perf_counter() - started
    threshold = judge.support_threshold
    out: dict[str, object] = {"judge": name, **set_metrics(units, threshold)}
    sizes = {"wice/claims": len(units["wice"]), "ocnli/n": len(units["ocnli"]), "mix/n": len(units["mix"]),
             "bundled/n": len(units["bundled"]), "edits/n": len(units["edits"])}
    out.update(sizes)
    flat = [(key, unit) for key, rows in units.items() for unit in rows]

    def statistic(picked):
        grouped: dict[str, list] = {key: [] for key in units}
        for key, unit in picked:
            grouped[key].append(unit)
        return set_metrics(grouped, threshold)

    headline = ["wice/binary_bacc", "ocnli/accuracy", "mix/en/bacc", "mix/zh/bacc", "bundled/en/accuracy",
                "bundled/zh/accuracy"]
    out["ci95"] = {k: [round(a, 3), round(b, 3)] for k, (a, b) in
                   bootstrap_ci(flat, statistic, headline, ci_samples, 0, 0.95).items()}
    out["pairs_per_s_all_sets"] = round(n_pairs / seconds, 2)
    out["pairs_per_s_batch32"] = throughput(judge, sets["mix"][:256])
    out["threads"] = threads
    return out


def throughput(judge, rows) -> float:
    judge.predict_proba([r["claim"] for r in rows[:32]], [r["evidence"] for r in rows[:32]])  # warm up
    start = time.perf_counter()
    judge.predict_proba([r["claim"] for r in rows], [r["evidence"] for r in rows])
    return round(len(rows) / (time.perf_counter() - start), 2)


def load_sets(ocnli_cap: int, mix_cap: int, edit_cap: int, seed: int) -> dict:
    from factlab.config import compose_config
    from factlab.data.contrastive import FAMILIES, edits
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
    supported = [r for r in rows(rest) if r["relation"] == "support"]
    edited = {family: [] for family in FAMILIES}
    for row in supported:
        for edit in edits(row["claim"], row["evidence"]):
            edited[edit.family].append({"claim": edit.claim, "original": row["claim"], "evidence": row["evidence"],
                                        "relation": edit.relation, "family": edit.family})
    return {"wice": rows(wice), "ocnli": seeded_sample(rows(ocnli), ocnli_cap, seed),
            "mix": seeded_sample(rows(rest), mix_cap, seed), "bundled": gold,
            "edits": [row for family in FAMILIES for row in seeded_sample(edited[family], edit_cap, seed)]}


def stage_program_on(stage: str, lm: str):
    """(LM handle, the stage program, the stage config) on a conf/lm option, DSPy's cache off: every call is real."""
    from hydra.utils import instantiate

    from factlab.config import compose_config
    from factlab.stages.build import build_program

    cfg = compose_config("run_stage", [f"stage={stage}", f"lm@student={lm}", "student.cache=false"])
    return instantiate(cfg.student), build_program(cfg.stage), cfg.stage


class ProgramJudge:
    """The judge stage program on a local LM as a `predict_proba` (a one-hot of its answer)."""

    support_threshold = 0.5

    def __init__(self, lm: str) -> None:
        self.handle, self.program, _ = stage_program_on("judge", lm)

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
    parser.add_argument("--edits", type=int, default=150, help="held-out contrastive edits per family")
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
    sets = load_sets(args.ocnli, args.mix, args.edits, args.seed)
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
            int8 = SequenceClassifier(folder, batch_size=32, int8=True)
            quantised = evaluate(f"{name} int8", int8, sets, args.threads)
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
        print(f"| {row['judge']} | " + " | ".join(_cell(row, k) for k in keys) + " |")
    families = sorted({k.split("/")[1] for row in results for k in row if k.startswith("edits/") and
                       k.endswith("/caught")})
    if families:
        print("\nheld-out contrastive edits caught (p(support) of an edited claim under the judge's threshold, of the"
              " unedited claims it passed; `passed` the share of unedited support claims at or over the threshold):")
        print("| judge | passed | " + " | ".join(families) + " |\n|" + "---|" * (len(families) + 2))
        for row in results:
            print(f"| {row['judge']} | {_cell(row, 'edits/original/passed')} | "
                  + " | ".join(_cell(row, f"edits/{f}/caught") for f in families) + " |")


def _cell(row: dict, key: str) -> str:
    value = row.get(key)
    if not isinstance(value, float):
        return "" if value is None else str(value)
    low_high = row.get("ci95", {}).get(key)
    return f"{value:.3f} [{low_high[0]:.2f}, {low_high[1]:.2f}]" if low_high else f"{value:.3f}"

if __name__ == "__main__":
    main()
