"""Authority tiers: which domains count as tier 1 (government, standards, peer-reviewed), 2 or 3 (unknown).

The tables live in `conf/tiers/<vertical>.yaml` with the shape `{tier1: [...], tier2: [...], tier3: [...]}`.
A pattern matches a domain equal to it or ending in "." + pattern ("gov.cn" covers "nhc.gov.cn"; a leading
dot is optional, ".gov" == "gov"). The longest matching pattern wins; the table of the source's vertical is
consulted before `default`; a domain no table knows is tier 3.

>>> tables = TierTables({"default": TierTable.from_mapping({"tier1": [".gov", "who.int"], "tier3": ["zhihu.com"]}),
...                      "medical": TierTable.from_mapping({"tier2": ["dxy.cn"]})})
>>> tables.tier_for("www.nih.gov"), tables.tier_for("zhihu.com"), tables.tier_for("example.org")
(1, 3, 3)
>>> tables.tier_for("dxy.cn", vertical="medical"), tables.tier_for("dxy.cn")
(2, 3)
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from factlab.untrusted import OPEN_WEB_TIER

TIERS: tuple[int, ...] = (1, 2, 3)
UNKNOWN_TIER = OPEN_WEB_TIER
_TIER_KEYS = {f"tier{tier}": tier for tier in TIERS}


def domain_from_url(url: str) -> str:
    """The host of `url`, lower-cased, without port, credentials or a leading "www.".

    >>> domain_from_url("https://www.WHO.int/news/item/1")
    'who.int'
    >>> domain_from_url("mp.weixin.qq.com/s/abc")
    'mp.weixin.qq.com'
    >>> domain_from_url("")
    ''
    """
    url = url.strip()
    if not url:
        return ""
    host = urlsplit(url if "//" in url else "//" + url).hostname or ""
    host = host.lower().rstrip(".")
    return host[4:] if host.startswith("www.") else host


def _normalise_pattern(pattern: str) -> str:
    return str(pattern).strip().lower().lstrip(".")


@dataclass(frozen=True)
class TierTable:
    """Domain pattern -> tier for one vertical."""

    patterns: Mapping[str, int]

    @classmethod
    def from_mapping(cls, table: Mapping, origin: str = "<mapping>") -> TierTable:
        """Build from `{tier1: [...], tier2: [...], tier3: [...]}` (other keys, like `vertical`, are ignored).

        Args:
            table: the parsed YAML (a dict or an OmegaConf node).
            origin: where the table came from, named in errors.

        Raises:
            ValueError: a pattern is listed under two different tiers, or a tier list is not a list.
        """
        patterns: dict[str, int] = {}
        for key, tier in _TIER_KEYS.items():
            listed = table[key] if key in table else []
            if isinstance(listed, str) or not hasattr(listed, "__iter__"):
                raise ValueError(f"{origin}: `{key}` must be a list of domain patterns, got {listed!r}")
            for raw in listed:
                pattern = _normalise_pattern(raw)
                if patterns.get(pattern, tier) != tier:
                    raise ValueError(
                        f"{origin}: domain pattern {raw!r} is listed under tier{patterns[pattern]} and {key}; "
                        "keep it under one tier"
                    )
                patterns[pattern] = tier
        return cls(patterns)

    def match(self, domain: str) -> int | None:
        """The tier of the longest pattern matching `domain`, or None when no pattern matches.

        >>> TierTable({"gov.cn": 1, "weixin.qq.com": 3, "qq.com": 2}).match("mp.weixin.qq.com")
        3
        """
        domain = domain.lower().strip().rstrip(".")
        best: tuple[int, int] | None = None
        for pattern, tier in self.patterns.items():
            if domain == pattern or domain.endswith("." + pattern):
                if best is None or len(pattern) > best[0]:
                    best = (len(pattern), tier)
        return None if best is None else best[1]


class TierTables:
    """The tier tables of all verticals; `default` applies to every vertical after the vertical's own."""

    def __init__(self, tables: Mapping[str, TierTable]):
        self.tables = dict(tables)

    @classmethod
    def from_config(cls, node: Mapping, origin: str = "retrieval.tiers") -> TierTables:
        """Build from the composed config node `{vertical: {tier1: [...], ...}, ...}`."""
        return cls({str(name): TierTable.from_mapping(table, f"{origin}.{name}") for name, table in node.items()})

    @classmethod
    def from_dir(cls, folder: str | Path) -> TierTables:
        """Read every `<vertical>.yaml` in `folder` (e.g. `conf/tiers`); the file stem names the vertical."""
        folder = Path(folder)
        files = sorted(folder.glob("*.yaml"))
        if not files:
            raise FileNotFoundError(f"no tier tables (*.yaml) in {folder}; expected e.g. {folder / 'default.yaml'}")
        tables = {}
        for path in files:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            tables[path.stem] = TierTable.from_mapping(loaded, str(path))
        return cls(tables)

    def tier_for(self, domain: str, vertical: str | None = None) -> int:
        """Tier of `domain` for a source of `vertical`: the vertical's table, then `default`, else tier 3."""
        if not domain:
            return UNKNOWN_TIER
        for name in (vertical, "default"):
            if name and name in self.tables and (tier := self.tables[name].match(domain)) is not None:
                return tier
        return UNKNOWN_TIER

    def fingerprint(self) -> str:
        """A stable digest of all tables: a changed table re-tiers the index on the next build."""
        items = sorted((name, sorted(table.patterns.items())) for name, table in self.tables.items())
        return hashlib.sha256(repr(items).encode()).hexdigest()[:16]
