"""Every doc names only files, modules and config options that exist.

    python -m pytest -q tests/test_docs_names.py

Reads README.md and docs/*.md as text (no imports beyond the standard library) and checks three kinds of names:
- repo paths (`factlab/...`, `conf/...`, `scripts/...`, `benchmarks/...`, `datasets/...`, `tests/...`, `docs/...`,
  in code, links or prose; `<name>`, `*` and `{a,b}` match by glob, so `factlab/programs/<stage>.py` needs one
  program file); a bare `*.py` / `*.yaml` / `*.toml` is a root file or a file of that name under those folders;
  Markdown links resolve against the doc's folder;
- dotted modules (`factlab.checkers.fast`, `pkg://factlab.models.e5`): a module file, or for `module.attr` the
  module file with the attribute's name in it;
- config overrides in code (`checker=fast`, `lm@student=local_qwen15`, `-m optimizer=gepa,miprov2`): where
  conf/<group>/ is a folder, conf/<group>/<option>.yaml must exist.
A failure lists doc:line and the missing name; fix the doc (or, for a name that is not a repo file, add it to
ALLOWED with the reason).
"""

from __future__ import annotations

import functools
import glob
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONF = ROOT / "conf"

# Names that look like repo paths but are not committed files, each with its reason. A path is allowed when it starts
# with an entry. Run outputs (outputs/, runs/, mlruns/, prepared/, reviews/) are never checked: not under PATH_ROOTS.
ALLOWED = {
    "datasets/reflow/": "written by scripts/reflow.py and review.py action=feedback into the working tree, not shipped",
    "factlab/verified": "a Zotero tag factlab writes on an item (docs/knowledge.md), not a path",
}

PATH_ROOTS = "factlab|conf|scripts|benchmarks|datasets|tests|docs"
# A repo path anywhere on a line: not the tail of a longer path or URL (no `/`, `.`, `:` or word before it).
PATH_RE = re.compile(rf"(?<![\w/.:~-])(?:{PATH_ROOTS})/(?:<[^<>]*>|[\w./{{}}*,@+-])*")
ROOT_FILE_RE = re.compile(r"(?<![\w/.:~<>-])[A-Za-z_][\w-]*\.(?:py|yaml|toml)\b(?![\w/])")
MODULE_RE = re.compile(r"(?<![\w/.-])factlab(?:\.[A-Za-z_]\w*)+")
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")
CODE_SPAN_RE = re.compile(r"`([^`]+)`")
OVERRIDE_RE = re.compile(r"(?:^|\s)[+~]?([a-z_]+)(?:@[\w.]+)?=([^\s`'\"]+)")


def expand_braces(text: str) -> list[str]:
    """Expand `{a,b}` alternatives (shell style) into every combination.

    >>> expand_braces("factlab/train/{distill,sft}/")
    ['factlab/train/distill/', 'factlab/train/sft/']
    >>> expand_braces("conf/a.yaml")
    ['conf/a.yaml']
    """
    match = re.search(r"\{([^{}]*)\}", text)
    if not match:
        return [text]
    head, tail = text[: match.start()], text[match.end() :]
    return [out for part in match.group(1).split(",") for out in expand_braces(head + part + tail)]


def clean_path(raw: str) -> str:
    """Trim what prose and code put around a path: punctuation after it, `:line` / `:func`, `#anchor`, `...`.

    >>> clean_path("factlab/train/rl/reward.py:compute_score,")
    'factlab/train/rl/reward.py'
    >>> clean_path("docs/layers.md#logic).")
    'docs/layers.md'
    >>> clean_path("conf/business/*.yaml")
    'conf/business/*.yaml'
    """
    path = raw.split("#")[0].split(":")[0]
    path = path.split("...")[0]
    return path.rstrip(".,;)")


def path_exists(path: str) -> bool:
    """Whether a repo-relative path (with `<name>`, `*`, `{a,b}` as wildcards) names at least one file or folder."""
    for variant in expand_braces(path):
        pattern = re.sub(r"<[^<>]*>", "*", variant)
        if any(ch in pattern for ch in "*?["):
            if glob.glob(str(ROOT / pattern)):
                return True
        elif (ROOT / pattern).exists():
            return True
    return False


