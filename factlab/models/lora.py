"""LoRA adapters for the local LMs: a PEFT LoRA written as a llama.cpp GGUF adapter, and the adapter a stage's LM
config names (`lora:` in conf/lm/<name>.yaml) resolved to that file.

Why adapters and not models: a fine-tuned 0.5B merged back into a GGUF is ~0.5 GB and cannot ship in git; its LoRA at
r = 8 on attention is ~2 MB. The shipped form is the PEFT adapter (safetensors + adapter_config.json, in
factlab/models/shipped/<name>/ with a model card); the GGUF llama.cpp reads is written from it once, next to the base
model in the model cache, keyed by the adapter's sha256, so an edited adapter is never served stale.

The GGUF adapter is what llama.cpp's own `convert_lora_to_gguf.py` writes (that script is not in the llama-cpp-python
wheel; the `gguf` package it builds on is): `general.type` adapter, `adapter.type` lora, `adapter.lora.alpha`, and per
adapted matrix two tensors named after the base tensor by gguf's own HF -> GGUF name table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from factlab.models.assemble import sha256_file

SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"
SHIPPED_PREFIX = "factlab:"

# Architectures whose GGUF tensors are the Hugging Face ones renamed (llama.cpp's converter permutes no q/k rows).
UNPERMUTED_ARCHS: tuple[str, ...] = ("qwen2", "qwen3")


class GGUFExportError(RuntimeError):
    """Trained weights that do not fit the template GGUF's tensors."""


def gguf_tensor_names(state_dict_names: Sequence[str], arch: str, n_blocks: int) -> dict[str, str]:
    """HF parameter name -> GGUF tensor name, by gguf's own mapping table (what llama.cpp's converter uses).

    >>> gguf_tensor_names(["model.layers.0.self_attn.q_proj.weight", "lm_head.weight"], "qwen2", 1)
    {'model.layers.0.self_attn.q_proj.weight': 'blk.0.attn_q.weight', 'lm_head.weight': 'output.weight'}
    """
    import gguf

    archs = {name: member for member, name in gguf.MODEL_ARCH_NAMES.items()}
    if arch not in archs:
        raise GGUFExportError(f"GGUF architecture {arch!r} is unknown to the installed gguf package")
    table = gguf.get_tensor_name_map(archs[arch], n_blocks)
    out = {}
    for name in state_dict_names:
        mapped = table.get_name(name, try_suffixes=(".weight", ".bias"))
        if mapped is None:
            raise GGUFExportError(f"no GGUF tensor name for parameter {name!r} of a {arch} model")
        out[name] = mapped
    return out


def read_template(template: str | Path):
    """(GGUFReader, architecture, block count) of the base GGUF an export writes for.

    Raises:
        GGUFExportError: an architecture whose q/k rows llama.cpp's converter permutes (this exporter does not).
    """
    import gguf

    reader = gguf.GGUFReader(str(template))
    arch = reader.fields["general.architecture"].contents()
    if arch not in UNPERMUTED_ARCHS:
        raise GGUFExportError(f"{template}: exporting {arch!r} is not supported (llama.cpp permutes its q/k weights "
                              f"and this exporter does not); supported: {', '.join(UNPERMUTED_ARCHS)}")
    return reader, arch, reader.fields[f"{arch}.block_count"].contents()


def lora_gguf_alpha(config: Mapping) -> float:
    """The `adapter.lora.alpha` that makes llama.cpp scale a PEFT LoRA as PEFT does.

    llama.cpp multiplies B·A by alpha / r; PEFT by lora_alpha / r, or lora_alpha / sqrt(r) with rsLoRA.

    >>> lora_gguf_alpha({"r": 16, "lora_alpha": 32}), lora_gguf_alpha({"r": 16, "lora_alpha": 32, "use_rslora": True})
    (32.0, 128.0)
    """
    for key in ("rank_pattern", "alpha_pattern"):
        if config.get(key):
            raise GGUFExportError(f"LoRA config sets {key}: one rank and alpha per adapter is all llama.cpp reads")
    if config.get("use_dora"):
        raise GGUFExportError("a DoRA adapter has magnitude vectors llama.cpp's LoRA loader does not read")
    r, alpha = int(config["r"]), float(config["lora_alpha"])
    return alpha * r**0.5 if config.get("use_rslora") else alpha


