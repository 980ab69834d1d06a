# python benchmarks/retrieval_encoders.py [--split all|train|val|test] [--k 5]
"""Dense encoders for retrieval side by side on the bundled set, zh and en separately, in one run on this CPU.

For every gold claim with gold evidence, the claim text is the query (no query rewriting, so the number is the
retriever's alone) and recall@k of its gold chunks (with a 95% bootstrap interval over claims) is measured for: BM25
only; dense only with all-MiniLM-L6-v2 and with multilingual-e5-small; and the retriever's real search (BM25 + dense
fused by RRF, tier order, the `min_relevance` filter) with each encoder. Also: how many chunks a claim gets past
`min_relevance` (e5's cosines sit high, so a filter set for MiniLM lets more through), and encode speed (chunks/s
while indexing). Prints a Markdown table and writes outputs/benchmarks/retrieval_encoders/results.json.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

OUT = Path("outputs/benchmarks/retrieval_encoders")
ENCODERS = {"minilm": "factlab.retrieval.encoders.MiniLMEncoder", "e5": "factlab.retrieval.encoders.E5Encoder"}


def top(scores: np.ndarray, k: int) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="all", choices=["all", "train", "val", "test"])
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()

    from hydra.utils import instantiate

    from factlab.config import compose_config
    from factlab.data.registry import load_dataset
    from factlab.data.splits import split_cases
    from factlab.evals.attribution import gold_chunk_ids, recall
    from factlab.evals.corpus import corpus_folder
    from factlab.retrieval.retriever import Retriever
    from factlab.retrieval.tokenizer import tokenize
    from factlab.runtime import cache_root, prepare_offline_env

    prepare_offline_env()
    cfg = compose_config("evaluate", ["dataset=bundled"])
    dataset = load_dataset(cfg.dataset)
    cases = dataset.cases if args.split == "all" else split_cases(dataset.cases, cfg.splits, cfg.seed)[args.split]
    sources = corpus_folder(dataset.cases, cfg.dataset, cache_root() / "corpora")
    claims = [(c["text"], case["lang"], gold_chunk_ids(c)) for case in cases for c in case["claims"]
              if gold_chunk_ids(c)]
    by_lang = defaultdict(int)
    for _, lang, _ in claims:
        by_lang[lang] += 1
    print(f"bundled {args.split}: {len(claims)} claims with gold evidence {dict(by_lang)}; sources {sources}")

    scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    passed: dict[str, list[int]] = defaultdict(list)
    speed = {}
    for name, target in ENCODERS.items():
        retrieval = cfg.retrieval.copy()
        retrieval.encoder._target_ = target
        retrieval.encoder.model_path = None
        retrieval.index.progress = False
        encoder = instantiate(retrieval.encoder)
        started = time.perf_counter()
        retriever = Retriever.build(sources, OUT / "index" / name, retrieval, encoder=encoder)
        chunk_ids = [chunk.chunk_id for chunk in retriever.index.chunks]
        speed[name] = {"chunks": len(chunk_ids), "index_s": round(time.perf_counter() - started, 1)}
        texts = [text for text, _, _ in claims]
        started = time.perf_counter()
        query_vectors = np.asarray(retriever._encode_queries(texts), dtype=np.float32)
        speed[name]["queries_per_s"] = round(len(texts) / (time.perf_counter() - started), 1)
        dense = retriever.index.embeddings @ query_vectors.T
        for column, (text, lang, wanted) in enumerate(claims):
            if name == "minilm":  # BM25 does not depend on the encoder: once
                bm25 = retriever._bm25.get_scores(tokenize(text))
                scores["bm25"][lang].append(recall(wanted, [chunk_ids[i] for i in top(bm25, args.k)]))
            scores[f"dense {name}"][lang].append(recall(wanted, [chunk_ids[i] for i in top(dense[:, column],
                                                                                         args.k)]))
            found = retriever.search([text], k=args.k, claim=text)
            scores[f"search {name}"][lang].append(recall(wanted, [e.chunk_id for e in found]))
            passed[name].append(int(sum(retriever._relevance(i, dense[:, [column]], [tokenize(text)])
                                        >= retriever.settings.min_relevance for i in range(len(chunk_ids)))))

    from factlab.metrics import bootstrap_ci

    def interval(values: list[float]) -> list[float]:
        low, high = bootstrap_ci(values, lambda us: {"mean": float(np.mean(us))}, ["mean"], 1000, 0, 0.95)["mean"]
        return [round(low, 3), round(high, 3)]

    results = {"split": args.split, "k": args.k, "claims": dict(by_lang), "speed": speed,
               "recall": {method: {lang: float(np.mean(v)) for lang, v in langs.items()}
                          for method, langs in scores.items()},
               "recall_ci95": {method: {lang: interval(v) for lang, v in langs.items()}
                               for method, langs in scores.items()},
               "chunks_past_min_relevance": {name: float(np.mean(v)) for name, v in passed.items()}}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2))
    langs = sorted(by_lang)
    print("\n| method | " + " | ".join(f"recall@{args.k} {lang} (n={by_lang[lang]})" for lang in langs) + " |")
    print("|---|" + "---|" * len(langs))
    for method, per_lang in results["recall"].items():
        cis = results["recall_ci95"][method]
        print(f"| {method} | " + " | ".join(f"{per_lang[lang]:.3f} [{cis[lang][0]:.2f}, {cis[lang][1]:.2f}]"
                                           for lang in langs) + " |")
    print(f"\nchunks past min_relevance={cfg.retrieval.search.min_relevance} per claim (of "
          f"{speed['minilm']['chunks']}): " + ", ".join(f"{n} {v:.1f}" for n, v in
                                                       results["chunks_past_min_relevance"].items()))
    print("speed: " + json.dumps(speed))


if __name__ == "__main__":
    main()
