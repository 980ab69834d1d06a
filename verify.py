"""Check a document against a folder of sources and write verify cards.

    python verify.py input=datasets/bundled/examples/report_en_short.md sources=datasets/bundled/corpus
    python verify.py input=report.md sources=src/ business=medical lm@student=local_qwen15 output_dir=out/
"""

import hydra
from omegaconf import DictConfig


@hydra.main(config_path="conf", config_name="verify", version_base="1.3")
def main(cfg: DictConfig) -> float:
    from factlab.pipeline.job import run

    result = run(cfg)
    labels = result["summary"]["labels"]
    print(f"cards: {result['output_dir']}/cards.json  report: {result['output_dir']}/report.html")
    print(f"claims: {result['summary']['claims']}  labels: {labels}  errors: {result['summary']['errors']}  "
          f"({result['seconds']}s)")
    return float(labels["wrong"])


if __name__ == "__main__":
    main()
