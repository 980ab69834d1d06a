"""Check a document against a folder of sources and write verify cards.

    python verify.py input=datasets/bundled/examples/report_en_short.md sources=datasets/bundled/corpus
    python verify.py input=report.md sources=src/ business=medical lm@student=local_qwen15 output_dir=out/

Exit status: 0 when the document was checked; 1 when it could not be (every check-worthy claim failed, or more than
`max_error_share` of them), with a one-line summary; 2 for bad input or configuration (one line, no traceback).
"""

import sys

import hydra
from omegaconf import DictConfig


@hydra.main(config_path="conf", config_name="verify", version_base="1.3")
def main(cfg: DictConfig) -> float:
    from factlab.checkers.job import failure, run
    from factlab.cli import exit_on_user_error

    result = exit_on_user_error(run, cfg)
    labels = result["summary"]["labels"]
    if "results" in result:  # checker=nearline
        print(f"results: {result['results']}  documents: {result['documents']} ({result['skipped_done']} already "
              f"done)  {result['documents_per_min']} documents/min  {result['claims_per_s']} claims/s")
    else:
        print(f"cards: {result['output_dir']}/cards.json  report: {result['output_dir']}/report.html")
    print(f"claims: {result['summary']['claims']}  labels: {labels}  errors: {result['summary']['errors']}  "
          f"({result['seconds']}s)")
    reason = failure(result, cfg.max_error_share)
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        sys.exit(1)
    return float(labels["wrong"])


if __name__ == "__main__":
    main()
