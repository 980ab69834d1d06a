"""Do the lexical extract_claims metric and evaluate's claim matcher agree? Scores the zero-shot and a compiled
extract_claims program on the same examples with both (printed table).

    python benchmarks/extract_metric_agreement.py --compiled <program JSON or optimize.py MLflow run id> \
        [optimize.py overrides, e.g. max_examples.test=null]

- lexical metric: `factlab.programs.extract_claims.metric` without `match=` (token / CJK-bigram similarity at 0.5
  per gold paragraph, minus a small penalty for flawed claims): what optimize.py maximised until it took the
  evaluate matcher (now `metric.match.encoder=false`).
- evaluate matcher: `factlab.matching.claims.ClaimMatcher` on MiniLM cosine at `matcher.threshold` of
  conf/matcher/claims.yaml (0.8): what evaluate.py counts as a matched claim, and optimize.py's default match.

Examples are the stage's test split as optimize.py builds it. LM calls go through optimize.py's DSPy cache
(`cache_dir`), so after an optimize.py run with the same overrides every call is a cache hit.
"""

from __future__ import annotations

import argparse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compiled", required=True, help="compiled extract_claims program: JSON path or MLflow run id")
    parser.add_argument("--split", default="test", choices=["train", "val", "test"])
    parser.add_argument("overrides", nargs="*", help="optimize.py overrides (the examples must match that run's)")
    args = parser.parse_args()

    from hydra.utils import instantiate

    from factlab.config import compose_config
    from factlab.data.registry import load_dataset
    from factlab.matching.claims import usable_encode
    from factlab.metrics import f1
    from factlab.optimize.examples import stage_splits
    from factlab.programs.extract_claims import _score
    from factlab.runtime import configure_lm_cache, prepare_offline_env
    from factlab.stages.build import build_program
    from factlab.tracking.refs import resolve_compiled

    prepare_offline_env()
    cfg = compose_config("optimize", ["stage=extract_claims", *args.overrides])
    configure_lm_cache(cfg.cache_dir)
    examples = stage_splits(load_dataset(cfg.dataset).cases, "extract_claims", cfg.splits, cfg.seed,
                            cfg.max_examples)[args.split]
    eval_cfg = compose_config("evaluate", [])
    matcher = instantiate(eval_cfg.matcher, encode=usable_encode(instantiate(eval_cfg.retrieval.encoder)))
    student = instantiate(cfg.student)
    compiled = resolve_compiled(args.compiled, "extract_claims", cfg.tracking.tracking_uri)
    programs = {"zero-shot": build_program(cfg.stage), "compiled": build_program(cfg.stage, compiled=str(compiled))}
    print(f"{len(examples)} {args.split} examples, {sum(len(ex.claims) for ex in examples)} gold claims; "
          f"evaluate matcher threshold {matcher.active_threshold}")
    print("| program | lexical metric | evaluate-matcher F1 | predicted claims | matched (evaluate matcher) |")
    print("|---|---|---|---|---|")
    with student.context():
        for name, program in programs.items():
            stage, matched_f1, predicted, matched = [], [], 0, 0
            for example in examples:
                pred = program(paragraph=example.paragraph, context=example.context)
                stage.append(_score(example, pred)[0])
                details = _score(example, pred, matcher.match)[1]  # F1 without the flawed-claim penalty
                matched_f1.append(f1(details["precision"], details["recall"]))
                predicted += len(details["matched"]) + len(details["extra"])
                matched += len(details["matched"])
            print(f"| {name} | {sum(stage) / len(stage):.3f} | {sum(matched_f1) / len(matched_f1):.3f} | {predicted} "
                  f"| {matched} |")
    usage = student.usage()
    print(f"LM calls {usage['calls']}, cache hits {usage['cache_hits']}")


if __name__ == "__main__":
    main()
