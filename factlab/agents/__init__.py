"""Agents built on the pipeline's pieces: multi-round search checkers (conf/agent/<name>.yaml)."""
