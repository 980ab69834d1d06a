# python benchmarks/newuser_reports.py [--extra key=value ...]
"""The issue's new-user test, on reports nobody here wrote: `python verify.py input=<report> sources=<corpus>` with the
shipped defaults, as a new user would run it, on datasets/layers/newuser/ (8 short reports by an independent writer
who saw none of the code: 5 with three planted problems each, a quantity given in two units of one dimension, an
abbreviation defined twice with two meanings, a partial improvement reported as a cure; 3 clean with near misses).

Per planted problem: found = a logic or consistency finding of a kind that answers it on the paragraph that holds the
answer's span (unit -> unit_mismatch / unit_format; abbreviation -> abbreviation; cure -> overgeneralisation),
any finding there = flagged. False alarms = findings in the clean reports.
Writes outputs/benchmarks/newuser/results.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from independent_logic import save  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "datasets" / "layers" / "newuser"
OUT = Path("outputs/benchmarks/newuser")
ANSWERS = {"unit": {"unit_mismatch", "unit_format"}, "abbreviation": {"abbreviation"},
           "cure": {"overgeneralisation"}}


def paragraph_of(span: str, paragraphs: list[dict]) -> str | None:
    """The id of the card paragraph whose text holds `span` (the report's paragraphs are cut by the checker, so the
    answer's 1-based index is not the card's)."""
    return next((p["paragraph_id"] for p in paragraphs if span in p.get("text", "")), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--sources", default=str(ROOT / "datasets" / "bundled" / "corpus"))
    parser.add_argument("--extra", nargs="*", default=[], help="more verify.py overrides (default: none)")
    args = parser.parse_args()
    answers = [json.loads(line) for line in (GOLD / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    rows, results = [], {"reports": {}, "overrides": args.extra}
    for answer in answers:
        out = OUT / Path(answer["file"]).stem
        command = [sys.executable, str(ROOT / "verify.py"), f"input={GOLD / answer['file']}",
                   f"sources={args.sources}", f"output_dir={out}", "progress=false", *args.extra]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        if done.returncode:
            raise SystemExit(f"verify.py failed on {answer['file']}:\n{done.stderr[-2000:]}")
        cards = json.loads((out / "cards.json").read_text(encoding="utf-8"))
        findings = [f for f in cards["findings"] if f["layer"] in ("logic", "consistency")]
        scored = []
        for gold in answer["findings"]:
            where = paragraph_of(gold["span"], cards["paragraphs"])
            there = [f["kind"] for f in findings if f["paragraph_id"] == where]
            scored.append({**gold, "card_paragraph": where, "raised": there,
                           "found": bool(set(there) & ANSWERS[gold["kind"]])})
        rows.append((answer, scored, findings))
        results["reports"][answer["file"]] = {"lang": answer["lang"], "planted": scored, "seconds":
                                              round(time.perf_counter() - started, 1),
                                              "findings": [{k: f[k] for k in ("paragraph_id", "layer", "kind",
                                                                                "keyword", "message")}
                                                           for f in findings]}
    print("\n| report | lang | planted | unit | abbreviation | cure | layer findings | false alarms (clean) |")
    print("|---|---|---|---|---|---|---|---|")
    totals = {kind: [0, 0] for kind in ANSWERS}
    false_alarms = 0
    for answer, scored, findings in rows:
        cells = {}
        for s in scored:
            totals[s["kind"]][0] += s["found"]
            totals[s["kind"]][1] += 1
            cells[s["kind"]] = "yes" if s["found"] else ("flagged" if s["raised"] else "no")
        clean = not answer["findings"]
        false_alarms += len(findings) if clean else 0
        print(f"| {answer['file']} | {answer['lang']} | {len(scored)} | {cells.get('unit', '-')} | "
              f"{cells.get('abbreviation', '-')} | {cells.get('cure', '-')} | {len(findings)} | "
              f"{len(findings) if clean else '-'} |")
    results["found"] = {kind: {"found": found, "n": n} for kind, (found, n) in totals.items()}
    results["false_alarms_clean"] = false_alarms
    print("\nfound: " + ", ".join(f"{kind} {found}/{n}" for kind, (found, n) in totals.items())
          + f"; findings in the clean reports: {false_alarms}")
    save(OUT, results)


if __name__ == "__main__":
    main()
