"""Runs a user script under hooks, reports its models to the C++ core, exports them on request.

Entry point: `python -m turnkeyml.discovery.runner` (see docs/protocol.md).
"""
