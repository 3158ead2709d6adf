"""`turnkeyml.filesystem`: the reference documents' spelling of turnkeyml.common.filesystem."""

from .common.filesystem import DEFAULT_CACHE_DIR, MODELS_DIR  # noqa: F401