def export_lora_gguf(adapter_dir: str | Path, template: str | Path, out_path: str | Path, name: str,
                     dtype: str = "float16") -> Path:
    """Write a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors) as a llama.cpp GGUF adapter.

    The file is what llama.cpp's own `convert_lora_to_gguf.py` writes: `general.type` adapter, `adapter.type` lora,
    `adapter.lora.alpha`, the template's architecture, and per adapted matrix two F32 tensors named after the base
    tensor (`blk.0.attn_q.weight.lora_a` = A, shape (r, in); `.lora_b` = B, shape (out, r)), found with gguf's own
    HF -> GGUF name table. llama.cpp loads it next to the base GGUF (`--lora`, llama-cpp-python `lora_path`) and checks
    every shape against the base; 2.1 MB in float16 at r = 8 on the 0.5B's attention, so it ships in git where the
    merged model (~0.5 GB) cannot. Checked against PEFT's own forward pass in tests/train/test_lora_gguf.py.

    Args:
        adapter_dir: a PEFT adapter folder (`save_pretrained` of a LoRA PeftModel).
        template: the base model's GGUF (the one the adapter's base was converted from).
        out_path: the adapter GGUF to write (a `.sha256` stamp is written next to it).
        name: stored in `general.name`.
        dtype: "float16" (half the size; llama.cpp computes the LoRA product in float32 either way) or "float32".

    Raises:
        GGUFExportError: a LoRA feature llama.cpp does not read (DoRA, per-layer ranks), a weight with no GGUF name,
            or a shape that does not fit the template's tensor.
    """
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    if dtype not in ("float16", "float32"):
        raise GGUFExportError(f"dtype {dtype!r}: expected float16 or float32")
    adapter_dir, out_path = Path(adapter_dir), Path(out_path)
    config = json.loads((adapter_dir / "adapter_config.json").read_text(encoding="utf-8"))
    alpha = lora_gguf_alpha(config)
    weights = load_file(str(adapter_dir / "adapter_model.safetensors"))
    reader, arch, n_blocks = read_template(template)
    shapes = {t.name: tuple(int(d) for d in reversed(t.shape.tolist())) for t in reader.tensors}
    pairs: dict[str, dict[str, np.ndarray]] = {}
    for key, value in weights.items():
        for part in ("lora_A", "lora_B"):
            marker = f".{part}.weight"
            if key.endswith(marker):
                base = key.removeprefix("base_model.model.").removesuffix(marker) + ".weight"
                pairs.setdefault(base, {})[part] = value.astype(np.float32)
                break
        else:
            raise GGUFExportError(f"{adapter_dir}: weight {key!r} is not a LoRA A or B matrix (modules_to_save and "
                                  "trained biases do not fit a llama.cpp LoRA)")
    if not pairs:
        raise GGUFExportError(f"{adapter_dir}: no LoRA weights in adapter_model.safetensors")
    names = gguf_tensor_names(sorted(pairs), arch, n_blocks)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    partial = out_path.with_name(out_path.name + ".partial")
    writer = gguf.GGUFWriter(str(partial), arch)
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", alpha)
    writer.add_name(name)
    for base, parts in sorted(pairs.items(), key=lambda item: names[item[0]]):
        target = names[base]
        if set(parts) != {"lora_A", "lora_B"}:
            raise GGUFExportError(f"{adapter_dir}: {base} has {sorted(parts)}, not both LoRA matrices")
        a, b = parts["lora_A"], parts["lora_B"]
        if target not in shapes:
            raise GGUFExportError(f"{template}: no tensor {target!r} for the adapted {base}")
        out_dim, in_dim = shapes[target]
        if a.shape[1] != in_dim or b.shape[0] != out_dim or a.shape[0] != b.shape[1]:
            raise GGUFExportError(f"{target}: LoRA A {a.shape} / B {b.shape} do not fit the base's ({out_dim}, "
                                  f"{in_dim})")
        writer.add_tensor(f"{target}.lora_a", np.ascontiguousarray(a, dtype=dtype))
        writer.add_tensor(f"{target}.lora_b", np.ascontiguousarray(b, dtype=dtype))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.replace(out_path)
    write_sha256(out_path)
    return out_path


