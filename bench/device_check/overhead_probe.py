"""Where turnkey's torch runtimes on nvidia spend time a bare loop does not (bench/device-check
showed turnkey / bare = 1.27 on resnet50 eager, 1.79 compiled on an H200): the bare loop of
bare_loop.py again, in one process, with one of turnkey's conditions added at a time:
  plain      the bare loop
  hooked     turnkey's discovery hook installed (Tracker: Module.__call__ patched) while the
             script runs and while the loop runs, as in turnkey's Python side
  threads    torch.set_num_threads(os.cpu_count()) as turnkey's default sets it
  keep-out   the loop keeps each call's output alive until the next call (as timing.py does)
Prints one line per condition: median ms of 200 CUDA-event-timed calls after 50 warm-ups.

    python3 overhead_probe.py SCRIPT [--compile]
"""
import argparse
import os
import runpy
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))


def timed(call, inputs, keep):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples, out = [], None
    with torch.inference_mode():
        for _ in range(50):
            out = call(**inputs)
        torch.cuda.synchronize()
        for _ in range(200):
            start.record()
            if keep:
                out = call(**inputs)
            else:
                call(**inputs)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("script")
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    sys.argv = [args.script]
    tracker = None
    names = runpy.run_path(args.script, run_name="__main__")
    model = names.get("model", names.get("pytorch_model")).eval().to("cuda")
    inputs = {k: v.to("cuda") for k, v in names["inputs"].items()}
    call = torch.compile(model) if args.compile else model
    results = {"plain": timed(call, inputs, False)}
    results["keep-out"] = timed(call, inputs, True)
    torch.set_num_threads(os.cpu_count())
    results["threads"] = timed(call, inputs, False)
    from turnkeyml.discovery.hooks import Tracker
    tracker = Tracker(lambda *a, **k: None, os.path.abspath(args.script))
    tracker.install()
    results["hooked"] = timed(call, inputs, False)
    tracker.uninstall()
    results["plain again"] = timed(call, inputs, False)
    for name, ms in results.items():
        print("%-12s %-9s %.4f ms  (x%.3f)" % (os.path.basename(args.script),
                                                "compiled" if args.compile else "eager",
                                                ms, ms / results["plain"]))


if __name__ == "__main__":
    main()
