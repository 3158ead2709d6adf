"""turnkey's Python side: the Python API (benchmark_model, build_model, benchmark_files), model
discovery in user scripts, `parser.parse` and `common.labels`.

The API is loaded on first use: the discovery runner imports this package before it may import
torch (see turnkeyml.discovery.runner), so nothing here imports torch.
"""

__version__ = "0.1.0"

_API = ("benchmark_model", "build_model", "benchmark_files", "MeasuredPerformance",
        "TurnkeyError", "turnkey_binary")
__all__ = list(_API)


def __getattr__(name):
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError("module 'turnkeyml' has no attribute %r" % name)