def write_sha256(path: Path) -> None:
    """Write `<path>.sha256` (the stamp `factlab.models.assemble` checks)."""
    path.with_suffix(path.suffix + ".sha256").write_text(sha256_file(path))


def lora_source(spec: str | Path) -> Path:
    """The file that holds the adapter `spec` names: a shipped or PEFT folder's adapter_model.safetensors, or the
    .gguf itself (what decides the adapter's answers: its sha256 keys the export cache and a stage's identity).

    Raises:
        FileNotFoundError: no such shipped adapter, folder or file (the message says which was looked for).
        GGUFExportError: a shipped adapter whose weights do not match the sha256 in its adapter.json.
    """
    text = str(spec)
    if text.startswith(SHIPPED_PREFIX):
        folder = SHIPPED_DIR / text.removeprefix(SHIPPED_PREFIX)
        if not (folder / "adapter_model.safetensors").exists():
            known = sorted(p.name for p in SHIPPED_DIR.iterdir() if (p / "adapter_model.safetensors").exists())
            raise FileNotFoundError(f"lora {text!r}: no shipped adapter {folder}/adapter_model.safetensors; shipped "
                                    f"LoRA adapters: {', '.join(known) or 'none'}")
        weights = folder / "adapter_model.safetensors"
        meta = json.loads((folder / "adapter.json").read_text()) if (folder / "adapter.json").exists() else {}
        if not meta.get("adapter_sha256"):
            raise GGUFExportError(f"lora {text!r}: {folder}/adapter.json holds no adapter_sha256 (written by "
                                  "scripts/ship_adapter.py)")
        if sha256_file(weights) != meta["adapter_sha256"]:
            raise GGUFExportError(f"lora {text!r}: {weights} does not match the sha256 in adapter.json (a changed "
                                  "or damaged file; restore it from git)")
        return weights
    path = Path(text).expanduser()
    if path.suffix == ".gguf":
        if not path.exists():
            raise FileNotFoundError(f"lora {text!r}: no such GGUF adapter file")
        return path
    if not (path / "adapter_model.safetensors").exists():
        raise FileNotFoundError(f"lora {text!r}: expected `factlab:<shipped name>`, a .gguf adapter, or a PEFT "
                                f"adapter folder holding adapter_model.safetensors")
    return path / "adapter_model.safetensors"


def shipped_base(spec: str | Path) -> str | None:
    """The base GGUF file name a shipped adapter was trained on (its adapter.json `base_gguf`); None for an adapter
    that is not shipped (a PEFT folder or a .gguf given by path: whoever names it vouches for its base)."""
    text = str(spec)
    meta = SHIPPED_DIR / text.removeprefix(SHIPPED_PREFIX) / "adapter.json"
    if not text.startswith(SHIPPED_PREFIX) or not meta.exists():
        return None
    return json.loads(meta.read_text()).get("base_gguf")


def lora_gguf(spec: str | Path, base_gguf: str | Path, cache_dir: str | Path | None = None) -> Path:
    """The GGUF adapter file for `spec`, written from its PEFT form once (cached by the adapter's sha256).

    Args:
        spec: `factlab:<name>` (a shipped adapter: factlab/models/shipped/<name>/), a PEFT adapter folder, or a
            ready `.gguf` adapter file.
        base_gguf: the base model's GGUF (the exporter's template: architecture, tensor names and shapes).
        cache_dir: where exported adapters are kept; default `<model cache>/lora`.

    Raises:
        FileNotFoundError: no such shipped adapter, folder or file (the message says which was looked for).
        GGUFExportError: an adapter llama.cpp cannot read (see `export_lora_gguf`).
    """
    from filelock import FileLock

    source = lora_source(spec)
    if source.suffix == ".gguf":
        return source
    folder = source.parent
    digest = sha256_file(source)[:12]
    if cache_dir is None:
        from factlab.models.assemble import default_cache_dir

        cache_dir = default_cache_dir() / "lora"
    out = Path(cache_dir) / f"{folder.name}-{digest}.gguf"
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock"):
        if not out.exists():
            export_lora_gguf(folder, base_gguf, out, folder.name)
    return out
