"""The review loop: a person accepts, rejects or revises each card (factlab/review/app.py), the decisions are kept in
SQLite (store.py) and flow back into training rows, thresholds and product metrics (feedback.py)."""
