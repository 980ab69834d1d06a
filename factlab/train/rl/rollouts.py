"""The held-out rollouts of a GRPO run: every rollout the reward scores, by phase (before / train / after), and their
summary with intervals and the paired after - before gain (`RolloutLog`), as a markdown table (`held_out_table`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path


class RolloutLog:
    """Every rollout the reward scores, by phase (`before`, `train`, `after`): the row's case id and index, the
    reward's parts and whether it searched, and for a rollout without an answer the end of its text (`tail`: what
    it wrote instead). TRL's evaluation reports only means; these records give the held-out numbers their intervals
    (resampling cases) and the after - before gain paired on the same rows.

    >>> log = RolloutLog(); log.phase = "before"
    >>> log.add({"case_id": "a", "index": 0}, {"score": 0.2, "acc": 0.0, "format": 0.5, "recall": -1.0,
    ...                                         "answered": 1.0}, False)
    >>> log.phase = "after"
    >>> log.add({"case_id": "a", "index": 0}, {"score": 1.0, "acc": 1.0, "format": 1.0, "recall": -1.0,
    ...                                         "answered": 1.0}, True)
    >>> log.summary(200, 0)["after"]["verdict"]["mean"], log.summary(200, 0)["gain"]["verdict"]["mean"]
    (1.0, 1.0)
    """

    PARTS = {"reward": "score", "verdict": "acc", "searched": "searched", "answered": "answered"}

    def __init__(self) -> None:
        self.phase = "train"
        self.records: dict[str, list[dict]] = {}

    TAIL_CHARS = 400  # how much of an unanswered rollout's text is kept

    def add(self, info: Mapping, parts: Mapping, did_search: bool, text: str = "") -> None:
        """Record one scored rollout under the current phase (`text`: the rendered rollout, its end kept when the
        rollout did not answer)."""
        record = {"case_id": str(info.get("case_id")), "index": info.get("index"), "lang": info.get("lang"),
                  **{k: float(v) for k, v in parts.items()}, "searched": float(did_search)}
        if text and not parts.get("answered", 1.0):
            record["tail"] = text[-self.TAIL_CHARS:]
        self.records.setdefault(self.phase, []).append(record)

    def write(self, folder: Path, phase: str) -> None:
        """`<folder>/rollouts_<phase>.jsonl` (atomically)."""
        from factlab.atomic import write_text

        write_text(folder / f"rollouts_{phase}.jsonl", "".join(
            json.dumps(record, ensure_ascii=False) + "\n" for record in self.records.get(phase, [])))

    def read(self, folder: Path, phase: str) -> None:
        """Load a phase written by an earlier run (the kept "before" of a resumed run), if there."""
        from factlab.data.jsonl import read_jsonl

        path = folder / f"rollouts_{phase}.jsonl"
        if path.exists():
            self.records[phase] = read_jsonl(path)

    @classmethod
    def _means(cls, records: Sequence[Mapping]) -> dict[str, float]:
        # NaN for a part the records lack (the kept "before" of a run from before that part was recorded)
        return {name: sum(r.get(key, math.nan) for r in records) / len(records) for name, key in cls.PARTS.items()}

    def summary(self, samples: int = 2000, seed: int = 0, confidence: float = 0.95) -> dict:
        """Per held-out phase: mean reward, verdict and search rate with percentile intervals resampling cases, the
        rows and cases counted; `gain`: after - before per row (the mean of its rollouts), paired, grouped by case."""
        from factlab.metrics import bootstrap_ci, paired_gain

        out: dict = {}
        per_row: dict[str, dict] = {}
        for phase in ("before", "after"):
            records = self.records.get(phase) or []
            if not records:
                continue
            cases: dict[str, list[dict]] = {}
            rows: dict[tuple, list[dict]] = {}
            for record in records:
                cases.setdefault(record["case_id"], []).append(record)
                rows.setdefault((record["case_id"], record["index"]), []).append(record)
            units = list(cases.values())
            intervals = bootstrap_ci(units, lambda picked: self._means([r for unit in picked for r in unit]),
                                     list(self.PARTS), samples, seed, confidence)
            point = self._means(records)
            out[phase] = {name: {"mean": point[name], "interval": intervals.get(name)} for name in self.PARTS}
            out[phase].update(rollouts=len(records), rows=len(rows), cases=len(units))
            per_row[phase] = {key: self._means(group) for key, group in rows.items()}
        if len(per_row) == 2:
            shared = sorted(set(per_row["before"]) & set(per_row["after"]), key=str)
            out["gain"] = {"rows": len(shared)}
            for name in self.PARTS:
                groups: dict[str, list] = {}
                for key in shared:
                    groups.setdefault(key[0], []).append((per_row["before"][key][name], per_row["after"][key][name]))
                gain, interval = paired_gain(list(groups.values()), samples, seed, confidence)
                out["gain"][name] = {"mean": gain, "interval": interval}
        return out


def held_out_table(held_out: Mapping) -> str:
    """The before / after / gain summary of `RolloutLog.summary` as a markdown table (the job's log, docs/rl.md).

    >>> print(held_out_table({"after": {"reward": {"mean": 0.5, "interval": (0.25, 0.75)}, "rows": 2, "cases": 1,
    ...                                 "rollouts": 8}}))
    | held out | rows (cases) | rollouts | reward | verdict | searched | answered |
    |---|---|---|---|---|---|---|
    | after | 2 (1) | 8 | 0.500 [0.250, 0.750] | - | - | - |
    """
    def cell(value: Mapping | None, sign: str) -> str:
        if not value:
            return "-"
        low_high = value.get("interval")
        text = f"{value['mean']:{sign}.3f}"
        return f"{text} [{low_high[0]:{sign}.3f}, {low_high[1]:{sign}.3f}]" if low_high else text

    lines = ["| held out | rows (cases) | rollouts | " + " | ".join(RolloutLog.PARTS) + " |",
             "|---" * (3 + len(RolloutLog.PARTS)) + "|"]
    for phase in ("before", "after", "gain"):
        entry = held_out.get(phase)
        if not entry:
            continue
        size = f"{entry['rows']} ({entry['cases']})" if phase != "gain" else f"{entry['rows']} paired"
        lines.append(f"| {phase} | {size} | {entry.get('rollouts', '-')} | "
                     + " | ".join(cell(entry.get(name), "+" if phase == "gain" else "") for name in RolloutLog.PARTS)
                     + " |")
    return "\n".join(lines)
