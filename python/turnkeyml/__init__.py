"""turnkey's Python side: discovery of PyTorch models in user scripts, and `parser.parse`."""

__version__ = "0.1.0"
