# python scripts/sweep_table.py compare_judge [--out outputs/sweeps/compare_judge] [--log]
"""One optimizer sweep's table from MLflow: each optimizer's val / test score with 95% bootstrap intervals, the
paired interval of its test gain over the program as written, its language breakdown, metric calls, LM tokens,
compile time and GEPA's proposal outcomes; then every pair of optimizers head to head (the paired interval of the
difference on the test examples both scored); plus a figure of the scores with their intervals.

The sweep id is the `sweep_id` tag optimize.py writes (`sweep_id:` in conf/experiment/compare_*.yaml, else the
Hydra multirun dir's name). `--log` attaches the table and the figure to the sweep's last finished run under
`sweep/`. Code: factlab/optimize/sweep.py (`main`).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from factlab.optimize.sweep import main  # noqa: E402 - after the repository is on the path

if __name__ == "__main__":
    main()
