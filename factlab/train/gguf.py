"""Small causal LMs for SFT: the packaged GGUF models as Hugging Face folders (converted once, cached), and trained
weights back to GGUF so llama.cpp serves them through the same local server path as the packaged models.

GGUF -> Hugging Face: transformers dequantises the GGUF (needs the `gguf` package; about a minute for the 0.5B
model) and builds the tokenizer from the GGUF's vocabulary. That tokenizer is checked to round-trip text before the
folder is cached: transformers builds a broken one for some GGUFs (the packaged Gemma 3 270M gives 1-2
character pieces and no BOS), and a model fine-tuned through a broken tokenizer learns nothing useful.

Hugging Face -> GGUF: the packaged GGUF the base came from is the template. Its metadata (architecture settings,
tokenizer, chat template) is copied unchanged, and each of its tensors is replaced by the trained weight of the same
name (mapped with gguf's own HF -> GGUF tensor-name table), as Q8_0 for matrices and F32 for the rest. So the
exported file is exactly what llama.cpp already serves, with new weights.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from factlab.models.lora import GGUFExportError, gguf_tensor_names, read_template, write_sha256

# Mixed scripts, digits, punctuation and JSON: what the SFT targets are made of.
ROUND_TRIP_SAMPLES: tuple[str, ...] = (
    "Penicillin was discovered in 1928 by Alexander Fleming.",
    "2023年中国国内生产总值增长5.2%。",
    '["China GDP growth 2023", "国内生产总值 2023年"]',
)


# English prose is ~4 characters per token in a sane vocabulary; the broken Gemma GGUF tokenizer gives ~2.
MIN_CHARS_PER_TOKEN = 3


class TokenizerRoundTripError(RuntimeError):
    """A tokenizer that does not give back the text it encoded, or splits words into single characters."""





def check_round_trip(tokenizer, samples: Sequence[str] = ROUND_TRIP_SAMPLES, source: str = "tokenizer") -> None:
    """Raise unless every sample decodes back to itself and English is not split into single characters.

    Raises:
        TokenizerRoundTripError: naming the sample, what came back, and the token count.
    """
    for sample in samples:
        ids = tokenizer(sample, add_special_tokens=False)["input_ids"]
        back = tokenizer.decode(ids, skip_special_tokens=True)
        if back != sample:
            raise TokenizerRoundTripError(f"{source}: {sample!r} decodes to {back!r}; build the tokenizer from the "
                                          "model's own tokenizer files instead of the GGUF vocabulary")
    words = ROUND_TRIP_SAMPLES[0]
    count = len(tokenizer(words, add_special_tokens=False)["input_ids"])
    if count > len(words) / MIN_CHARS_PER_TOKEN:
        raise TokenizerRoundTripError(f"{source}: {count} tokens for {len(words)} characters of English: the "
                                      "vocabulary's merges were lost (single-character tokens)")


def default_hf_cache() -> Path:
    """Where converted models live: <cache root>/models/hf (factlab.runtime.cache_root)."""
    from factlab.models.assemble import default_cache_dir

    return default_cache_dir() / "hf"


def hf_from_gguf(lm: Mapping, cache_dir: str | Path | None = None, dtype: str = "bfloat16") -> Path:
    """The Hugging Face folder of a packaged GGUF LM (conf/lm/<name>.yaml), converting it once.

    Args:
        lm: the LM config: `packages`, `filename`, `sha256` (as for `factlab.models.assemble.assemble`).
        cache_dir: where converted folders are kept; default `default_hf_cache()`.
        dtype: torch dtype name the weights are stored in.

    Raises:
        TokenizerRoundTripError: the GGUF's tokenizer does not round-trip text (nothing is cached).
    """
    from filelock import FileLock

    from factlab.models.assemble import assemble

    gguf_path = assemble(list(lm["packages"]), lm["filename"], lm["sha256"])
    stamp = (lm["sha256"] or "unpinned")[:12]
    target = Path(cache_dir or default_hf_cache()) / f"{Path(lm['filename']).stem}-{stamp}"
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / "COMPLETE").exists():
            return target
        _convert(gguf_path, target, dtype)
    return target


def _convert(gguf_path: Path, target: Path, dtype: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    check_round_trip(tokenizer, source=f"tokenizer built from {gguf_path}")
    # transformers dequantises every GGUF tensor to a dense float on load.
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32)
    if getattr(model, "hf_quantizer", None) is not None:  # nothing quantised remains; a leftover blocks saving
        model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model = model.to(getattr(torch, dtype))
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    (partial / "factlab_source.json").write_text(json.dumps({"gguf": str(gguf_path), "dtype": dtype}))
    (partial / "COMPLETE").write_text(str(gguf_path))
    shutil.rmtree(target, ignore_errors=True)
    partial.replace(target)


def export_gguf(model_dir: str | Path, template: str | Path, out_path: str | Path, name: str) -> Path:
    """Write the Hugging Face causal LM at `model_dir` as a GGUF shaped like `template` (metadata copied).

    Args:
        model_dir: merged (no adapters) Hugging Face weights of the template's architecture.
        template: the GGUF the base model was converted from.
        out_path: the GGUF to write (a `.sha256` stamp is written next to it, as `assemble` expects).
        name: the model name stored in the file's `general.name`.

    Raises:
        GGUFExportError: a template tensor without a trained weight, or shapes that differ.
    """
    import gguf
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    reader, arch, n_blocks = read_template(template)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    state = model.state_dict()
    by_gguf = {v: k for k, v in gguf_tensor_names(list(state), arch, n_blocks).items()}
    if "output.weight" not in by_gguf and "token_embd.weight" in by_gguf:  # tied embeddings
        by_gguf["output.weight"] = by_gguf["token_embd.weight"]
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    partial = out_path.with_name(out_path.name + ".partial")
    writer = gguf.GGUFWriter(str(partial), arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key in ("general.architecture", "general.file_type", "general.name"):
            continue
        sub_type = field.types[1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), field.types[0], sub_type=sub_type)
    writer.add_name(name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    for tensor in reader.tensors:
        if tensor.name not in by_gguf:
            raise GGUFExportError(f"{template}: tensor {tensor.name!r} has no trained weight in {model_dir}")
        data = state[by_gguf[tensor.name]].detach().numpy().astype(np.float32)
        expected = tuple(int(d) for d in reversed(tensor.shape.tolist()))  # GGUF lists dimensions innermost first
        if data.shape != expected:
            raise GGUFExportError(f"{tensor.name}: trained shape {data.shape} != template shape {expected}")
        if data.ndim == 2 and data.shape[-1] % 32 == 0:
            writer.add_tensor(tensor.name, gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0),
                              raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(tensor.name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file(progress=True)
    writer.close()
    partial.replace(out_path)
    write_sha256(out_path)
    return out_path
