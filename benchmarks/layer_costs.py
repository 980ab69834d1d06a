"""What each layer costs on the long-report benchmark (the ~6,000-character Chinese report against the bundled corpus,
as benchmarks/checkers.py): the fast checker's fact layer (one warm run), then each deterministic layer timed on that
run's own paragraphs and claims (median of --repeat calls, per document), and optionally the logic layer's LM stage
(one call per paragraph, on a local LM). Printed table, side by side in one process.

    python benchmarks/layer_costs.py
    python benchmarks/layer_costs.py --logic-lm local_qwen05
    python benchmarks/layer_costs.py --models        # + the logic model paths and the checker with every layer on
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(fn, repeat: int) -> float:
    """Median seconds of `fn()` over `repeat` calls."""
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default=str(ROOT / "datasets/bundled/examples/report_zh_long.md"))
    parser.add_argument("--sources", default=str(ROOT / "datasets/bundled/corpus"))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--logic-lm", default=None, help="also time the logic stage on this conf/lm option")
    parser.add_argument("--models", action="store_true",
                        help="also time the logic layer's model paths (causal strength with the design and the model "
                             "premise, scope) forced on in every language, and the whole fast checker with every layer "
                             "on (logic=rules_models, every consistency check)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    from hydra.utils import instantiate

    from factlab.cards.build import common_cause_findings
    from factlab.checkers.build import build_checker
    from factlab.config import compose_config
    from factlab.rules.business import JudgedEvidence
    from factlab.rules.document import KINDS, consistency_findings
    from factlab.rules.logic import LogicRules
    from factlab.runtime import prepare_offline_env

    prepare_offline_env()
    cfg = compose_config("verify", [f"input={args.input}", f"sources={args.sources}", "checker=fast", "progress=false",
                                    "claim_cache.enabled=false", "routing=default"])
    checker = build_checker(cfg)
    text = Path(args.input).read_text(encoding="utf-8")
    checker.run(text, name=args.input)  # cold
    started = time.perf_counter()
    trace = checker.run(text, name=args.input)  # warm: the run every layer is timed against
    fact_s = time.perf_counter() - started
    paragraphs = [p["text"] for p in trace.paragraphs]
    claims = [t for unit in trace.units for t in unit.real_claims() if t.evidence]
    sources = checker.parts.sources
    timeliness, verticals, rules = instantiate(cfg.timeliness), instantiate(cfg.verticals), LogicRules()
    judged = [[JudgedEvidence(e, j) for e, j in zip(t.evidence, t.judgments, strict=False)] for t in claims]
    rows = [
        ("facts (fast checker, warm run, incl. the layers below)", len(claims), fact_s),
        ("routing (patterns, per paragraph)", len(paragraphs),
         timed(lambda: [checker.parts.layers.route(p, checker.meter, checker.parts.business) for p in paragraphs],
               args.repeat)),
        ("consistency (document checks)", len(paragraphs),
         timed(lambda: consistency_findings([(f"p{i}", p) for i, p in enumerate(paragraphs)], KINDS), args.repeat)),
        ("logic (rules)", len(paragraphs), timed(lambda: rules.check(paragraphs), args.repeat)),
        ("timeliness (per claim)", len(claims),
         timed(lambda: [timeliness.apply(t.text, j, sources) for t, j in zip(claims, judged, strict=True)],
               args.repeat)),
        ("vertical checkers (per claim)", len(claims),
         timed(lambda: [verticals.check(t.text, sources) for t in claims], args.repeat)),
        ("common-cause lineage", len(trace.report.paragraphs),
         timed(lambda: common_cause_findings(trace.report.paragraphs), args.repeat)),
    ]
    if args.models:
        from factlab.checkers.scope import ScopeShift
        from factlab.checkers.strength import StrengthOverclaim, head_from

        both = ("en", "zh")
        strength = head_from("factlab:causal-strength-e5s-v1")
        paths = {"causal strength, design premise (default path)": StrengthOverclaim(strength, rules, languages=both),
                 "causal strength, model premise": StrengthOverclaim(strength, rules, languages=both, premise="model"),
                 "scope (opt-in)": ScopeShift("factlab:scope-e5s-v1", rules, languages=both)}
        for name, path in paths.items():
            path.check(paragraphs, 0)  # loads the head and e5 outside the timing
            rows.append((f"logic model path: {name}, forced on in zh and en", len(paragraphs),
                         timed(lambda path=path: [path.check(paragraphs, i) for i in range(len(paragraphs))],
                               max(1, args.repeat // 10))))
        every = compose_config("verify", [f"input={args.input}", f"sources={args.sources}", "checker=fast",
                                          "progress=false", "claim_cache.enabled=false", "routing=all",
                                          "logic=rules_models", f"document_checks=[{','.join(KINDS)}]"])
        every_checker = build_checker(every)
        every_checker.run(text, name=args.input)  # cold
        started = time.perf_counter()
        every_trace = every_checker.run(text, name=args.input)
        rows.append(("facts with every layer on (routing=all, logic=rules_models, every consistency check; warm)",
                     len(claims), time.perf_counter() - started))
        print("findings with every layer on:", sorted(f"{f.layer}/{f.kind}" for f in every_trace.report.findings))
    if args.logic_lm:
        from factlab.checkers.logic import LogicLayer
        from factlab.stages.build import build_program

        stage_cfg = compose_config("run_stage", ["stage=logic", f"lm@student={args.logic_lm}"])
        handle = instantiate(stage_cfg.student)
        layer = LogicLayer(rules, build_program(stage_cfg.stage))
        started = time.perf_counter()
        with handle.context():
            for index in range(len(paragraphs)):
                try:
                    layer.check(paragraphs, index)
                except Exception as exc:  # counted in the time; named
                    print(f"logic stage failed on paragraph {index + 1}: {type(exc).__name__}")
        rows.append((f"logic (LM stage, {args.logic_lm}, one call per paragraph)", len(paragraphs),
                     time.perf_counter() - started))
    findings = {}
    for finding in trace.report.findings:
        findings[f"{finding.layer}/{finding.kind}"] = findings.get(f"{finding.layer}/{finding.kind}", 0) + 1
    print(f"\n{args.input}: {len(text)} characters, {len(paragraphs)} paragraphs, {len(claims)} claims with evidence")
    print("| layer | items | per document | share of the fact layer |")
    print("|---|---|---|---|")
    for name, items, seconds in rows:
        print(f"| {name} | {items} | {seconds * 1000:.1f} ms | {seconds / fact_s:.2%} |")
    print("findings on this report (routing=default):", findings)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "findings": findings}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
