"""Serving cost of stage LoRA adapters (issue 46): the packaged 0.5B student served by llama.cpp with 0, 1 and 3
adapters, side by side in one run: resident memory of the server processes, prompt and decode tokens/s, and wall
seconds per request on the same paragraphs (printed table).

    python benchmarks/lora_serving.py --adapter factlab:extract-claims-q05-v1      # the shipped adapter
    python benchmarks/lora_serving.py --adapter outputs/train/sft_extract_claims/<digest>/adapter --requests 6

llama-cpp-python's server (0.3.x) applies one adapter set, given at start (`--lora_path`), to every request; switching
adapters per request exists only in llama.cpp's low-level API. So "3 adapters" is three servers, one per adapter (what
factlab.pipeline.meter.StageMeter starts for three stages with their own `lora`), and the table gives the memory
of all of them together. The second and third adapters are the first one's tensors negated: another file (another
sha256, another server) of the same shape and so the same cost; their answers mean nothing. Requests go one at a
time, each paragraph once per server (no DSPy cache; prompt cache off so every prompt token is evaluated).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "outputs" / "benchmarks" / "lora_serving"


def negated_copy(source: Path, out: Path, sign: float) -> Path:
    """A PEFT adapter folder like `source` with lora_B scaled by `sign` (same shapes, another file)."""
    import shutil

    from safetensors.numpy import load_file, save_file

    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "adapter_config.json", out / "adapter_config.json")
    weights = load_file(str(source / "adapter_model.safetensors"))
    tensors = {k: (v * sign if "lora_B" in k else v) for k, v in weights.items()}
    save_file(tensors, str(out / "adapter_model.safetensors"))
    return out


def paragraphs(count: int) -> list[str]:
    """The first `count` paragraphs of the bundled test cases (en and zh alternating), committed data."""
    from factlab.data.cases import load_cases

    cases = load_cases(sorted((ROOT / "datasets" / "bundled").glob("*.jsonl")))
    by_lang = {lang: [c["text"][:1200] for c in cases if c["lang"] == lang] for lang in ("en", "zh")}
    return [by_lang[("en", "zh")[i % 2]][i // 2] for i in range(count)]


def measure(lm_cfg: dict, adapters: list[str], texts: list[str], max_tokens: int) -> dict:
    import psutil
    from openai import OpenAI

    from factlab.models.assemble import assemble
    from factlab.models.lora import lora_gguf
    from factlab.models.server import ensure_server, stop_server

    base = assemble(lm_cfg["packages"], lm_cfg["filename"], lm_cfg["sha256"])
    servers = []
    started = time.perf_counter()
    for spec in adapters or [None]:
        lora = lora_gguf(spec, base) if spec else None
        alias = lm_cfg["alias"] + (f"+{lora.stem}" if lora else "")
        servers.append(ensure_server(base, alias, n_ctx=lm_cfg["n_ctx"], reuse_running=False, prompt_cache_mb=0,
                                     lora_path=lora))
    start_s = time.perf_counter() - started
    prompt_tokens = completion_tokens = 0
    seconds = []
    try:
        for server in servers:
            client = OpenAI(base_url=server.api_base, api_key="local")
            for text in texts:
                t0 = time.perf_counter()
                reply = client.chat.completions.create(
                    model=server.alias, temperature=0.0, max_tokens=max_tokens,
                    messages=[{"role": "user", "content": "List the atomic factual claims of this paragraph as a "
                                                          f"JSON list of strings.\n\n{text}"}])
                seconds.append(time.perf_counter() - t0)
                prompt_tokens += reply.usage.prompt_tokens
                completion_tokens += reply.usage.completion_tokens
        rss = sum(psutil.Process(s.pid).memory_info().rss for s in servers) / 2**20
    finally:
        for server in servers:
            stop_server(server)
    total = sum(seconds)
    return {"servers": len(servers), "rss_mb": rss, "start_s": start_s, "requests": len(seconds),
            "s_per_request": total / len(seconds), "tokens_per_s": (prompt_tokens + completion_tokens) / total,
            "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}


def main() -> None:
    from omegaconf import OmegaConf

    from factlab.config import CONF_DIR
    from factlab.metrics import markdown_table
    from factlab.models.lora import lora_source

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", required=True, help="factlab:<name>, a PEFT adapter folder")
    parser.add_argument("--lm", default="local_qwen05")
    parser.add_argument("--requests", type=int, default=6, help="paragraphs per server")
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args()
    lm_cfg = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "lm" / f"{args.lm}.yaml"))
    first = lora_source(args.adapter).parent
    others = [str(negated_copy(first, OUT / f"negated{i}", -1.0 if i == 1 else -0.5)) for i in (1, 2)]
    texts = paragraphs(args.requests)
    rows = []
    for name, adapters in (("0 adapters (1 server)", []), ("1 adapter (1 server)", [args.adapter]),
                           ("3 adapters (3 servers)", [args.adapter, *others])):
        result = measure(lm_cfg, adapters, texts, args.max_tokens)
        print(name, result, flush=True)
        rows.append([name, result["servers"], f"{result['rss_mb']:.0f}", f"{result['start_s']:.1f}",
                     result["requests"], f"{result['s_per_request']:.2f}", f"{result['tokens_per_s']:.1f}",
                     f"{result['prompt_tokens'] / result['requests']:.0f} + "
                     f"{result['completion_tokens'] / result['requests']:.0f}"])
    print(markdown_table(["setting", "servers", "RSS MB (all servers)", "start s", "requests", "s / request",
                          "tokens / s (prompt + decode)", "tokens per request (prompt + decode)"], rows))


if __name__ == "__main__":
    main()
