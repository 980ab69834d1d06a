"""Input tokens per round and in total: the multi-round checker (state, trimmed results) vs a naive loop appending all
raw results, on multi-hop claims (printed tables; numbers in docs/rl.md).

    python benchmarks/multihop_tokens.py                                   # token growth, scripted LM, 1..6 rounds
    python benchmarks/multihop_tokens.py --real-lm local_qwen05 --real-claims 8 --real-rounds 3   # + accuracy

Claims: the bundled multi-hop cases (corpus: the bundled sources) and, when ../shared/data is there, FEVEROUS dev
claims whose gold evidence has 2+ sentences (corpus: the union of the sampled claims' pages, so other claims' pages
are distractors). HoVer is left out: it ships no evidence text to search.

Token growth uses a scripted LM (DSPy DummyLM) that always asks for 2 more searches, so both checkers run exactly R
rounds on the same real retrieval; a round's input is what its LM call sent (factlab/agents/accounting.py). Accuracy
needs a real model: `--real-lm` runs both checkers with it on a small sample (label and relation accuracy vs gold).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def multihop_claims(n_feverous: int, seed: int) -> dict[str, list[tuple[dict, dict]]]:
    """dataset -> [(case, claim)] of multi-hop claims; FEVEROUS only when its data is present."""
    from factlab.config import compose_config
    from factlab.data.registry import load_dataset

    bundled = load_dataset(compose_config("train", ["dataset=bundled"]).dataset).cases
    out = {"bundled": [(case, claim) for case in bundled for claim in case.get("claims", [])
                       if claim.get("multi_hop") and claim.get("label")]}
    try:
        feverous = load_dataset(compose_config("train", ["dataset=feverous"]).dataset).cases
    except Exception as exc:  # absent ../shared/data: say so and go on with the bundled claims
        print(f"FEVEROUS skipped: {exc}")
        return out
    pairs = [(case, claim) for case in feverous for claim in case["claims"]
             if len({e["text"] for e in claim.get("evidence", [])}) >= 2 and claim.get("label")]
    if n_feverous > 0:  # 0 = bundled only
        out["feverous"] = random.Random(seed).sample(pairs, min(n_feverous, len(pairs)))
    return out


def searches(claims: dict, retrieval_cfg, index_root: Path, encoder) -> dict:
    """dataset -> Retriever over the union of its cases' sources."""
    from factlab.retrieval.retriever import Retriever
    from factlab.train.rl.data import union_sources

    out = {}
    for name, pairs in claims.items():
        sources = union_sources(case for case, _ in pairs)
        folder = index_root / name / "sources"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "corpus.jsonl").write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in sources),
                                            encoding="utf-8")
        out[name] = Retriever.build(folder, index_root / name / "index", retrieval_cfg, encoder=encoder)
        # Load the encoder's model now, in one thread: MiniLMEncoder loads lazily and transformers' lazy imports
        # race when the first two searches of a round start in parallel threads.
        out[name].search(["warm up"], k=1)
    return out


