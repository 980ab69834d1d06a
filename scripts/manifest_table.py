# python scripts/manifest_table.py prepared/*/manifest.json
"""Print a markdown table of cases and claims per split and gold label from prepare_data manifests.

Prepare every public dataset first, e.g.
`python scripts/prepare_data.py -m dataset=climate_fever,scifact,healthver` (outputs under prepared/<name>/).
Code: factlab/data/prepare.py (`manifest_table_main`).
"""

import sys

from factlab.data.prepare import manifest_table_main

if __name__ == "__main__":
    sys.exit(manifest_table_main())
