# python scripts/prepare_data.py dataset=climate_fever [max_cases=500] [seed=1]
"""Prepare a dataset: seeded, stratified, leak-free train/val/test case files plus manifest.json.

The work is factlab.data.prepare.run; the config is conf/prepare_data.yaml.
"""

import hydra
from omegaconf import DictConfig


@hydra.main(config_path="../conf", config_name="prepare_data", version_base="1.3")
def main(cfg: DictConfig) -> int:
    from factlab.data.prepare import run

    manifest = run(cfg)
    cases = {split: counts["total"]["cases"] for split, counts in manifest["counts"].items()}
    print(f"{manifest['dataset']}: {cases} -> {manifest['output_dir']} (content {manifest['content_hash'][:12]})")
    return sum(cases.values())


if __name__ == "__main__":
    main()
