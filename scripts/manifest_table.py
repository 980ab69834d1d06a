# python scripts/manifest_table.py prepared/*/manifest.json
"""Print a markdown table of cases and claims per split and gold label from prepare_data manifests.

Prepare every public dataset first, e.g.
`python scripts/prepare_data.py -m dataset=climate_fever,scifact,healthver` (outputs under prepared/<name>/).
"""

import argparse
import json
import sys
from pathlib import Path

from factlab.data.prepare import counts_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifests", nargs="+", type=Path, help="manifest.json files, or the folders holding them")
    args = parser.parse_args(argv)
    manifests = []
    for path in args.manifests:
        path = path / "manifest.json" if path.is_dir() else path
        if not path.is_file():
            parser.error(f"{path}: no such manifest (write one with scripts/prepare_data.py)")
        manifests.append(json.loads(path.read_text(encoding="utf-8")))
    print(counts_table(manifests))
    return 0


if __name__ == "__main__":
    sys.exit(main())
