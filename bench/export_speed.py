"""In-process half of bench/export: turnkey's export function against a plain torch.onnx.export
of the same live model, same inputs, same opset, in this one interpreter.

    python3 bench/export_speed.py SCRIPT [--rounds N] [--opset N] [--exporter E] [--no-grad]
                                  [-- SCRIPT ARGS]
    python3 bench/export_speed.py SCRIPT --plain-once [--opset N] [--exporter E]

--exporter torchscript|dynamo (default torchscript): the same exporter on both sides (the plain
side passes dynamo=True/False where torch.onnx.export has that parameter). --opset defaults to
the exporter's default in turnkey: 17 for torchscript, 18 for dynamo.

Runs SCRIPT with turnkey's discovery hook (as `turnkey SCRIPT` would), takes its largest
top-level model, then alternates, N rounds each:
  turnkey  turnkeyml.discovery.export.export(entry, ...)  (reference forward, trace, ONNX file
           read back, input/output .pb files, the float64 reference run: everything the
           export-pytorch stage asks Python for)
  turnkey no f64  the same without the float64 reference run (--no-float64-reference)
  plain    torch.onnx.export(model, inputs, opset_version=N, input_names, do_constant_folding=True)
           as a user would call it (grad mode left as it is: on)
and prints each side's wall and CPU seconds, medians and turnkey / plain. Also says whether the two ONNX
graphs have the same nodes (op types, in order) and initializers (names aside). --no-grad adds a
third side, the plain export under torch.no_grad() (what grad mode costs the trace; it fails
where a fused fast path has no ONNX export). --plain-once runs the script, exports its model
once the plain way and prints `plain_export_s=SECONDS` (bench/export times that process whole).
"""

import argparse
import os
import runpy
import statistics
import sys
import tempfile
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("TURNKEY_PYTHON_DIR") or os.path.join(_ROOT, "python"))

import torch  # noqa: E402

from turnkeyml.discovery import export, exporter_fixes, inputs  # noqa: E402
from turnkeyml.discovery.hooks import Tracker  # noqa: E402


def discover(script, script_args):
    """The script's largest top-level entry, discovered as turnkey's runner does."""
    tracker = Tracker(lambda *args, **kwargs: None, script)
    sys.argv = [script] + script_args
    sys.path.insert(0, os.path.dirname(script))
    export.load_onnx()
    tracker.install()
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        tracker.uninstall()
    top = [e for e in tracker.entries if e.depth == 0]
    if not top:
        sys.exit("bench/export_speed: %s called no model" % script)
    return max(top, key=lambda e: e.message["parameters"])


def plain_export(entry, path, opset, grad=True, exporter="torchscript"):
    """What a user writes: the model, its call's arguments (keywords as a trailing dict)."""
    args, kwargs = inputs.map_tensors((entry.captured_args, entry.captured_kwargs),
                                      lambda t: t.clone())
    feed = tuple(args) + ((kwargs,) if kwargs else ())
    entry.module.eval()
    with torch.set_grad_enabled(grad):
        torch.onnx.export(entry.module, feed, path, opset_version=opset,
                          input_names=list(entry.input_names),
                          **exporter_fixes.export_arguments(exporter))


def plain_no_grad(entry, path, opset):
    try:
        plain_export(entry, path, opset, grad=False)
    except Exception as error:  # a fused fast path (no ONNX export): say so, go on
        return "fails: %s" % str(error).strip().splitlines()[0][:80]


def graph_summary(path):
    onnx = export.load_onnx()
    graph = onnx.load(path).graph
    return ([n.op_type for n in graph.node],
            sorted(tuple(i.dims) + (i.data_type,) for i in graph.initializer))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("script")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--opset", type=int, default=None)
    parser.add_argument("--exporter", choices=("torchscript", "dynamo"), default="torchscript")
    parser.add_argument("--no-grad", action="store_true")
    parser.add_argument("--plain-once", action="store_true")
    parser.add_argument("script_args", nargs="*")
    options = parser.parse_args()
    if options.opset is None:
        options.opset = 18 if options.exporter == "dynamo" else 17
    script = os.path.abspath(options.script)
    entry = discover(script, options.script_args)
    name = os.path.splitext(os.path.basename(script))[0]
    work = tempfile.mkdtemp()
    sides = {
        "turnkey": lambda path: export.export(entry, path, options.opset, work, {},
                                              [options.exporter]),
        # What the float64 reference run adds (docs/measurement.md): the same export without it.
        "turnkey no f64": lambda path: export.export(entry, path, options.opset, work, {},
                                                     [options.exporter], float64=False),
        "plain": lambda path: plain_export(entry, path, options.opset,
                                           exporter=options.exporter),
    }
    if options.no_grad:
        sides["plain no_grad"] = lambda path: plain_no_grad(entry, path, options.opset)  # torchscript
    if options.plain_once:
        sides = {"plain": sides["plain"]}
        options.rounds = 1
    times = {side: [] for side in sides}
    cpu = {side: [] for side in sides}  # this process's CPU seconds: what a busy machine inflates less
    failed = {}
    for r in range(options.rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(list(sides)))
        for side in order:
            if side in failed:
                continue
            path = os.path.join(work, "%s.onnx" % side.replace(" ", "_"))
            start, start_cpu = time.perf_counter(), time.process_time()
            failure = sides[side](path)
            times[side].append(time.perf_counter() - start)
            cpu[side].append(time.process_time() - start_cpu)
            if isinstance(failure, str):
                failed[side] = failure
    if options.plain_once:
        print("plain_export_s=%.3f" % times["plain"][0])
    else:
        same = graph_summary(os.path.join(work, "turnkey.onnx")) == \
            graph_summary(os.path.join(work, "plain.onnx"))
        for side, t in times.items():
            print("%-12s %-13s export wall s: %s; CPU s: %s"
                  % (name, side, failed.get(side) or " ".join("%.2f" % x for x in t),
                     " ".join("%.2f" % x for x in cpu[side])))
        wall = {side: statistics.median(t) for side, t in times.items()}
        cpu = {side: statistics.median(t) for side, t in cpu.items()}
        print("%-12s in one process: turnkey / plain = %.3f wall (medians %.2f s / %.2f s), "
              "%.3f CPU (%.2f s / %.2f s); %d alternating rounds; same nodes and initializers: %s"
              % (name, wall["turnkey"] / wall["plain"], wall["turnkey"], wall["plain"],
                 cpu["turnkey"] / cpu["plain"], cpu["turnkey"], cpu["plain"], options.rounds,
                 "yes" if same else "no"))
        if "turnkey no f64" not in failed:
            print("%-12s in one process: turnkey / turnkey without the float64 run = %.3f wall, "
                  "%.3f CPU" % (name, wall["turnkey"] / wall["turnkey no f64"],
                                cpu["turnkey"] / cpu["turnkey no f64"]))
        if "plain no_grad" in times and "plain no_grad" not in failed:
            print("%-12s in one process: plain no_grad / plain = %.3f wall, %.3f CPU"
                  % (name, wall["plain no_grad"] / wall["plain"],
                     cpu["plain no_grad"] / cpu["plain"]))
    for f in os.listdir(work):
        os.unlink(os.path.join(work, f))
    os.rmdir(work)


if __name__ == "__main__":
    main()
