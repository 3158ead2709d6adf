# labels: domain::computer_vision task::classification
"""benchmark_model on a torchvision model (docs/python_api.md).

    python3 examples/api/benchmark_torchvision.py [resnet18|mobilenet_v2|...] [--runtime ort]

The model is exported to ONNX, benchmarked by turnkey's C++ engine and cached under
~/.cache/turnkey (or TURNKEY_CACHE_DIR) as benchmark_torchvision_<hash8>; a second run reuses
the export.
"""
import argparse

import torch
import torchvision

from turnkeyml import benchmark_model

parser = argparse.ArgumentParser()
parser.add_argument("model", nargs="?", default="resnet18")
parser.add_argument("--runtime", default="ort")
parser.add_argument("--iterations", type=int, default=100)
args = parser.parse_args()

torch.manual_seed(0)  # same weights, same hash, same build on every run
model = getattr(torchvision.models, args.model)(weights=None)
inputs = {"x": torch.rand(1, 3, 224, 224)}

perf = benchmark_model(model, inputs, runtime=args.runtime, iterations=args.iterations)

print("\n%s on %s (%s %s):" % (args.model, perf.device_name, perf.runtime, perf.runtime_version))
print("  mean latency   %.3f %s" % (perf.mean_latency, perf.latency_units))
print("  throughput     %.1f %s" % (perf.throughput, perf.throughput_units))
print("  median         %.3f ms, 95%% CI [%.3f, %.3f]" % ((perf.median_latency,) +
                                                         perf.median_latency_ci))
print("  p90 / p99      %.3f / %.3f ms over %d iterations" % (perf.p90_latency,
                                                             perf.p99_latency, perf.iterations))
print("  build          %s" % perf.build_dir)
