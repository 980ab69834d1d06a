# python benchmarks/retrieval_bench.py [--max-passages 60000] [--max-queries 500] [--corpus outputs/retrieval_bench]
"""The local retriever on a public retrieval benchmark (factlab/data/retrieval_bench.py): per dataset and language,
recall@5, recall@20 and MRR@20 of the gold passages, with 95% bootstrap intervals over queries, for BM25 alone (the
index's own lexical scores), dense alone (exact cosine over every chunk with the configured encoder, MiniLM) and the
retriever's own `search([claim], k, claim=claim)` (RRF fusion, tier order, the `min_relevance` filter).

A passage is a source: chunk rankings become source rankings (a source counts once, at its best chunk). Compression
is switched off for the search (it cuts evidence text after ranking, so the ranking is the same, and it costs an
encoder call per hit). Resumable: the corpus build is deterministic, the index build incremental, and every ranking
is appended to outputs/benchmarks/retrieval_bench/rankings.jsonl under a key of the corpus and the config, so a rerun
only searches what is missing. Prints a Markdown table and writes outputs/benchmarks/retrieval_bench/results.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

OUT = Path("outputs/benchmarks/retrieval_bench")
K = 20  # the deepest cut measured (recall@20, MRR@20)
METHODS = ("bm25", "dense", "search")


def source_ranking(scores: np.ndarray, source_ids: list[str], k: int) -> list[str]:
    """The best k distinct sources by their best chunk's score (chunks with a non-finite or zero-or-less BM25 score
    never count: the caller passes -inf for them).

    >>> source_ranking(np.array([0.1, 0.9, 0.8, -np.inf]), ["a", "b", "b", "c"], 5)
    ['b', 'a']
    """
    depth = min(len(scores), k * 8)
    while True:
        top = np.argpartition(-scores, depth - 1)[:depth] if depth < len(scores) else np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]
        ranked = list(dict.fromkeys(source_ids[i] for i in top.tolist() if np.isfinite(scores[i])))
        if len(ranked) >= k or depth >= len(scores):
            return ranked[:k]
        depth = min(len(scores), depth * 4)  # several chunks of one source took places: look deeper


def query_metrics(gold: list[str], ranked: list[str]) -> dict[str, float]:
    """recall@5, recall@20 and MRR@20 of one query.

    >>> query_metrics(["a", "b"], ["x", "a"] + ["y"] * 18 + ["b"])
    {'recall@5': 0.5, 'recall@20': 0.5, 'mrr@20': 0.5}
    """
    wanted = set(gold)
    first = next((rank for rank, source in enumerate(ranked[:K], 1) if source in wanted), None)
    return {"recall@5": len(wanted & set(ranked[:5])) / len(wanted),
            "recall@20": len(wanted & set(ranked[:K])) / len(wanted),
            "mrr@20": 1.0 / first if first else 0.0}


def lexical_scorer(retriever):
    """BM25 of every chunk for a query: the index's own scores where it exposes them (the retriever's lexical side),
    else bm25s over the same tokenizer and the same indexed text (title + chunk). Returns (scorer, which one)."""
    from factlab.retrieval.tokenizer import tokenize

    if hasattr(retriever.index, "bm25_scores"):
        return (lambda query: retriever.index.bm25_scores(tokenize(query))), "index.bm25_scores"
    import bm25s

    index = retriever.index
    model = bm25s.BM25()
    model.index([tokenize(f"{index.sources[c.source_id].title}\n{c.text}") for c in index.chunks], show_progress=False)
    return (lambda query: model.get_scores(tokenize(query))), "bm25s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("outputs/retrieval_bench"))
    parser.add_argument("--max-passages", type=int, default=60000)
    parser.add_argument("--max-queries", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bootstrap", type=int, default=1000)  # bootstrap samples per interval
    args = parser.parse_args()

    from tqdm import tqdm

    from factlab.config import compose_config
    from factlab.data.jsonl import iter_jsonl
    from factlab.data.retrieval_bench import build
    from factlab.metrics import bootstrap_ci
    from factlab.retrieval.retriever import Retriever
    from factlab.runtime import prepare_offline_env

    prepare_offline_env()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    settings = {"max_passages": args.max_passages, "max_queries": args.max_queries, "seed": args.seed}
    manifest_path = args.corpus / "manifest.json"
    if not (manifest_path.is_file() and json.loads(manifest_path.read_text())["settings"] == settings):
        build(args.corpus, args.max_passages, args.max_queries, args.seed)
    manifest = json.loads(manifest_path.read_text())
    queries = [row for _, row in iter_jsonl(args.corpus / "queries.jsonl")]
    timings["corpus_s"] = round(time.perf_counter() - started, 1)
    print(f"corpus {args.corpus}: {manifest['passages']['total']} passages {manifest['passages_per_lang']}, "
          f"{len(queries)} queries {manifest['queries_per_lang']}")

    cfg = compose_config("evaluate", ["dataset=bundled"])
    retrieval = cfg.retrieval.copy()
    retrieval.compress.enabled = False  # ranking unchanged; saves an encoder call per hit
    started = time.perf_counter()
    retriever = Retriever.build(args.corpus / "sources", args.corpus / "index", retrieval)
    timings["index_s"] = round(time.perf_counter() - started, 1)
    report = retriever.report
    chunks = list(retriever.index.chunks)
    source_ids = [chunk.source_id for chunk in chunks]
    print(f"index: {len(chunks)} chunks of {len(set(source_ids))} sources in {timings['index_s']} s; "
          f"issues {len(retriever.issues)}; report {report}")

    key = hashlib.sha256("\n".join([(args.corpus / "queries.jsonl").read_text(), manifest_path.read_text(),
                                    json.dumps(_plain(retrieval), sort_keys=True)]).encode()).hexdigest()[:16]
    OUT.mkdir(parents=True, exist_ok=True)
    rankings_path = OUT / "rankings.jsonl"
    done: dict[tuple[str, int], list[str]] = {}
    if rankings_path.is_file():
        for _, row in iter_jsonl(rankings_path, skip_torn=True):
            if row.get("key") == key:
                done[(row["method"], row["i"])] = row["ranked"]

    todo = [i for i in range(len(queries)) if any((m, i) not in done for m in METHODS)]
    print(f"rankings: {len(done)} cached, {len(todo)} queries to search")
    started = time.perf_counter()
    if todo:
        encode = getattr(retriever.encoder, "encode_queries", retriever.encoder.encode)
        embeddings = retriever.index.embeddings  # (chunks, dim): exact dense scores for every chunk
        lexical, lexical_kind = lexical_scorer(retriever)
        with rankings_path.open("a", encoding="utf-8") as sink:
            if rankings_path.stat().st_size:
                sink.write("\n")  # a torn last line of a killed run stays its own (skipped) line
            for start in tqdm(range(0, len(todo), 64), desc="queries (64 per step)", unit="step"):
                batch = todo[start:start + 64]
                vectors = np.asarray(encode([queries[i]["query"] for i in batch]), dtype=np.float32)
                dense = embeddings @ vectors.T
                for column, i in enumerate(batch):
                    text = queries[i]["query"]
                    bm25 = np.asarray(lexical(text), dtype=np.float64)
                    ranked = {
                        "bm25": source_ranking(np.where(bm25 > 0, bm25, -np.inf), source_ids, K),
                        "dense": source_ranking(dense[:, column], source_ids, K),
                        "search": list(dict.fromkeys(e.source_id for e in retriever.search([text], k=K, claim=text))),
                    }
                    for method, found in ranked.items():
                        done[(method, i)] = found
                        sink.write(json.dumps({"key": key, "method": method, "i": i, "ranked": found}) + "\n")
                sink.flush()
    else:
        lexical_kind = "index.bm25_scores" if hasattr(retriever.index, "bm25_scores") else "bm25s"
    timings["search_s"] = round(time.perf_counter() - started, 1)

    per_query = {method: [query_metrics(q["gold"], done[(method, i)]) for i, q in enumerate(queries)]
                 for method in METHODS}
    groups: dict[str, list[int]] = defaultdict(list)
    for i, query in enumerate(queries):
        groups[query["dataset"]].append(i)
        groups[f"all {query['lang']}"].append(i)
        groups["all"].append(i)
    names = ["recall@5", "recall@20", "mrr@20"]
    results: dict = {"corpus": {k: manifest[k] for k in ("settings", "passages", "passages_per_lang", "queries",
                                                         "queries_per_lang")},
                     "chunks": len(chunks), "bm25": lexical_kind, "k": K, "compress": False, "timings": timings,
                     "encoder": str(retrieval.encoder._target_), "metrics": {}}
    for group, members in tqdm(groups.items(), desc="bootstrap", unit="group"):
        results["metrics"][group] = {"n": len(members), "lang": sorted({queries[i]["lang"] for i in members})}
        for method in METHODS:
            units = [per_query[method][i] for i in members]

            def mean(rows, names=names):
                return {name: float(np.mean([row[name] for row in rows])) for name in names}

            intervals = bootstrap_ci(units, mean, names, args.bootstrap, args.seed, 0.95)
            results["metrics"][group][method] = {name: {"mean": round(value, 4),
                                                        "ci95": [round(v, 4) for v in intervals[name]]}
                                                 for name, value in mean(units).items()}
    (OUT / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print("\n" + markdown(results))
    print(f"\ntimings: {json.dumps(timings)}")


def markdown(results: dict) -> str:
    """The results as a Markdown table: one row per (group, method), mean [95% interval] per metric."""
    lines = ["| queries | n | method | recall@5 | recall@20 | MRR@20 |", "|---|---|---|---|---|---|"]
    groups = results["metrics"]
    order = [g for g in groups if not g.startswith("all")] + sorted(g for g in groups if g.startswith("all "))
    for group in [*order, "all"]:
        for method in METHODS:
            cells = [f"{m['mean']:.3f} [{m['ci95'][0]:.2f}, {m['ci95'][1]:.2f}]"
                     for m in groups[group][method].values()]
            lines.append(f"| {group} | {groups[group]['n']} | {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _plain(node) -> object:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(node, resolve=True)


if __name__ == "__main__":
    main()
