"""Evidence from the web: search backends (search.py), page fetching (fetch.py)."""
