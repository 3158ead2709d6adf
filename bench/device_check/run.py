"""The run mode of bench/device-check, on the GPU machine (or with --device x86 here, to try it):
turnkey from the pack on three models with each runtime that can use the device, the bare loop
(bare_loop.py) on the same models for the overhead ratio, the Python side's timing tests, and
the refusals of the runtimes that cannot. Prints a table and writes its logs to $OUT (at most 8
files, each cut to 4 MiB). Every step has a time limit and the whole run a budget: a step that
hangs or fails is reported, and the run goes on.

    python3 bench/device_check/run.py --pack .gpu-pack [--device nvidia] [--budget-s 500]
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = {
    "hello_world": os.path.join(ROOT, "examples/cli/scripts/hello_world.py"),
    "resnet50": os.path.join(HERE, "resnet50.py"),
    "bert": os.path.join(HERE, "bert.py"),
}
LOG_CAP_BYTES = 4 << 20
# What the device machine's interpreter has (the run depends on it).
VERSIONS = """
import importlib, importlib.util, sys
print("python", sys.version.split()[0])
for name in ("torch", "torchvision", "transformers", "onnx", "onnxscript", "onnxruntime", "timm",
             "numpy", "yaml"):
    if importlib.util.find_spec(name) is None:
        print(name, "absent")
    else:
        print(name, getattr(importlib.import_module(name), "__version__", "?"))
import torch
print("torch.version.cuda", torch.version.cuda, "cuda available", torch.cuda.is_available())
"""
OVERHEAD_BUDGET = 1.05


class Logs:
    """The files that go back in $OUT: each a list of sections, written at the end (and after
    every step, so a run killed at its limit still leaves what it did)."""

    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.files = {}

    def add(self, name, title, text):
        self.files.setdefault(name, []).append("==== %s\n%s\n" % (title, text))
        self.flush(name)

    def flush(self, name):
        text = "".join(self.files[name])
        if len(text) > LOG_CAP_BYTES:  # the head and the tail of what a runaway step printed
            half = LOG_CAP_BYTES // 2
            text = text[:half] + "\n[... %d bytes cut ...]\n" % (len(text) - 2 * half) + \
                text[-half:]
        with open(os.path.join(self.out_dir, name), "w") as f:
            f.write(text)


def run(argv, timeout_s, env=None, cwd=None):
    """(exit code or 'timeout', stdout+stderr, seconds); the whole process group is killed at
    the limit."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                cwd=cwd, start_new_session=True)
    except OSError as error:
        return 127, "%s: %s" % (argv[0], error), 0.0
    try:
        out, _ = proc.communicate(timeout=max(1, timeout_s))
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        code = "timeout"
    return code, out.decode("utf-8", "replace"), time.monotonic() - start


def stats_text(cache):
    """The turnkey_stats.yaml of the one build in `cache`, or ""."""
    paths = glob.glob(os.path.join(cache, "*", "turnkey_stats.yaml"))
    return open(max(paths, key=os.path.getmtime)).read() if paths else ""


def read_stats(text):
    """The latest result of a turnkey_stats.yaml text (its top level), or {}."""
    if not text:
        return {}
    try:
        import yaml
        return yaml.safe_load(text) or {}
    except ImportError:  # top-level scalars and the verdict are enough for the table
        stats = {}
        for key, value in re.findall(r"^([a-z_0-9]+): *([^\n]+)$", text, re.M):
            stats.setdefault(key, value.strip().strip("'\""))
        verdict = re.search(r"^correctness:\n(?:  .*\n)*?  verdict: *(\S+)", text, re.M)
        if verdict:
            stats["correctness"] = {"verdict": verdict.group(1)}
        return stats


