"""The end-to-end pipeline's outputs: verify cards (JSON) and the self-contained HTML report."""