@functools.cache
def source_basenames() -> frozenset[str]:
    """File names under the source folders (a bare `html.py` in prose names one of them; run outputs do not count)."""
    return frozenset(f.name for top in PATH_ROOTS.split("|") for f in (ROOT / top).rglob("*") if f.is_file())


def module_exists(dotted: str) -> bool:
    """Whether `a.b.c` is a module of the repo, or `a.b.attr` / `a.b.Class.attr` an attribute of one (import-free).

    >>> module_exists("factlab.metrics")
    True
    >>> module_exists("factlab.no_such_module")
    False
    """
    parts = dotted.split(".")
    for attrs in range(0, 3):
        module = parts[: len(parts) - attrs]
        if len(module) < 2 and len(parts) > 1:
            return False
        base = ROOT.joinpath(*module)
        source = next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()), None)
        if source is None:
            continue
        if attrs == 0:
            return True
        text = source.read_text(encoding="utf-8")
        return all(re.search(rf"\b{re.escape(name)}\b", text) for name in parts[len(module) :])
    return False


def code_of(lines: list[str]) -> list[tuple[int, str]]:
    """The code on each line: all of a fenced block's lines, the inline `spans` elsewhere."""
    out, fenced = [], False
    for number, line in enumerate(lines, start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            out.append((number, line.split("  #")[0]))  # a shell comment after the command is prose
        else:
            out.extend((number, span) for span in CODE_SPAN_RE.findall(line))
    return out


def missing_names(doc: Path) -> list[str]:
    """`doc:line: kind name` for every name in one doc that does not resolve."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    rel = doc.relative_to(ROOT).as_posix() if doc.is_relative_to(ROOT) else doc.name
    problems = []

    def report(number: int, kind: str, name: str) -> None:
        problems.append(f"{rel}:{number}: {kind} {name}")

    for number, line in enumerate(lines, start=1):
        for raw in PATH_RE.findall(line):
            path = clean_path(raw)
            if not path.startswith(tuple(ALLOWED)) and not path_exists(path):
                report(number, "path", path)
        for name in ROOT_FILE_RE.findall(line):
            if not (ROOT / name).is_file() and name not in source_basenames():
                report(number, "file", name)
        for target in LINK_RE.findall(line):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            path = (doc.parent / clean_path(target)).resolve()
            if not path.exists():
                report(number, "link", target)
        for dotted in MODULE_RE.findall(line):
            if not module_exists(dotted.rstrip(".")):
                report(number, "module", dotted)
    for number, code in code_of(lines):
        for group, value in OVERRIDE_RE.findall(code):
            if not (CONF / group).is_dir() or any(mark in value for mark in ("<", "$", "?", "...")):
                continue  # a placeholder, not an option
            if re.fullmatch(r"[A-Za-z_]\w*(?:\.\w+)+[),]*", value):
                continue  # a Python keyword argument (`search=retriever.search`): no option name has a dot
            for option in re.split(r"[,|]", value):
                if option and not (CONF / group / f"{option}.yaml").is_file():
                    report(number, "config", f"{group}={option} (no conf/{group}/{option}.yaml)")
    return problems


def test_docs_name_only_what_exists():
    problems = [problem for doc in DOCS for problem in missing_names(doc)]
    assert not problems, "docs name what does not exist (fix the doc, or allow it in ALLOWED with a reason):\n" + (
        "\n".join(problems)
    )


def test_the_check_reports_each_missing_name(tmp_path):
    """The check itself can fail: a doc naming a missing file, module and option is reported line by line."""
    doc = tmp_path / "probe.md"
    doc.write_text(
        "Run `python verify.py checker=fast checker=no_such_checker`.\n"
        "See `factlab/no_such_file.py`, `factlab/programs/<stage>.py` and `factlab.no_such_module`.\n"
        "Read `factlab.metrics.no_such_function`, `no_such_entry.py` and [here](no_such.md).\n",
        encoding="utf-8",
    )
    assert missing_names(doc) == [
        "probe.md:2: path factlab/no_such_file.py",
        "probe.md:2: module factlab.no_such_module",
        "probe.md:3: file no_such_entry.py",
        "probe.md:3: link no_such.md",
        "probe.md:3: module factlab.metrics.no_such_function",
        "probe.md:1: config checker=no_such_checker (no conf/checker/no_such_checker.yaml)",
    ]


def test_helpers_doctests():
    import doctest
    import sys

    assert doctest.testmod(sys.modules[__name__]).failed == 0
