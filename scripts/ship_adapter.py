"""Copy a trained PEFT LoRA adapter into the repo as a shipped adapter (factlab/models/shipped/<name>/): its weights
in float16 (half the bytes; llama.cpp computes the LoRA product in float32 either way and the GGUF export writes
float16), its adapter_config.json, and adapter.json with the weights' sha256 and the base GGUF it was trained on,
which `factlab.models.lora.lora_source` checks before serving it. The MODEL_CARD.md is written by hand beside it.

    python scripts/ship_adapter.py outputs/train/sft_extract_claims/<digest>/adapter extract-claims-q05-v1 \
        --base-lm local_qwen05
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    import numpy as np
    from omegaconf import OmegaConf
    from safetensors.numpy import load_file, save_file

    from factlab.config import CONF_DIR
    from factlab.models.assemble import sha256_file
    from factlab.models.lora import SHIPPED_DIR

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("adapter", type=Path, help="a PEFT adapter folder (adapter_config.json + safetensors)")
    parser.add_argument("name")
    parser.add_argument("--base-lm", default="local_qwen05", help="the conf/lm option it was trained on")
    args = parser.parse_args()
    lm = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "lm" / f"{args.base_lm}.yaml"))
    out = SHIPPED_DIR / args.name
    out.mkdir(parents=True, exist_ok=True)
    weights = {k: v.astype(np.float16) for k, v in load_file(str(args.adapter / "adapter_model.safetensors")).items()}
    save_file(weights, str(out / "adapter_model.safetensors"))
    config = json.loads((args.adapter / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = lm["filename"]  # not this machine's conversion folder
    (out / "adapter_config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    meta = {"adapter_sha256": sha256_file(out / "adapter_model.safetensors"), "base_lm": args.base_lm,
            "base_gguf": lm["filename"], "base_sha256": lm["sha256"], "r": config["r"],
            "lora_alpha": config["lora_alpha"], "target_modules": sorted(config["target_modules"])}
    (out / "adapter.json").write_text(json.dumps(meta, indent=2) + "\n")
    size = sum(p.stat().st_size for p in out.iterdir()) / 2**20
    print(f"shipped {out} ({size:.2f} MB); write {out / 'MODEL_CARD.md'} (data, command, metrics, wall time)")


if __name__ == "__main__":
    main()
