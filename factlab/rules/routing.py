"""The paragraph-type routing table (conf/routing/*.yaml): a paragraph's type decides which layers check it (facts,
logic, consistency), with one exception: a paragraph that interprets a table always gets the consistency layer.

A business may change the table (`by_business`: business name -> {type: {layer: on}}, merged over `types`), e.g.
medical writing gets facts on its limitations paragraphs too.

The type here is the deterministic rule path (patterns in the config, first match wins); a paragraph-type stage can
supply the type instead (`layers_for(text, paragraph_type=...)`).

>>> table = Routing(name="t", default_type="background", types={"background": {"facts": True, "logic": True,
...     "consistency": False}, "limitations": {"facts": False, "logic": True, "consistency": True}},
...     patterns={"limitations": [r"\\blimitations?\\b", "局限"]})
>>> table.paragraph_type("One limitation is the sample size."), table.paragraph_type("本研究的局限在于样本量。")
('limitations', 'limitations')
>>> table.layers_for("Rates rose.")
('background', ['facts', 'logic'])
>>> table.layers_for("| year | rate |\\n|---|---|\\n| 2020 | 5% |")
('background', ['facts', 'logic', 'consistency'])
>>> table.by_business = {"medical": {"limitations": {"facts": True}}}
>>> table.layers_for("One limitation is the dose.", business="medical")
('limitations', ['facts', 'logic', 'consistency'])
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

LAYER_NAMES = ("facts", "logic", "consistency")
_TABLE = re.compile(r"(^\s*\|.*\|\s*$)|(\b[Tt]able \d+\b)|(表\s*\d+)", re.MULTILINE)


@dataclass
class Routing:
    """Which layers check a paragraph of each type."""

    name: str
    default_type: str
    types: Mapping[str, Mapping[str, bool]]
    patterns: Mapping[str, Sequence[str]] = field(default_factory=dict)
    table_consistency: bool = True
    by_business: Mapping[str, Mapping[str, Mapping[str, bool]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.default_type not in self.types:
            raise ValueError(f"conf/routing/{self.name}.yaml: default_type {self.default_type!r} is not one of the "
                             f"types {sorted(self.types)}")
        for name, layers in self.types.items():
            wrong = sorted(set(layers) ^ set(LAYER_NAMES))
            if wrong:
                raise ValueError(f"conf/routing/{self.name}.yaml: types.{name} must name exactly {LAYER_NAMES}; "
                                 f"check {wrong}")
        unknown = sorted(set(self.patterns) - set(self.types))
        if unknown:
            raise ValueError(f"conf/routing/{self.name}.yaml: patterns for unknown types {unknown}")
        for business, overrides in self.by_business.items():
            for name, layers in overrides.items():
                if name not in self.types:
                    raise ValueError(f"conf/routing/{self.name}.yaml: by_business.{business}.{name} is not one of the "
                                     f"types {sorted(self.types)}")
                wrong = sorted(set(layers) - set(LAYER_NAMES))
                if wrong:
                    raise ValueError(f"conf/routing/{self.name}.yaml: by_business.{business}.{name}: unknown layers "
                                     f"{wrong}; layers are {LAYER_NAMES}")
        self._compiled = {name: [re.compile(p, re.IGNORECASE) for p in pats] for name, pats in self.patterns.items()}

    def paragraph_type(self, text: str) -> str:
        """The first type whose patterns match the text, else `default_type`."""
        for name, patterns in self._compiled.items():
            if any(p.search(text) for p in patterns):
                return name
        return self.default_type

    def layers_for(self, text: str, paragraph_type: str | None = None,
                   business: str | None = None) -> tuple[str, list[str]]:
        """(type, layers in LAYER_NAMES order) for a paragraph of a business's document; the table exception adds
        consistency."""
        kind = paragraph_type if paragraph_type in self.types else self.paragraph_type(text)
        on = {**self.types[kind], **self.by_business.get(business or "", {}).get(kind, {})}
        if self.table_consistency and _TABLE.search(text):
            on["consistency"] = True
        return kind, [layer for layer in LAYER_NAMES if on[layer]]
