"""Secrets never reach an error text, a log or MLflow: a backend that reads a key registers it here, and every error
text that may carry it passes through `scrub` (an endpoint may echo the key back). Used by the LM backends
(factlab/models) and the web search backends (factlab/retrieval/web).
"""

from __future__ import annotations

import os
import re

_SECRET_ENV = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD)", re.IGNORECASE)
_SECRETS: set[str] = set()  # values registered by the LM backends that read them (an API key from its env var)


def register_secret(value: str | None) -> None:
    """Remember a secret value so `scrub` removes it from every error text (an endpoint may echo the key back)."""
    if value and len(value) >= 6:
        _SECRETS.add(value)


def scrub(text: str) -> str:
    """`text` with every registered secret, and the value of every secret-looking env var, replaced by ***.

    >>> register_secret("sk-test-123456"); scrub("401: invalid key sk-test-123456 for model x")
    '401: invalid key *** for model x'
    """
    secrets = set(_SECRETS)
    secrets.update(v for k, v in os.environ.items() if _SECRET_ENV.search(k) and v and len(v) >= 8)
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
