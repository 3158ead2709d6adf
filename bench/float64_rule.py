#!/usr/bin/env python3
"""How far a runtime's float32 outputs land from PyTorch's float64 ones on models that amplify
rounding, against PyTorch's own float32 outputs: the calibration of turnkey's float64 rule
(docs/measurement.md, "Models that amplify float32 rounding"; kFloat64ErrorFactor in
src/benchmark/benchmark_judge.cpp).

    bench/float64_rule.py [--seeds N] [--turnkey BIN] [--out DIR] [-- TURNKEY ARGS]
    bench/float64_rule.py --read DIR      (the table again from an earlier run's --out DIR)

Writes random tanh networks in their chaotic regime (64 wide, 32 and 40 layers, weights of gain
3; seeds 0..N-1, default 40) as one script each, twice: clean, and with an export error (while
torch.onnx exports it, the middle layer's weights are rounded to float16: a relative error of
about 5e-4, a layer written at the wrong precision). Runs turnkey over them (default sequence,
one iteration; the float64 outputs are asked for when the runtime's are outside the float32
tolerance) and reads each build's correctness.float64 record. For the networks that amplify
rounding and that float32 can still compute (the rule's domain), prints the runtime's error
against float64 in units of PyTorch's own (max rel error, and 1 - cosine), their spread, and for
factors k = 2..5 how many clean networks a tolerance of k times PyTorch's error (k squared for
1 - cosine) would call a mismatch, and how many export errors it would catch; and the same for
the rule before 2026-11-30 (twice PyTorch's max rel error and twice its 1 - cosine).
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEPTHS = (32, 40)
FACTORS = (2, 2.5, 3, 4, 5)

NETWORK = '''import torch


def run(seed, depth, miscompiled):
    torch.manual_seed(seed)
    layers = []
    for _ in range(depth):
        linear = torch.nn.Linear(64, 64, bias=False)
        torch.nn.init.normal_(linear.weight, std=3.0 / 8)
        layers.append(linear)

    class Chaotic(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.ModuleList(layers)

        def forward(self, x):
            for i, linear in enumerate(self.body):
                w = linear.weight
                if miscompiled and i == depth // 2 and torch.onnx.is_in_onnx_export():
                    w = w.half().float()
                x = torch.tanh(torch.nn.functional.linear(x, w))
            return x

    model = Chaotic().eval()
    with torch.no_grad():
        model(torch.randn(64, 64))
'''


def write_scripts(folder, seeds):
    (folder / "chaotic_net.py").write_text(NETWORK)
    scripts = []
    for miscompiled in (False, True):
        for depth in DEPTHS:
            for seed in range(seeds):
                name = f"{'bad' if miscompiled else 'ok'}_d{depth}_s{seed}.py"
                (folder / name).write_text(
                    f"from chaotic_net import run\n\nrun({seed}, {depth}, {miscompiled})\n")
                scripts.append(folder / name)
    return scripts


def ratios(cache):
    """{'ok': [(rel ratio, 1-cos ratio)], 'bad': [...]} over the builds in the rule's domain."""
    out = {"ok": [], "bad": []}
    for stats_file in sorted(cache.glob("*/turnkey_stats.yaml")):
        stats = yaml.safe_load(stats_file.read_text())
        f64 = (stats.get("correctness") or {}).get("float64")
        if not f64 or not f64.get("amplifies_float32_rounding"):
            continue
        own, runtime = f64["pytorch_float32"], f64["runtime"]
        if own["cosine"] < 0.99:  # float32 cannot compute it: inconclusive, no rule applies
            continue
        kind = "bad" if stats_file.parent.name.startswith("bad_") else "ok"
        out[kind].append((runtime["max_rel_error"] / own["max_rel_error"],
                          (1 - runtime["cosine"]) / max(1 - own["cosine"], 1e-300)))
    return out


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def report(found):
    for kind, label in (("ok", "clean"), ("bad", "export error")):
        rows = found[kind]
        if not rows:
            print(f"{label}: no network in the rule's domain")
            continue
        for i, metric in ((0, "max rel error"), (1, "1 - cosine")):
            v = [r[i] for r in rows]
            print(f"{label:12s} {metric:13s} runtime / PyTorch: min {min(v):.2f}  "
                  f"p10 {quantile(v, 0.1):.2f}  median {quantile(v, 0.5):.2f}  "
                  f"p90 {quantile(v, 0.9):.2f}  max {max(v):.2f}  (n={len(v)})")
    print("\n| tolerance: PyTorch's error times | clean networks called a mismatch | "
          "export errors caught |\n|---|---|---|")
    ok, bad = found["ok"], found["bad"]
    rules = [(f"{k:g} (1 - cosine: {k * k:g})", k, k * k) for k in FACTORS]
    rules.append(("2 (1 - cosine: 2; the rule until 2026-11-30)", 2, 2))
    for label, rel_factor, cos_factor in rules:
        def outside(rows):
            return sum(1 for rel, cos in rows if rel > rel_factor or cos > cos_factor)
        print(f"| {label} | {outside(ok)} of {len(ok)} | {outside(bad)} of {len(bad)} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--turnkey", default=str(ROOT / "build" / "turnkey"))
    parser.add_argument("--out", help="folder for the scripts and the cache (default: a temp dir)")
    parser.add_argument("--read", help="only print the table of an earlier run's --out DIR")
    parser.add_argument("turnkey_args", nargs="*", help="more arguments for turnkey, after --")
    args = parser.parse_args()
    if args.read:
        report(ratios(pathlib.Path(args.read) / "cache"))
        return
    folder = pathlib.Path(args.out or tempfile.mkdtemp(prefix="float64_rule_"))
    folder.mkdir(parents=True, exist_ok=True)
    scripts = write_scripts(folder, args.seeds)
    cache = folder / "cache"
    command = [args.turnkey, *map(str, scripts), "-d", str(cache), "--iterations", "1",
               *args.turnkey_args]
    print(f"float64_rule: {len(scripts)} scripts in {folder}", file=sys.stderr, flush=True)
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    if done.returncode not in (0, 1):
        sys.exit(f"float64_rule: turnkey ended with {done.returncode}")
    report(ratios(cache))


if __name__ == "__main__":
    main()
