"""Does a reflection LM write an instruction when GEPA asks it to? One fixed reflective dataset per stage (three
examples with the metric's feedback, the shape GEPA builds), sent with each FencedProposer prompt (`small`, `gepa`)
and with RulesProposer's (`rules`, optimizer=gepa_rules); the raw answer and the guard's verdict printed. Run it
before a sweep with a new reflector.

    python scripts/probe_reflector.py                          # the local 1.5B (conf/lm/local_qwen15), query_rewrite
    python scripts/probe_reflector.py --stage judge --prompt rules
    python scripts/probe_reflector.py --lm openai_compatible   # any conf/lm option
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

EXAMPLES = [
    {"Inputs": {"claim": "Vitamin D supplementation reduces the risk of respiratory infections in children."},
     "Generated Outputs": {"queries": ["Vitamin D supplementation reduces the risk of respiratory infections in "
                                       "children.", "vitamin D children"]},
     "Feedback": "Evidence recall 0.00 with 2 queries. Missed doc-1#p1-c1: 'Vitamin D supplementation to prevent "
                 "acute respiratory tract infections: systematic review and meta-analysis ...'; a query should use "
                 "its key terms. Do not copy the claim verbatim as a query; name entities and the fact to check."},
    {"Inputs": {"claim": "The 2019 floods in Mozambique displaced over 400,000 people."},
     "Generated Outputs": {"queries": ["Mozambique floods"]},
     "Feedback": "Evidence recall 0.50 with 1 queries ['Mozambique floods']. Retrieved: doc-2#p1-c1. Missed "
                 "doc-2#p1-c3: 'Cyclone Idai made landfall near Beira in March 2019, displacing more than 400,000 "
                 "people ...'; a query should use its key terms."},
    {"Inputs": {"claim": "Global mean sea level rose about 20 cm between 1900 and 2018."},
     "Generated Outputs": {"queries": ["sea level rise 20 cm", "global mean sea level 1900 2018"]},
     "Feedback": "Evidence recall 1.00 with 2 queries. Retrieved: doc-3#p1-c2."},
]

JUDGE_EXAMPLES = [
    {"Inputs": {"claim": "Metformin lowered HbA1c by 1.1 percentage points over 24 weeks.",
                "evidence": "After 24 weeks, HbA1c fell by 1.1 percentage points in the metformin arm."},
     "Generated Outputs": {"relation": "partial_support"},
     "Feedback": "Expected relation support for claim 'Metformin lowered HbA1c by 1.1 percentage points over 24 "
                 "weeks.', got partial_support. Decisive evidence (support): 'After 24 weeks, HbA1c fell by 1.1 "
                 "percentage points in the metformin arm.'. Compare its numbers, dates, names and scope with the "
                 "claim."},
    {"Inputs": {"claim": "该疫苗在成人中的保护率为95%。",
                "evidence": "三期试验显示，该疫苗在成人中的保护率为67%。"},
     "Generated Outputs": {"relation": "partial_support"},
     "Feedback": "Expected relation contradict for claim '该疫苗在成人中的保护率为95%。', got partial_support. "
                 "Decisive evidence (contradict): '三期试验显示，该疫苗在成人中的保护率为67%。'. Compare its numbers, "
                 "dates, names and scope with the claim."},
    {"Inputs": {"claim": "The bridge opened in 1932.", "evidence": "The bridge opened to traffic in 1932."},
     "Generated Outputs": {"relation": "support"},
     "Feedback": "Correct relation support."},
]

STAGES = {"query_rewrite": ("rewrite", EXAMPLES), "judge": ("judge_snippet", JUDGE_EXAMPLES)}


def _instruction(stage: str) -> str:
    if stage == "judge":
        from factlab.programs.judge import JudgeEvidence
        return JudgeEvidence.__doc__.strip()
    from factlab.programs.query_rewrite import RewriteQueries
    return RewriteQueries.__doc__.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lm", default="local_qwen15", help="a conf/lm option")
    parser.add_argument("--stage", default="query_rewrite", choices=sorted(STAGES))
    parser.add_argument("--prompt", action="append", choices=["small", "gepa", "rules"],
                        help="the prompts to send (repeatable; default: small and gepa)")
    args = parser.parse_args()
    from hydra.utils import instantiate

    from factlab.config import compose_config
    from factlab.optimize.proposer import FencedProposer, RulesProposer, proposal_problem

    handle = instantiate(compose_config("optimize", [f"stage={args.stage}", f"lm@reflector={args.lm}"]).reflector)
    component, examples = STAGES[args.stage]
    current = _instruction(args.stage)
    for prompt in args.prompt or ["small", "gepa"]:
        proposer = RulesProposer() if prompt == "rules" else FencedProposer(max_tokens=512, prompt=prompt)
        with handle.context():
            out = proposer({component: current}, {component: examples}, [component])
        problem = proposal_problem(out[component], current, min_chars=40, max_chars=4000, max_unpunctuated_tail=60,
                                   template_markers=["Please provide the"], min_share=0.3)
        print(f"=== prompt={prompt}: {'REJECTED: ' + problem if problem else 'accepted'}")
        print(proposer.raw_outputs[-1].strip()[:800])


if __name__ == "__main__":
    main()
