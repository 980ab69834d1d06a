"""The one rule for which MLflow store a process talks to, used by every tracker and every reference lookup.

An explicit URI (`tracking.tracking_uri=...`) wins, then $FACTLAB_MLFLOW_URI, then $MLFLOW_TRACKING_URI (MLflow's own
variable, which a running tracker also sets for DSPy, TRL and VERL), then `sqlite:///mlruns/mlflow.db` in the working
directory. A relative sqlite path is made absolute, so a run id and a model URI are always looked up in the store
they were logged to, whatever folder a later job starts in.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_TRACKING_URI = "sqlite:///mlruns/mlflow.db"
_SQLITE = "sqlite:///"


def tracking_uri(explicit: str | None = None) -> str:
    """The MLflow store URI by the rule above.

    >>> import os; saved = {k: os.environ.pop(k, None) for k in ("FACTLAB_MLFLOW_URI", "MLFLOW_TRACKING_URI")}
    >>> tracking_uri("sqlite:////tmp/x.db")
    'sqlite:////tmp/x.db'
    >>> tracking_uri().startswith("sqlite:////") and tracking_uri().endswith("/mlruns/mlflow.db")
    True
    >>> _ = [os.environ.__setitem__(k, v) for k, v in saved.items() if v is not None]
    """
    uri = (explicit or os.environ.get("FACTLAB_MLFLOW_URI") or os.environ.get("MLFLOW_TRACKING_URI")
           or DEFAULT_TRACKING_URI)
    if uri.startswith(_SQLITE) and not uri.startswith(_SQLITE + "/"):
        uri = f"{_SQLITE}{Path(uri[len(_SQLITE):]).resolve()}"
    return uri


def sqlite_path(uri: str) -> Path | None:
    """The database file of a sqlite store URI (None for any other store).

    >>> sqlite_path("sqlite:////tmp/m.db"), sqlite_path("http://mlflow:5000")
    (PosixPath('/tmp/m.db'), None)
    """
    return Path(uri[len(_SQLITE):]) if uri.startswith(_SQLITE) else None
