"""Run one pipeline stage on one input from the command line, on the configured LM.

    python -m factlab.cli stage judge --text "Penicillin was found in 1938." \
        --evidence "Fleming found penicillin in 1928."
    python -m factlab.cli stage paragraphs --file datasets/bundled/examples/report_en_short.md
    python -m factlab.cli stage extract_claims --text "..." --lm local_qwen15 --set stage.program.max_claims=5
"""

from __future__ import annotations

import argparse
import json
import sys
import time

# The stage's inputs are read off its module's `forward`: --text/--file fills the first, these flags the others.
_FLAGS = {"context": "context", "earlier": "context", "claims": "claims", "evidence": "evidence"}


def stage_inputs(program, args, text: str) -> dict:
    """The keyword arguments of one call of a built stage: --text/--file for its first input, --context / --claims /
    --evidence for the inputs of those names (`earlier` takes --context), `--input name=value` for any other.

    Raises:
        InputError: an input of the stage has no value (naming the flag that gives it).
    """
    import inspect

    from factlab.textio import InputError

    params = [p for p in list(inspect.signature(type(program).forward).parameters.values())[1:]  # past `self`
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    given = dict(pair.split("=", 1) for pair in args.input)
    inputs = {}
    for index, param in enumerate(params):
        if index == 0:
            inputs[param.name] = text
        elif param.name in given:
            inputs[param.name] = given[param.name]
        elif param.name in _FLAGS:
            value = getattr(args, _FLAGS[param.name])
            if isinstance(value, list) and not value and param.default is inspect.Parameter.empty:
                raise InputError(f"{args.name} needs at least one --{_FLAGS[param.name]}")
            inputs[param.name] = value
        elif param.default is inspect.Parameter.empty:
            raise InputError(f"{args.name} needs its input {param.name!r}: --input {param.name}=...")
    return inputs


def user_errors() -> tuple[type[BaseException], ...]:
    """The errors that mean bad input or configuration (the message says what to fix): shown as one line."""
    from omegaconf.errors import MissingMandatoryValue

    from factlab.models.assemble import ModelAssemblyError
    from factlab.models.errors import LMUnavailableError
    from factlab.models.lm import MissingAPIKeyError
    from factlab.models.server import ServerStartError
    from factlab.runtime import ModelSourceError
    from factlab.stages.build import CompiledProgramError
    from factlab.textio import InputError
    from factlab.tracking.refs import CompiledRefError, ModelRefError

    return (InputError, MissingMandatoryValue, CompiledRefError, CompiledProgramError, ModelRefError, ModelSourceError,
            MissingAPIKeyError, LMUnavailableError, ServerStartError, ModelAssemblyError)


def exit_on_user_error(fn, *args, **kwargs):
    """Call `fn`; on bad input or configuration print `error: <what to fix>` (one line, no traceback) and exit 2.
    A user error raised while Hydra instantiates a config node (wrapped in InstantiationException) counts too."""
    errors = user_errors()
    try:
        return fn(*args, **kwargs)
    except Exception as raised:
        exc = raised
        while exc is not None and not isinstance(exc, errors):
            exc = exc.__cause__
        if exc is None:
            raise
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if type(exc).__name__ == "MissingMandatoryValue":
            key = getattr(exc, "full_key", "") or message
            message = f"missing value {key}: set it on the command line ({key}=...)"
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m factlab.cli", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    stage = sub.add_parser("stage", help="run one stage once")
    stage.add_argument("name", help="a stage of conf/stage/ (its program's inputs are read off its forward)")
    src = stage.add_mutually_exclusive_group(required=True)
    src.add_argument("--text")
    src.add_argument("--file")
    stage.add_argument("--context", default="", help="extract_claims / logic: summary of earlier paragraphs")
    stage.add_argument("--claims", nargs="*", default=[], help="review_claims: drafted claims")
    stage.add_argument("--evidence", nargs="*", default=[], help="judge: evidence snippets")
    stage.add_argument("--input", nargs="*", default=[], help="any other input of the stage: name=value")
    stage.add_argument("--lm", default="local_qwen05", help="a conf/lm option (default local_qwen05)")
    stage.add_argument("--set", nargs="*", default=[], help="extra Hydra overrides, e.g. stage.program.max_queries=2")
    args = parser.parse_args(argv)

    from factlab.config import compose_config, config_names
    from factlab.models.errors import call_safely
    from factlab.schema import to_jsonable
    from factlab.stages.build import build_program
    from factlab.textio import InputError, read_text_file, require_text

    if args.name not in config_names("stage"):
        print(f"error: no stage {args.name!r}; stages: {', '.join(config_names('stage'))}", file=sys.stderr)
        return 2
    cfg = compose_config("run_stage", [f"stage={args.name}", f"lm@student={args.lm}", *args.set])
    program = build_program(cfg.stage)
    try:
        text = read_text_file(args.file) if args.file else require_text(args.text, "--text")
        inputs = stage_inputs(program, args, text)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    handle = None
    if cfg.stage.backend == "program" and getattr(program, "use_lm", True):  # the rule splitter runs no LM
        from hydra.utils import instantiate

        handle = instantiate(cfg.student)
    start = time.perf_counter()
    if handle:
        with handle.context():
            pred, error = call_safely(args.name, program, handle.breaker, **inputs)
    else:
        pred, error = call_safely(args.name, program, **inputs)
    seconds = time.perf_counter() - start
    out = {"stage": args.name, "lm": handle.info if handle else None, "seconds": round(seconds, 3)}
    if error:
        out["error"] = str(error)
    else:
        out["output"] = to_jsonable(dict(pred.items()))
    print(json.dumps(out, ensure_ascii=False, indent=2))
    return 1 if error else 0


if __name__ == "__main__":
    sys.exit(main())
