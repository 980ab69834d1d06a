# python scripts/architecture_figure.py            -> docs/img/architecture.png
"""Draw the package's layers (factlab/layers.py) with the imports between packages as they are in the code today
(read from the source with `ast`, the same way tests/test_layering.py reads them): one box per package, sized by its
lines of code, one arrow per importing pair (thicker for more importing modules; the imports of layer 0, which every
package may use, are left out to keep the picture readable)."""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_graph(package: Path) -> tuple[Counter, Counter]:
    """(lines per package, importing modules per (package, imported package))."""
    lines, edges = Counter(), Counter()
    for path in sorted(package.rglob("*.py")):
        own = path.relative_to(package).parts[0].removesuffix(".py")
        lines[own] += len(path.read_text(encoding="utf-8").splitlines())
        seen = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = []
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = [node.module]
            for module in modules:
                parts = module.split(".")
                if parts[0] == "factlab" and len(parts) > 1 and parts[1] != own:
                    seen.add(parts[1])
        edges.update((own, other) for other in seen)
    lines.pop("__init__", None)
    return lines, edges


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(ROOT / "docs" / "img" / "architecture.png"))
    args = parser.parse_args()

    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    from factlab.layers import LAYERS

    lines, edges = package_graph(ROOT / "factlab")
    figure = Figure(figsize=(13, 9), dpi=110)
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, 13)
    axes.set_ylim(-0.3, len(LAYERS) * 1.1 + 0.3)
    axes.axis("off")
    centres = {}
    for rank, names in enumerate(LAYERS):
        y = rank * 1.1 + 0.2
        axes.text(0.15, y + 0.35, f"layer {rank}", fontsize=9, color="#5f6368", va="center")
        width = 11.4 / len(names)
        for i, name in enumerate(names):
            x = 1.3 + i * width
            w = min(width - 0.25, 0.9 + 0.0009 * lines[name])
            box = FancyBboxPatch((x, y), w, 0.7, boxstyle="round,pad=0.02", fc="#e8f0fe", ec="#1967d2", lw=1.2)
            axes.add_patch(box)
            axes.text(x + w / 2, y + 0.42, name, ha="center", va="center", fontsize=10, weight="bold")
            axes.text(x + w / 2, y + 0.16, f"{lines[name]:,} lines", ha="center", va="center", fontsize=7.5,
                      color="#5f6368")
            centres[name] = (x + w / 2, y, y + 0.7)
    foundation = set(LAYERS[0])
    for (src, dst), count in sorted(edges.items()):
        if src not in centres or dst not in centres or dst in foundation:  # every package may use layer 0
            continue
        (x0, bottom, _), (x1, _, top) = centres[src], centres[dst]
        arrow = FancyArrowPatch((x0, bottom), (x1, top), arrowstyle="-|>", mutation_scale=9,
                                lw=0.4 + 0.25 * count, color="#9aa0a6", alpha=0.7, connectionstyle="arc3,rad=0.08")
        axes.add_patch(arrow)
    title = "factlab: packages by layer; an arrow = imports (all point down; imports of layer 0 not drawn)"
    axes.text(6.5, len(LAYERS) * 1.1 + 0.05, title, ha="center", fontsize=11)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out)
    print(f"wrote {args.out}: {len(lines)} packages, {len(edges)} importing pairs")


if __name__ == "__main__":
    main()
