"""Does a reflection LM write an instruction when GEPA asks it to? One fixed query_rewrite reflective dataset (three
examples with the metric's feedback, the shape GEPA builds), sent with each FencedProposer prompt (`small`, `gepa`),
the raw answer and the extracted instruction printed. Run it before a sweep with a new reflector.

    python scripts/probe_reflector.py                          # the local 1.5B (conf/lm/local_qwen15)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lm", default="local_qwen15", help="a conf/lm option")
    args = parser.parse_args()
    from hydra.utils import instantiate

    from factlab.config import compose_config
    from factlab.optimize.proposer import FencedProposer, proposal_problem
    from factlab.programs.query_rewrite import RewriteQueries

    handle = instantiate(compose_config("optimize", ["stage=query_rewrite", f"lm@reflector={args.lm}"]).reflector)
    current = RewriteQueries.__doc__.strip()
    for prompt in ("small", "gepa"):
        proposer = FencedProposer(max_tokens=512, prompt=prompt)
        with handle.context():
            out = proposer({"rewrite": current}, {"rewrite": EXAMPLES}, ["rewrite"])
        problem = proposal_problem(out["rewrite"], current, min_chars=40, max_chars=4000, max_unpunctuated_tail=60,
                                   template_markers=["Please provide the"], min_share=0.3)
        print(f"=== prompt={prompt}: {'REJECTED: ' + problem if problem else 'accepted'}")
        print(proposer.raw_outputs[-1].strip()[:800])


if __name__ == "__main__":
    main()