def reason_of(output):
    """The one line a failed turnkey run gave for its failure."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for pattern in (r"unavailable|does not run on|has no CUDA|can use no GPU",
                    r"Error|failed|error"):
        for line in lines:
            if re.search(pattern, line) and not line.startswith("Traceback"):
                return re.sub(r"^Status:\s*", "", line)[:300]
    return lines[-1][:300] if lines else "no output"


def mib(value):
    try:
        return "%.0f" % (float(value) / (1 << 20))
    except (TypeError, ValueError):
        return "-"


class Check:
    def __init__(self, args):
        self.args = args
        self.pack = os.path.abspath(args.pack)
        self.started = time.monotonic()
        self.deadline = self.started + args.budget_s
        self.work = tempfile.mkdtemp(prefix="tk-device-check-")
        self.logs = Logs(args.out)
        self.rows = []
        self.results = []
        self.env = dict(os.environ, TURNKEY_BUILD_MONITOR="False", HF_HUB_OFFLINE="1",
                        TRANSFORMERS_OFFLINE="1", TURNKEY_STATE_DIR=os.path.join(self.work, "state"),
                        PYTHONUNBUFFERED="1")
        if args.python:
            self.env["TURNKEY_PYTHON"] = args.python  # turnkey's and the bare loop's interpreter

    def left(self, wanted):
        """Seconds a step may take: its own limit within what the budget has left, or 0."""
        left = self.deadline - time.monotonic() - 5
        return 0 if left < 20 else min(wanted, left)

    def record(self, result):
        """Keeps a step's result, says it in one line, and rewrites results.json (a run killed at
        its limit still leaves what it did)."""
        self.results.append(result)
        print("[%5.0f s] %s: %s" % (time.monotonic() - self.started, result["step"],
                                   result.get("skipped") or "exit %s in %s s%s" % (
                                       result.get("exit"), result.get("seconds"),
                                       ": " + result["reason"] if result.get("reason") else "")),
              flush=True)
        with open(os.path.join(self.args.out, "results.json"), "w") as f:
            json.dump(self.results, f, indent=1, default=str)

    def skipped(self, what):
        self.record({"step": what, "skipped": "skipped: the run's time budget is spent"})
        self.logs.add("turnkey.log", what, "skipped: the run's time budget is spent")

    def turnkey(self, model, runtime, iterations, timeout_s):
        step = "%s %s" % (runtime, model)
        limit = self.left(timeout_s)
        if not limit:
            return self.skipped(step)
        cache = os.path.join(self.work, "cache-%s-%s" % (runtime, model))
        argv = [os.path.join(self.pack, "turnkey"), MODELS[model], "--runtime", runtime,
                "--device", self.args.device, "--iterations", str(iterations), "-d", cache]
        code, out, seconds = run(argv, limit, self.env, cwd=self.work)
        self.logs.add("turnkey.log", "%s (exit %s, %.1f s): %s" % (step, code, seconds,
                                                                   " ".join(argv)), out)
        text = stats_text(cache)
        self.logs.add("stats.yaml", step, text or "(no stats)")
        stats = read_stats(text)
        keep = {k: stats.get(k) for k in (
            "median_latency_ms", "harness_overhead_ms", "device_name", "runtime_version",
            "device_memory_allocated_bytes", "device_memory_reserved_bytes", "tf32_matmul",
            "tf32_cudnn", "max_rel_error", "min_cosine", "compile_s", "load_s", "iterations",
            "peak_memory_bytes", "model_memory_bytes", "measurement_flags") if k in stats}
        keep["environment"] = {k: v for k, v in (stats.get("environment") or {}).items()
                               if "gpu" in k or "cuda" in k or "driver" in k or "cudnn" in k}
        verdict = (stats.get("correctness") or {}).get("verdict", "-") if isinstance(
            stats.get("correctness"), dict) else "-"
        result = {"step": step, "model": model, "runtime": runtime, "exit": code,
                  "seconds": round(seconds, 1), "verdict": verdict, "stats": keep}
        if code != 0:
            result["reason"] = reason_of(out) if code != "timeout" else "timed out after %d s" % limit
        self.record(result)
        return result

    def bare(self, model, compiled, iterations, timeout_s):
        step = "bare%s %s" % (" compiled" if compiled else "", model)
        limit = self.left(timeout_s)
        if not limit:
            self.skipped(step)
            return None
        argv = [self.args.python or "python3", os.path.join(HERE, "bare_loop.py"), MODELS[model],
                "--device", self.args.device, "--iterations", str(iterations),
                "--warmup", str(self.args.warmup)] + (["--compile"] if compiled else [])
        code, out, seconds = run(argv, limit, self.env, cwd=self.work)
        self.logs.add("bare.log", "%s (exit %s, %.1f s)" % (step, code, seconds), out)
        found = re.search(r"^BARE_LOOP (\{.*\})$", out, re.M)
        result = json.loads(found.group(1)) if found else None
        self.record({"step": step, "exit": code, "seconds": round(seconds, 1), "bare": result,
                     "reason": None if found else reason_of(out)})
        return result

    def pair(self, model, runtime, timeout_s):
        """turnkey and the bare loop on one model, alternated for --rounds rounds (a launch-bound
        model's median moves between processes by more than the budget: one run each says
        little, docs/gpu.md): one row of the table, each side the median of its round medians."""
        tks, bares = [], []
        for _ in range(max(1, self.args.rounds)):
            tk = self.turnkey(model, runtime, self.args.iterations, timeout_s)
            tks.append(tk)
            if not tk or tk.get("exit") != 0:
                break
            bare = self.bare(model, runtime == "torch-compiled", self.args.iterations, timeout_s)
            if not bare:
                break
            bares.append(bare)
        self.row(model, runtime, tks, bares)

    def row(self, model, runtime, tks, bares):
        tks = [tk for tk in tks if tk]
        if not tks:
            self.rows.append((runtime, model, "-", "-", "-", "-", "-", "skipped (time budget)"))
            return
        tk = tks[-1]
        stats = tk.get("stats", {})
        medians = [float(t["stats"]["median_latency_ms"]) for t in tks
                   if t.get("stats", {}).get("median_latency_ms") is not None]
        bare_medians = [b["median_ms"] for b in bares if b.get("median_ms")]
        median = statistics.median(medians) if medians else None
        bare_median = statistics.median(bare_medians) if bare_medians else None
        ratio = "-"
        note = tk.get("reason") or ""
        if median is not None and bare_median:
            value = median / bare_median
            ratio = "%.3f%s" % (value, "" if value <= OVERHEAD_BUDGET else " (over 1.05)")
            if len(bare_medians) > 1:
                note = "rounds: " + " ".join("%.3f" % (t / b) for t, b in
                                             zip(medians, bare_medians))
        elif tk.get("exit") == 0 and runtime.startswith("torch-"):
            note = note or "no bare loop result (bare.log)"
        memory = "-"
        if "device_memory_allocated_bytes" in stats:
            memory = "%s/%s" % (mib(stats["device_memory_allocated_bytes"]),
                                mib(stats.get("device_memory_reserved_bytes")))
        if "tf32_cudnn" in stats:
            note = (note + "; " if note else "") + "tf32 matmul=%s cudnn=%s" % (
                stats.get("tf32_matmul"), stats.get("tf32_cudnn"))
        self.rows.append((runtime, model, "%.4f" % median if median is not None else "-",
                          "%.4f" % bare_median if bare_median else "-", ratio, tk["verdict"],
                          memory, note))

    def environment(self):
        lines = []
        for argv in (
                ["nvidia-smi"],
                [os.path.join(self.pack, "turnkey"), "version"],
                [os.path.join(self.pack, "turnkey"), "system-info"],
                [self.args.python or "python3", "-c", VERSIONS],
                [os.path.join(self.pack, "turnkey"), "--pack-libraries"]):
            code, out, _ = run(argv, self.left(60) or 1, self.env, cwd=self.work)
            lines.append("$ %s (exit %s)\n%s" % (" ".join(argv[:2]), code, out))
        self.logs.add("env.txt", "environment", "\n".join(lines))

    def tests(self):
        limit = self.left(120)
        if not limit:
            return self.skipped("test_timing.py")
        env = dict(self.env, PYTHONPATH=os.path.join(ROOT, "python"))
        code, out, seconds = run([self.args.python or "python3",
                                  os.path.join(ROOT, "tests/python/test_timing.py"), "-v"],
                                 limit, env, cwd=self.work)
        self.logs.add("test_timing.log", "exit %s, %.1f s" % (code, seconds), out)
        self.record({"step": "test_timing.py", "exit": code, "seconds": round(seconds, 1),
                     "summary": (out.strip().splitlines() or ["?"])[-1]})

    def table(self):
        head = ("runtime", "model", "turnkey ms", "bare ms", "ratio", "correctness",
                "dev MiB alloc/resv", "note")
        rows = [head] + [tuple(str(c) for c in r) for r in self.rows]
        widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
        return "\n".join("  ".join(r[i].ljust(widths[i]) for i in range(len(widths))) + "  " +
                         r[-1] for r in rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack", default=os.path.join(ROOT, ".gpu-pack"))
    parser.add_argument("--device", choices=("nvidia", "x86"), default="nvidia")
    parser.add_argument("--python", default=os.environ.get("TURNKEY_PYTHON"),
                        help="interpreter with torch (default: TURNKEY_PYTHON, else python3 on "
                        "PATH)")
    parser.add_argument("--models", default="hello_world,resnet50,bert")
    parser.add_argument("--runtimes", default="torch-eager,torch-compiled")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2,
                        help="turnkey and the bare loop alternated this many times per row")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--budget-s", type=float, default=480)
    parser.add_argument("--out", default=os.environ.get("OUT") or "device-check-out")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    check = Check(args)
    check.environment()
    models = [m for m in args.models.split(",") if m]
    runtimes = [r for r in args.runtimes.split(",") if r]
    # Eager first (cheap, most informative), then the refusals and tests, compiled last (the
    # inductor's compiles take the longest).
    for runtime in [r for r in runtimes if r != "torch-compiled"]:
        for model in models:
            check.pair(model, runtime, 150)
    for runtime in ("ort", "torchscript"):
        tk = check.turnkey("hello_world", runtime, args.iterations, 90)
        check.row("hello_world", runtime, [tk], [])
    check.tests()
    if "torch-compiled" in runtimes:
        for model in models:
            check.pair(model, "torch-compiled", 240)
    gpus = [r["bare"]["gpu"] for r in check.results if (r.get("bare") or {}).get("gpu")]
    summary = ("device check on %s%s, %.0f s\n%s\n\nratio: turnkey's median over the bare "
               "loop's, each the median of its rounds' medians, turnkey and bare alternated "
               "(budget <= %.2f); dev MiB: torch's CUDA allocator peaks, allocated/reserved\n" % (
                   args.device, " (%s)" % gpus[0] if gpus else "", time.monotonic() - check.started,
                   check.table(), OVERHEAD_BUDGET))
    tests = [r for r in check.results if r["step"] == "test_timing.py"]
    if tests:
        summary += "test_timing.py: %s\n" % (tests[0].get("skipped") or "exit %s, %s" % (
            tests[0]["exit"], tests[0]["summary"]))
    print(summary)
    check.logs.add("summary.txt", "summary", summary)
    shutil.rmtree(check.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
