"""Failures arrive as turnkeyml.TurnkeyError with turnkey's one-line reason.

    python3 examples/api/errors.py
"""
import torch

from turnkeyml import TurnkeyError, benchmark_model

model = torch.nn.Linear(8, 2)
try:
    benchmark_model(model, torch.rand(1, 8), runtime="tensorrt", monitor=False)
except TurnkeyError as error:
    print("benchmark failed: %s" % error)
    print("its build dir (logs): %s" % error.build_dir)
