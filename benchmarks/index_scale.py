# python benchmarks/index_scale.py --sizes 10000 100000 [1000000] [--no-old] [--queries 100]
"""The local index at scale: build time, disk, RSS and query latency of the segmented index vs the old whole-folder one.

Passages are real text: 2-4 sentences drawn at random from scifact abstracts, climate_fever evidence and fool_me_twice
Wikipedia sentences (../shared/data; about 66k distinct sentences, so every passage is new text), written as jsonl
files of 10k records with three publishers (tiers 1-3). The dense side is NOT MiniLM: a seeded random unit vector per
text (384-d), since embedding a million passages takes hours on this CPU; dense timings are those of the index, not of
an encoder. Queries are claims of climate_fever and fool_me_twice. "lexical" = BM25 scores of every chunk + the top
`depth` ranking; "hybrid" = `Retriever.search` (BM25 + dense, RRF, tiers, relevance; no compression).

"old" is the format-1 index and retriever of commit 3c209a0 (read from git history), built and queried the same way.
Each (size, index) runs in its own process, so RSS is that of one build or one reader. Writes a markdown table and
outputs/index_scale/summary.json.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

OUT = Path("outputs/index_scale")
DATA = Path(os.environ.get("FACTLAB_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
OLD_COMMIT = "3c209a0"  # the last commit with the format-1 index (sources.jsonl + chunks.jsonl + embeddings.npy)
PUBLISHERS = ["https://www.who.int/x/", "https://www.reuters.com/x/", "https://example.org/x/"]  # tiers 1, 2, 3


class RandomUnitEncoder:
    """A seeded random unit vector per text: the shape and cost of real embeddings in the index, none of their sense."""

    name = "random-unit-384"
    dim = 384

    def encode(self, texts: list[str]) -> np.ndarray:
        seeds = [int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") for t in texts]
        vectors = np.stack([np.random.default_rng(seed).standard_normal(self.dim, dtype=np.float32) for seed in seeds])
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def sentences() -> list[str]:
    out = []
    csv.field_size_limit(10**8)
    with open(DATA / "scifact/hf_csv/corpus_train.csv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            out.extend(s.strip() for s in row["abstract"].strip("[]").split("'\n '"))
    for line in open(DATA / "climate_fever/dataset/climate-fever.jsonl", encoding="utf-8"):
        out.extend(e["evidence"] for e in json.loads(line)["evidences"])
    for split in ("dev", "test"):
        for line in open(DATA / f"fool_me_twice/dataset/{split}.jsonl", encoding="utf-8"):
            out.extend(e["text"] for e in json.loads(line)["retrieved_evidence"])
    return sorted({s.strip("'\" ") for s in out if len(s) > 20})


def claims(n: int) -> list[str]:
    out = [json.loads(line)["claim"] for line in open(DATA / "climate_fever/dataset/climate-fever.jsonl")]
    out += [json.loads(line)["text"] for line in open(DATA / "fool_me_twice/dataset/dev.jsonl")]
    return random.Random(7).sample(out, n)


def write_corpus(folder: Path, size: int) -> None:
    """`size` passages as jsonl files of 10k records (skipped when already written)."""
    from tqdm import tqdm

    if (folder / "done").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    pool, rng = sentences(), random.Random(size)
    for begin in tqdm(range(0, size, 10_000), desc=f"writing {size} passages", unit="file"):
        with open(folder / f"part-{begin // 10_000:04d}.jsonl", "w", encoding="utf-8") as fh:
            for i in range(begin, min(size, begin + 10_000)):
                text = " ".join(rng.sample(pool, rng.randint(2, 4)))
                record = {"source_id": f"p{i}", "title": "", "url": PUBLISHERS[i % 3] + str(i), "text": text}
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    (folder / "done").write_text("ok")


def old_retriever_class():
    """The Retriever of OLD_COMMIT, its index module loaded under another name, from git history."""
    import importlib.util
    import types

    modules = {}
    for name in ("index", "retriever"):
        source = subprocess.run(["git", "show", f"{OLD_COMMIT}:factlab/retrieval/{name}.py"], check=True,
                                capture_output=True, text=True).stdout
        source = source.replace("from factlab.retrieval.index import", "from factlab_old_index import")
        module = types.ModuleType(f"factlab_old_{name}")
        sys.modules[module.__name__] = module
        exec(compile(source, f"{OLD_COMMIT}:{name}.py", "exec"), module.__dict__)  # noqa: S102 - our own history
        modules[name] = module
    assert importlib.util  # keeps the import for readers of this helper
    return modules["retriever"].Retriever


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(args) -> None:
    """One job in this process: build, or open + query; prints one JSON line."""
    from factlab.retrieval.config import load_retrieval_config
    from factlab.retrieval.tokenizer import tokenize

    retriever_class = old_retriever_class() if args.kind == "old" else None
    if retriever_class is None:
        from factlab.retrieval.retriever import Retriever as retriever_class
    cfg = load_retrieval_config(["retrieval.index.progress=false", "retrieval.compress.enabled=false"])
    if args.kind == "old":  # settings added since OLD_COMMIT, which its SearchSettings does not take
        from omegaconf import open_dict

        with open_dict(cfg.search):
            for key in set(cfg.search) - {"rrf_k", "depth", "min_evidence", "min_relevance"}:
                del cfg.search[key]
    encoder = RandomUnitEncoder()
    if args.job == "build":
        started = time.perf_counter()
        retriever_class.build(args.corpus, args.index, cfg, encoder=encoder)
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        disk = sum(p.stat().st_size for p in Path(args.index).rglob("*") if p.is_file()) / 2**20
        print(json.dumps({"build_s": seconds, "build_peak_rss_mb": peak, "disk_mb": disk}))
        return
    started = time.perf_counter()
    retriever = retriever_class.open(args.index, cfg, encoder=encoder)
    open_s = time.perf_counter() - started
    queries = claims(args.queries)
    lexical, hybrid = [], []
    for query in queries:
        started = time.perf_counter()
        scores = retriever._bm25.get_scores(tokenize(query))
        retriever._top(scores, cfg.search.depth)
        lexical.append(time.perf_counter() - started)
        started = time.perf_counter()
        retriever.search([query], k=5)
        hybrid.append(time.perf_counter() - started)
    ms = lambda values, q: round(float(np.percentile(values, q)) * 1000, 1)  # noqa: E731
    print(json.dumps({"open_s": open_s, "rss_mb": rss_mb(), "lexical_p50_ms": ms(lexical, 50),
                      "lexical_p95_ms": ms(lexical, 95), "hybrid_p50_ms": ms(hybrid, 50),
                      "hybrid_p95_ms": ms(hybrid, 95)}))


def run_child(*argv: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", *argv], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--no-old", action="store_true", help="measure the segmented index only")
    parser.add_argument("--old-max", type=int, default=100_000, help="largest size the old index is built at")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--job", choices=["build", "query"])
    parser.add_argument("--kind", choices=["new", "old"])
    parser.add_argument("--corpus")
    parser.add_argument("--index")
    args = parser.parse_args()
    if args.child:
        return child(args)
    if not DATA.exists():
        sys.exit(f"no data at {DATA}: set FACTLAB_DATA to the folder holding scifact/, climate_fever/, fool_me_twice/")
    from tqdm import tqdm

    rows = []
    kinds = ["new"] + ([] if args.no_old else ["old"])
    jobs = [(size, kind) for size in args.sizes for kind in kinds if kind == "new" or size <= args.old_max]
    for size, kind in tqdm(jobs, desc="index_scale", unit="job"):
        corpus = OUT / f"corpus-{size}"
        write_corpus(corpus, size)
        index = OUT / f"index-{kind}-{size}"
        subprocess.run(["rm", "-rf", str(index)], check=True)
        row = {"size": size, "index": kind, **run_child("--job", "build", "--kind", kind, "--corpus", str(corpus),
                                                         "--index", str(index))}
        row.update(run_child("--job", "query", "--kind", kind, "--corpus", str(corpus), "--index", str(index),
                             "--queries", str(args.queries)))
        rows.append(row)
        tqdm.write(json.dumps(row))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "summary.json").write_text(json.dumps({"queries": args.queries, "dense": "random unit vectors, 384-d",
                                                  "rows": rows}, indent=2))
    keys = ["build_s", "disk_mb", "build_peak_rss_mb", "open_s", "rss_mb", "lexical_p50_ms", "lexical_p95_ms",
            "hybrid_p50_ms", "hybrid_p95_ms"]
    print("\n| chunks | index | " + " | ".join(keys) + " |")
    print("|---|---|" + "---|" * len(keys))
    by = {(row["size"], row["index"]): row for row in rows}
    for row in rows:
        print(f"| {row['size']:,} | {row['index']} | " + " | ".join(f"{row[key]:.1f}" for key in keys) + " |")
        old = by.get((row["size"], "old"))
        if row["index"] == "new" and old:
            print(f"| {row['size']:,} | new / old | " + " | ".join(f"{row[key] / old[key]:.2f}" if old[key] else "-"
                                                            for key in keys) + " |")


if __name__ == "__main__":
    main()
