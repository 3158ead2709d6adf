"""The bare loop the device check compares turnkey with (bench/device-check): a script's `model`
(or `pytorch_model`) on its `inputs`, in plain Python with nothing of turnkey's. The same call
as turnkey's torch runtimes make (eval, torch.inference_mode, model(**inputs) on copies moved to
the device; torch.compile's defaults for --compile), timed the same way: on nvidia two CUDA
events around each call, synchronised after it; on x86 perf_counter_ns. Prints one JSON line:
median_ms, iterations, and on nvidia the allocator's peaks.

    python3 bare_loop.py SCRIPT --device nvidia [--compile] [--warmup 50] [--iterations 200]
"""

import argparse
import json
import runpy
import statistics
import sys
import time

import torch


def timed_samples(call, inputs, warmup, iterations, cuda):
    """The bare loop itself: `warmup` calls, then `iterations` calls each timed (ms) between two
    CUDA events synchronised after the call (cuda), else with perf_counter_ns. gap_probe.py
    interleaves this same loop with turnkey's."""
    samples = []
    with torch.inference_mode():
        for _ in range(warmup):
            call(**inputs)
        if cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            for _ in range(iterations):
                start.record()
                call(**inputs)
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end))
        else:
            for _ in range(iterations):
                t0 = time.perf_counter_ns()
                call(**inputs)
                samples.append((time.perf_counter_ns() - t0) / 1e6)
    return samples


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("script")
    parser.add_argument("--device", choices=("x86", "nvidia"), default="nvidia")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=200)
    args = parser.parse_args()

    sys.argv = [args.script]
    names = runpy.run_path(args.script, run_name="__main__")
    model = names.get("model", names.get("pytorch_model"))
    inputs = names["inputs"]
    model.eval()
    cuda = args.device == "nvidia"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        model.to("cuda")
        inputs = {k: v.to("cuda") for k, v in inputs.items()}
    call = torch.compile(model) if args.compile else model
    samples = timed_samples(call, inputs, args.warmup, args.iterations, cuda)
    result = {"median_ms": statistics.median(samples), "iterations": len(samples),
              "torch": torch.__version__}
    if cuda:
        result["device_memory_allocated_bytes"] = torch.cuda.max_memory_allocated()
        result["device_memory_reserved_bytes"] = torch.cuda.max_memory_reserved()
        result["gpu"] = torch.cuda.get_device_name()
    print("BARE_LOOP " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
