# python benchmarks/judge_targets.py [--model factlab:judge-e5s-v1] [--quick]
"""The shipped judge on every target set of issue 42, in one run on this CPU (never trained on, never used to fit
calibration; the recipe's `targets:` table names the files, FACTLAB_DATA_ROOT the folder):

- WiCE dev (oracle chunks): claim-level binary support vs the rest, a claim's p(support) the max over its chunks (each
  read in windows); balanced accuracy at the model's fitted threshold and at argmax.
- 3-way accuracy (support / contradict / the rest as neutral): LingNLI val, OCNLI dev (optimistic: its premises are in
  OCNLI train.50k), XNLI-zh test, ANLI dev (hard), ConTRoL dev + test (long passages, hard).
- MCTest-NLI: binary balanced accuracy (document-level stories, windows).
- held-out contrastive edits: `factlab.data.contrastive` applied to the entailed pairs of LingNLI val, XNLI-zh test
  and the bundled test split; per family and language, the share caught (the judge does not answer support) and the
  share given the edit's own relation.
- evidence shuffle: claims of LingNLI val and XNLI-zh test each against another pair's evidence; share judged support.
- the bundled test split on gold evidence: per-snippet relation accuracy per language.
- speed: pairs/s for short pairs and for long (windowed) pairs, fp32 and int8, side by side.
Every rate with its n and a 95% bootstrap interval. Prints each result; writes
outputs/benchmarks/judge_targets/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

OUT = Path("outputs/benchmarks/judge_targets")


def _interval(units, stat, seed=0):
    from factlab.metrics import bootstrap_ci

    ci = bootstrap_ci(units, lambda us: {"v": stat(us)}, ["v"], 1000, seed, 0.95)
    low, high = ci.get("v", (float("nan"), float("nan")))
    return round(stat(units), 4), [round(low, 4), round(high, 4)], len(units)


def _nli3(relation: str) -> str:
    return {"support": "e", "contradict": "c"}.get(relation, "n")


def _bacc(units):
    from factlab.judge.train import balanced_accuracy

    return balanced_accuracy(units)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="factlab:judge-e5s-v1")
    parser.add_argument("--quick", action="store_true", help="200 rows per set (a smoke run, not a measurement)")
    parser.add_argument("--cap", type=int, default=2000,
                        help="rows per 3-way set at most (seeded sample; XNLI-zh test is read whole)")
    parser.add_argument("--long-cap", type=int, default=300, help="rows of ConTRoL and MCTest at most")
    parser.add_argument("--no-speed", action="store_true")
    parser.add_argument("--only-wice", action="store_true", help="WiCE alone, merged into an existing results.json")
    parser.add_argument("--only-edits", action="store_true", help="the edits alone, merged likewise")
    args = parser.parse_args()

    from omegaconf import OmegaConf

    from factlab.judge.model import Judge
    from factlab.judge.pairs import read_set
    from factlab.tracking.refs import resolve_model

    root = os.environ.get("FACTLAB_DATA_ROOT", "../shared/data")
    recipe = OmegaConf.to_container(OmegaConf.load("conf/recipe/judge_e5.yaml"), resolve=False)
    targets = recipe["targets"]
    cap = 200 if args.quick else args.cap
    long_cap = 100 if args.quick else args.long_cap
    rng = random.Random(0)
    judge = Judge(resolve_model(args.model))
    threshold = judge.support_threshold
    results: dict = {"model": args.model, "threshold": threshold, "temperature": judge.temperature, "sets": {}}

    def score(pairs):
        return judge.predict_proba([p.claim for p in pairs], [p.evidence for p in pairs])

    from factlab.schema import RELATIONS

    sup = RELATIONS.index("support")
    three_way = ("lingnli_val", "ocnli_dev", "xnli_zh_test", "anli_dev", "control")
    three_way = () if args.only_wice or args.only_edits else three_way
    for name in three_way:
        pairs = read_set(name, targets[name], root)
        limit = long_cap if name == "control" else len(pairs) if name == "xnli_zh_test" and not args.quick else cap
        pairs = rng.sample(pairs, min(limit, len(pairs)))
        start = time.perf_counter()
        probs = score(pairs)
        units = [(_nli3(p.relations[0]), _nli3(judge.decide(q)[0])) for p, q in zip(pairs, probs, strict=True)]
        acc = _interval(units, lambda us: sum(g == q for g, q in us) / len(us))
        argmax_units = [(_nli3(p.relations[0]), _nli3(RELATIONS[max(range(5), key=q.__getitem__)]))
                        for p, q in zip(pairs, probs, strict=True)]
        argmax_acc = _interval(argmax_units, lambda us: sum(g == q for g, q in us) / len(us))
        results["sets"][name] = {"accuracy": acc, "accuracy_argmax": argmax_acc,
                                 "seconds": round(time.perf_counter() - start, 1)}
        print(name, results["sets"][name], flush=True)
    # MCTest binary
    if not (args.only_wice or args.only_edits):
        pairs = read_set("mctest", targets["mctest"], root)
        pairs = rng.sample(pairs, min(long_cap, len(pairs)))
        probs = score(pairs)
        units = [(q[sup] >= threshold, p.relations == ("support",)) for p, q in zip(pairs, probs, strict=True)]
        results["sets"]["mctest"] = {"binary_bacc": _interval(units, _bacc)}
        print("mctest", results["sets"]["mctest"], flush=True)
    # WiCE dev claim-level: each row of oracle_chunks is one (claim, passage) with the passage's sentences
    wice_path = Path(root) / "wice/oracle_chunks/claim/dev.jsonl"
    if wice_path.is_file() and not args.only_edits:
        results["sets"]["wice_dev"] = wice(judge, wice_path, threshold, 120 if args.quick else None)
        print("wice_dev", results["sets"]["wice_dev"], flush=True)
    if args.only_wice:
        _merge_write(results)
        return
    if args.only_edits:
        results["sets"] = {}
    # held-out contrastive edits + evidence shuffle
    from factlab.data.contrastive import edits
    from factlab.judge.train import bundled_pairs

    base = [p for name in ("lingnli_val", "xnli_zh_test") for p in read_set(name, targets[name], root)
            if p.relations == ("support",)]
    bundled_test = _bundled_test()
    base += [p for p in bundled_pairs(bundled_test) if p.relations == ("support",) and p.source == "bundled"]
    edited = []
    for p in base:
        for e in edits(p.claim, p.evidence):
            edited.append((e.family, p.lang, e.relation, p.claim, e.claim, p.evidence))
    rng.shuffle(edited)
    per_cell: dict = {}
    for row in edited:
        per_cell.setdefault((row[0], row[1]), [])
        if len(per_cell[(row[0], row[1])]) < (60 if args.quick else 400):
            per_cell[(row[0], row[1])].append(row)
    rows = [r for cell in per_cell.values() for r in cell]
    probs = judge.predict_proba([r[4] for r in rows], [r[5] for r in rows])
    originals = judge.predict_proba([r[3] for r in rows], [r[5] for r in rows])  # the unedited claims
    results["edits"] = {}
    for family, lang in sorted(per_cell):
        part = [(r, q, o) for r, q, o in zip(rows, probs, originals, strict=True) if (r[0], r[1]) == (family, lang)]
        caught = [float(judge.decide(q)[0] != "support") for _, q, _ in part]
        exact = [float(judge.decide(q)[0] == r[2]) for r, q, _ in part]
        passed = [judge.decide(o)[0] == "support" for _, _, o in part]
        given = [c for c, ok in zip(caught, passed, strict=True) if ok]
        results["edits"][f"{family}/{lang}"] = {
            "caught": _interval(caught, lambda us: sum(us) / len(us)),
            "own_relation": round(sum(exact) / max(1, len(exact)), 4),
            "original_passed": round(sum(passed) / max(1, len(passed)), 4),
            "caught_given_passed": _interval(given, lambda us: sum(us) / len(us)) if given else None}
        print("edit", family, lang, results["edits"][f"{family}/{lang}"], flush=True)
    if args.only_edits:
        path = OUT / "results.json"
        old = json.loads(path.read_text()) if path.is_file() else {}
        path.write_text(json.dumps({**old, "edits": results["edits"]}, indent=2, ensure_ascii=False) + "\n")
        print(f"merged the edits into {path}")
        return
    pool = [p for name in ("lingnli_val", "xnli_zh_test") for p in read_set(name, targets[name], root)]
    pool = rng.sample(pool, 200 if args.quick else 1000)
    shuffled = [(pool[i].claim, pool[(i + 37) % len(pool)].evidence, pool[i].lang) for i in range(len(pool))]
    probs = judge.predict_proba([s[0] for s in shuffled], [s[1] for s in shuffled])
    support = [float(judge.decide(q)[0] == "support") for q in probs]
    results["shuffle_support"] = _interval(support, lambda us: sum(us) / len(us))
    print("shuffle support share", results["shuffle_support"], flush=True)
    # bundled test on gold evidence
    test_pairs = [p for p in bundled_pairs(bundled_test) if p.source == "bundled"]
    probs = score(test_pairs)
    for lang in ("en", "zh"):
        units = [float(judge.decide(q)[0] == p.relations[0]) for p, q in zip(test_pairs, probs, strict=True)
                 if p.lang == lang]
        results.setdefault("bundled_test", {})[lang] = _interval(units, lambda us: sum(us) / len(us))
    print("bundled test", results["bundled_test"], flush=True)
    if not args.no_speed:
        results["speed"] = speed(resolve_model(args.model), read_set("xnli_zh_test", targets["xnli_zh_test"], root),
                                 read_set("control", targets["control"], root))
        print("speed", results["speed"], flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {OUT / 'results.json'}")


def wice(judge, path: Path, threshold: float, limit: int | None) -> dict:
    """Claim-level binary balanced accuracy on WiCE dev: a claim's p(support) is the max over its passages (each
    passage its sentences joined, read in windows); gold support = `supported`."""
    from factlab.data.jsonl import read_jsonl
    from factlab.schema import RELATIONS

    sup = RELATIONS.index("support")
    rows = read_jsonl(path)
    rows = rows[:limit] if limit else rows
    passages = [" ".join(e if isinstance(e, str) else " ".join(e) for e in r["evidence"]) for r in rows]
    probs = judge.predict_proba([r["claim"] for r in rows], passages)
    best: dict[str, float] = {}
    argmax: dict[str, bool] = {}
    gold: dict[str, bool] = {}
    for row, q in zip(rows, probs, strict=True):
        best[row["claim"]] = max(best.get(row["claim"], 0.0), q[sup])
        argmax[row["claim"]] = argmax.get(row["claim"], False) or max(range(len(q)), key=q.__getitem__) == sup
        gold[row["claim"]] = row["label"] == "supported"
    claims = sorted(gold)
    return {"binary_bacc": _interval([(best[c] >= threshold, gold[c]) for c in claims], _bacc),
            "binary_bacc_argmax": _interval([(argmax[c], gold[c]) for c in claims], _bacc),
            "passages": len(rows), "claims": len(claims), "supported": sum(gold.values())}


def _merge_write(results: dict) -> None:
    path = OUT / "results.json"
    old = json.loads(path.read_text()) if path.is_file() else {}
    old.setdefault("sets", {}).update(results["sets"])
    OUT.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**results, **{k: v for k, v in old.items() if k != "sets"}, "sets": old["sets"]},
                               indent=2, ensure_ascii=False) + "\n")
    print(f"merged into {path}")


def _bundled_test() -> list[dict]:
    from omegaconf import OmegaConf

    from factlab.data.registry import load_dataset
    from factlab.data.splits import split_cases

    fractions = OmegaConf.to_container(OmegaConf.load("conf/splits/default.yaml"))
    return split_cases(load_dataset(OmegaConf.load("conf/dataset/bundled.yaml")).cases, fractions, 0)["test"]


def speed(folder, short_pairs, long_pairs, n_short: int = 512, n_long: int = 64, n_agree: int = 1000) -> dict:
    """pairs/s of fp32 and int8, short pairs and long (windowed) pairs, measured one after the other; and int8's
    3-way accuracy and agreement with fp32 on `n_agree` short pairs."""
    from factlab.judge.model import Judge

    out, decided = {}, {}
    sample = random.Random(1).sample(short_pairs, min(n_agree, len(short_pairs)))
    for int8 in (False, True):
        judge = Judge(folder, int8=int8)
        decided[int8] = [judge.decide(q)[0] for q in judge.predict_proba([p.claim for p in sample],
                                                                         [p.evidence for p in sample])]
        key = "int8" if int8 else "fp32"
        out[f"{key}/accuracy_{len(sample)}_short"] = round(sum(
            _nli3(d) == _nli3(p.relations[0]) for d, p in zip(decided[int8], sample, strict=True)) / len(sample), 4)
        for kind, pairs, n in (("short", short_pairs, n_short), ("long", long_pairs, n_long)):
            batch = pairs[:n]
            judge.predict_proba([p.claim for p in batch[:32]], [p.evidence for p in batch[:32]])  # warm up
            start = time.perf_counter()
            judge.predict_proba([p.claim for p in batch], [p.evidence for p in batch])
            out[f"{'int8' if int8 else 'fp32'}/{kind}_pairs_s"] = round(n / (time.perf_counter() - start), 1)
    out["int8_agrees_with_fp32"] = round(sum(a == b for a, b in zip(decided[False], decided[True], strict=True))
                                         / len(sample), 4)
    return out


if __name__ == "__main__":
    main()
