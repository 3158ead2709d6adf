"""Where the gap between turnkey and the bare loop on nvidia comes from (bench/device-check
showed turnkey / bare of 1.27-1.69 on resnet50 eager, 1.37-1.79 compiled on an H200, while the
fastest turnkey samples equal the bare median): in ONE process, interleaved in rounds, the
bare loop of bare_loop.py and turnkey's own timed loop (turnkeyml.discovery.timing.Bench, the
object turnkey's Python side times with), each on the same live model, so that anything that
differs between processes (other runnable threads, clocks, the order of runs) hits both alike.

    python3 gap_probe.py SCRIPT [--compile] [--rounds 3] [--calls 200]

Prints, per round, the median ms of each loop and their ratio; the last line is the ratio of
the medians over all rounds' samples. A ratio near 1 here and far from 1 in device-check says
the gap is the process turnkey's side runs in, not the loop.
"""
import argparse
import os
import runpy
import statistics
import sys
import types

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bare_loop  # noqa: E402 (the bare loop itself, beside this file)


def bench_samples(bench, calls, warmup=50):
    bench.run(warmup, False)
    return [ns / 1e6 for ns in bench.run(calls, False)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("script")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    from turnkeyml.discovery import timing

    sys.argv = [args.script]
    names = runpy.run_path(args.script, run_name="__main__")
    model = names.get("model", names.get("pytorch_model")).eval()
    cpu_inputs = names["inputs"]
    entry = types.SimpleNamespace(module=model, captured_args=(), captured_kwargs=cpu_inputs)
    mode = "compiled" if args.compile else "eager"
    # turnkey's object first: it moves the module to the GPU (in place) and, compiled, resets
    # dynamo and compiles; the bare call then uses the same (moved) module.
    device = "nvidia" if torch.cuda.is_available() else "x86"
    bench = timing.Bench(entry, mode, threads=0, cpus=None, device=device)
    inputs = {k: (v.to("cuda") if device == "nvidia" else v) for k, v in cpu_inputs.items()}
    bare_call = torch.compile(model) if args.compile else model
    label = "%s %s" % (os.path.basename(args.script), mode)
    all_bare, all_bench = [], []
    for r in range(args.rounds):
        b = bare_loop.timed_samples(bare_call, inputs, 50, args.calls, device == "nvidia")
        t = bench_samples(bench, args.calls)
        all_bare += b
        all_bench += t
        mb, mt = statistics.median(b), statistics.median(t)
        print("GAP %s round %d: bare %.4f ms (min %.4f), turnkey loop %.4f ms (min %.4f), "
              "ratio %.3f" % (label, r + 1, mb, min(b), mt, min(t), mt / mb), flush=True)
    mb, mt = statistics.median(all_bare), statistics.median(all_bench)
    print("GAP %s on %s" % (label, device))
    print("GAP %s all: bare %.4f ms, turnkey loop %.4f ms, ratio %.3f (threads %d)"
          % (label, mb, mt, mt / mb, torch.get_num_threads()), flush=True)
    bench.release()


if __name__ == "__main__":
    main()