def questions_for(claim: dict, rounds: int) -> list[list[str]]:
    """Two search questions per round for the scripted LM: the claim's gold queries, else halves of the claim."""
    words = claim["text"].split()
    pool = list(claim.get("queries") or []) or [" ".join(words[: len(words) // 2]), " ".join(words[len(words) // 2:])]
    return [[pool[(2 * r) % len(pool)], pool[(2 * r + 1) % len(pool)]] for r in range(rounds)]


def scripted_lm(kind: str, claim: dict, rounds: int):
    """A DummyLM that runs exactly `rounds` search rounds, then a verdict (support, citing nothing)."""
    from dspy.utils.dummies import DummyLM

    plan = questions_for(claim, rounds)
    answers = []
    facts: list[str] = []
    for r, questions in enumerate(plan, start=1):
        if kind == "ours":
            facts = facts + [f"Round {r} established a fact about {q} [fact#p{r}-c{i}]."
                             for i, q in enumerate(questions)]
            answers.append({"facts": facts, "questions": questions, "next_action": "search"})
        else:
            answers.append({"queries": questions, "next_action": "search"})
    answers.append({"relation": "support", "confidence": 0.9, "chunk_ids": []})
    return DummyLM(answers)


def build(kind: str, rules, rounds: int, k: int, max_parallel: int):
    """The checker of conf/agent/<multi_round|naive_loop>.yaml with this run's budget."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from factlab.config import CONF_DIR

    node = OmegaConf.load(CONF_DIR / "agent" / ("multi_round.yaml" if kind == "ours" else "naive_loop.yaml"))
    node.max_rounds, node.k, node.max_parallel = rounds, k, max_parallel
    return instantiate(node, _partial_=True)(rules=rules)  # a rules object given to instantiate becomes config


def token_growth(claims: dict, retrievers: dict, rules, max_rounds: int, k: int) -> dict:
    """Per dataset and checker: per-round input tokens at R=max_rounds and total input tokens for R = 1..max."""
    import dspy

    result = {}
    for name, pairs in claims.items():
        search = retrievers[name].search
        for kind in ("ours", "naive"):
            totals, per_round = {}, []
            for rounds in range(1, max_rounds + 1):
                runs = []
                for _, claim in pairs:
                    checker = build(kind, rules, rounds, k, 2)
                    with dspy.context(lm=scripted_lm(kind, claim, rounds), adapter=dspy.ChatAdapter()):
                        runs.append(checker(claim=claim["text"], search=search).rounds)
                totals[rounds] = statistics.mean(sum(r.input_tokens for r in run) for run in runs)
                if rounds == max_rounds:
                    per_round = [statistics.mean(run[i].input_tokens for run in runs) for i in range(rounds + 1)]
            result[(name, kind)] = {"totals": totals, "per_round": per_round, "n": len(pairs)}
    return result


def increment_slope(totals: dict[int, float]) -> float:
    """Least-squares slope, over R, of the marginal cost total(R) - total(R-1): ~0 when the total grows linearly,
    > 0 (tokens per round, per round) when it grows quadratically.

    >>> increment_slope({1: 10.0, 2: 20.0, 3: 30.0, 4: 40.0}), increment_slope({1: 1.0, 2: 4.0, 3: 9.0, 4: 16.0})
    (0.0, 2.0)
    """
    rounds = sorted(totals)[1:]
    deltas = [totals[r] - totals[r - 1] for r in rounds]
    mean_r, mean_d = sum(rounds) / len(rounds), sum(deltas) / len(deltas)
    return sum((r - mean_r) * (d - mean_d) for r, d in zip(rounds, deltas, strict=True)) / sum(
        (r - mean_r) ** 2 for r in rounds)


def print_growth(result: dict, max_rounds: int) -> None:
    for name in dict.fromkeys(n for n, _ in result):
        ours, naive = result[(name, "ours")], result[(name, "naive")]
        print(f"\n## {name}: {ours['n']} multi-hop claims, input tokens per LM call (mean), run of {max_rounds} rounds")
        print("| call | ours | naive |\n|---|---:|---:|")
        for i, (a, b) in enumerate(zip(ours["per_round"], naive["per_round"], strict=True)):
            label = f"round {i + 1}" if i < max_rounds else "verdict"
            print(f"| {label} | {a:.0f} | {b:.0f} |")
        print(f"\n## {name}: total input tokens of a run of R rounds (mean per claim)")
        print("| R | ours | naive | ours: + round R | naive: + round R | naive / ours |")
        print("|---:|---:|---:|---:|---:|---:|")
        for rounds in range(1, max_rounds + 1):
            a, b = ours["totals"][rounds], naive["totals"][rounds]
            da = a - ours["totals"].get(rounds - 1, 0.0)
            db = b - naive["totals"].get(rounds - 1, 0.0)
            print(f"| {rounds} | {a:.0f} | {b:.0f} | {da:.0f} | {db:.0f} | {b / a:.2f} |")
        print(f"\nslope of the marginal cost over R (tokens per round, per round): ours "
              f"{increment_slope(ours['totals']):.0f} (linear total), naive {increment_slope(naive['totals']):.0f} "
              "(quadratic total)")


def accuracy(claims: dict, retrievers: dict, rules, lm_name: str, n: int, rounds: int, k: int, seed: int,
             timeout_s: float) -> list:
    """Both checkers with a real local LM on a seeded sample per dataset: accuracy, tokens, seconds, failures."""
    from hydra.utils import instantiate

    from factlab.config import compose_config
    from factlab.models.errors import call_safely

    handle = instantiate(compose_config("verify", ["input=x", "sources=y", f"lm@student={lm_name}",
                                                   f"student.timeout_s={timeout_s}"]).student)
    rows = []
    for name, pairs in claims.items():
        sample = random.Random(seed).sample(pairs, min(n, len(pairs)))
        for kind in ("ours", "naive"):
            checker = build(kind, rules, rounds, k, 2)
            stats = {"dataset": name, "checker": kind, "n": len(sample), "label_ok": 0, "relation_ok": 0,
                     "failed": 0, "input_tokens": [], "seconds": []}
            for case, claim in sample:
                start = time.perf_counter()
                with handle.context():
                    pred, error = call_safely("multi_round", checker, claim=claim["text"],
                                              search=retrievers[name].search,
                                              vertical=claim.get("vertical") or case.get("vertical") or "general")
                stats["seconds"].append(time.perf_counter() - start)
                if error is not None:
                    stats["failed"] += 1
                    print(f"  {kind} {name} {claim['text'][:50]!r}: {error}")
                    continue
                print(f"  {kind} {name}: gold {claim.get('relation')}/{claim['label']}, got {pred.relation}/"
                      f"{pred.label} ({len(pred.evidence)} evidence, {len(pred.rounds) - 1} rounds, "
                      f"{pred.input_tokens} tokens)")
                stats["label_ok"] += pred.label == claim["label"]
                stats["relation_ok"] += pred.relation == claim.get("relation")
                stats["input_tokens"].append(pred.input_tokens)
            rows.append(stats)
    print(f"\n## accuracy with {lm_name}, at most {rounds} rounds, k={k} (seeded sample per dataset)")
    print("| dataset | checker | n | label acc | relation acc | failed | input tokens / claim | s / claim |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for s in rows:
        tokens = statistics.mean(s["input_tokens"]) if s["input_tokens"] else float("nan")
        print(f"| {s['dataset']} | {s['checker']} | {s['n']} | {s['label_ok'] / s['n']:.2f} | "
              f"{s['relation_ok'] / s['n']:.2f} | {s['failed']} | {tokens:.0f} | {statistics.mean(s['seconds']):.1f} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6, help="largest round budget of the token-growth runs (0: skip)")
    parser.add_argument("--feverous", type=int, default=24, help="FEVEROUS claims sampled (0 = bundled only)")
    parser.add_argument("--k", type=int, default=3, help="passages per search")
    parser.add_argument("--encoder", choices=["minilm", "hashing"], default="minilm")
    parser.add_argument("--real-lm", default=None, help="conf/lm name for the accuracy run, e.g. local_qwen05")
    parser.add_argument("--real-claims", type=int, default=8, help="claims per dataset in the accuracy run")
    parser.add_argument("--real-rounds", type=int, default=3)
    parser.add_argument("--lm-timeout", type=float, default=300.0, help="seconds per LM call (a busy CPU is slow)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--index-root", default="outputs/bench/multihop_tokens")
    args = parser.parse_args()

    from hydra.utils import instantiate

    from factlab.config import compose_config
    from factlab.retrieval.encoders import HashingEncoder
    from factlab.runtime import prepare_offline_env

    prepare_offline_env()
    cfg = compose_config("verify", ["input=x", "sources=y", "retrieval.index.progress=false"])
    rules = instantiate(cfg.business)
    encoder = HashingEncoder() if args.encoder == "hashing" else instantiate(cfg.retrieval.encoder)
    claims = multihop_claims(args.feverous, args.seed)
    retrievers = searches(claims, cfg.retrieval, REPO / args.index_root / args.encoder, encoder)
    if args.rounds:
        start = time.perf_counter()
        print_growth(token_growth(claims, retrievers, rules, args.rounds, args.k), args.rounds)
        print(f"\n(token growth: {time.perf_counter() - start:.0f}s, encoder {args.encoder})")
    if args.real_lm:
        accuracy(claims, retrievers, rules, args.real_lm, args.real_claims, args.real_rounds, args.k, args.seed,
                 args.lm_timeout)


if __name__ == "__main__":
    main()
