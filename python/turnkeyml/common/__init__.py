"""Helpers shared with users' code: `labels.load_from_cache`."""
