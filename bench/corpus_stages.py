#!/usr/bin/env python3
"""Where a corpus run's time went, from its cache's input records (docs/corpus_runs.md): for each
input, the seconds from its start to its end split by stage (discover: the script's run, its
imports, model construction and first call; export-pytorch and the other build tools; benchmark:
waiting for the benchmark slot, the timed run, the correctness check), summed per group of
inputs and in all. An input's group is the folder its script lives in (a symbolic link is
followed: a folder of links to models/timm and models/transformers gives a row for each).

    bench/corpus_stages.py CACHE_DIR

Reads <cache>/inputs/<input>.yaml (the record: input, status, builds) and <input>.progress.jsonl
(the events the input's worker wrote: stage changes, the benchmark's own start and end, done).

A second table splits the PyTorch exports by phase, from each build's log_export-pytorch.txt,
whose lines printed from Python carry their time ("[+812.4 s] [torch.onnx] Run
decompositions... ✅"): the dynamo exporter's phases and the writing of its file, the
TorchScript exporter's run where dynamo failed, reading the file back for the checker, the
float64 reference run (from turnkey's own lines of each step; since 8ca7fec only a model over
256 MiB has it in its export: the others' is made on demand, in the benchmark), the rest as
"other". Logs
written before the stamps (turnkey before f8a99fb) are left out of it; before 6c607c8 they
have no step lines, and all but the dynamo phases is "other".
"""

import collections
import datetime
import json
import os
import re
import sys


def _time(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _record(path):
    """The record's top-level `key: "value"` strings (turnkey writes one per line)."""
    fields = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if ":" in line and not line.startswith(" "):
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip().strip('"')
    return fields


def stage_seconds(progress_path):
    """{stage: seconds} of one input, and its whole span; the timed benchmark is its own entry
    (benchmark run), the rest of the benchmark stage stays under benchmark."""
    events = []
    with open(progress_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                events.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a kill
    events = [e for e in events if isinstance(e, dict) and "t" in e]
    if not events:
        return {}, 0.0
    seconds = collections.Counter()
    stage, since = None, None
    bench_start = None
    for event in events:
        now = _time(event["t"])
        if event.get("e") in ("stage", "done") and stage is not None:
            seconds[stage] += now - since
        if event.get("e") == "stage":
            stage, since = event.get("stage"), now
        elif event.get("e") == "done":
            stage = None
        elif event.get("e") == "benchmark" and event.get("phase") == "start":
            bench_start = now
        elif event.get("e") == "benchmark" and event.get("phase") == "end" and bench_start:
            seconds["benchmark run"] += now - bench_start
            seconds["benchmark"] -= now - bench_start
            bench_start = None
    return seconds, _time(events[-1]["t"]) - _time(events[0]["t"])


# "[+12.3 s] [torch.onnx] Run decompositions..." starts a phase, the same line ending in a mark
# ends it; the phase's name is its words before " for `..." (the graph obtained names its method).
_PHASE = re.compile(r"^\[\+([0-9.]+) s\] \[torch\.onnx\] (.+?)\.\.\.( \S+)?\s*$")
_EXPORTED = re.compile(r"^exported .* in ([0-9.]+) s$")
# turnkey's own lines of the export's steps (python/turnkeyml/discovery/export.py), by phase.
_STEPS = ((re.compile(r"^the (\w+) exporter ran ([0-9.]+) s$"), None),
          (re.compile(r"^read back and checked in ([0-9.]+) s$"), "read back and checked"),
          (re.compile(r"^float64 reference outputs in ([0-9.]+) s$"), "float64 reference"))


def export_phases(text):
    """{phase: seconds} of one export log: the dynamo exporter's stamped phases, the rest of its
    run ("dynamo: after its phases (writing)": the file is saved after its last phase; where
    it failed, the time to its failure), another exporter's whole run, the checker's and the
    float64 reference's; "other" is the rest of its "exported ... in N s". {} where the log has
    no timing line or no total (a failed export)."""
    seconds, started, total, ran = collections.Counter(), {}, None, collections.Counter()
    for line in text.splitlines():
        found = _PHASE.match(line)
        if found:
            at, name, mark = float(found.group(1)), found.group(2).split(" for `")[0], found.group(3)
            if mark is None:
                started[name] = at
            elif name in started:
                seconds[name] += at - started.pop(name)
        for pattern, phase in _STEPS:
            step = pattern.match(line)
            if step and phase is None:
                ran[step.group(1)] += float(step.group(2))
            elif step:
                seconds[phase] += float(step.group(1))
        found = _EXPORTED.match(line)
        if found:
            total = float(found.group(1))
    if not seconds or total is None:
        return {}
    if ran["dynamo"]:  # the exporter's run less its phases: writing the file
        seconds["dynamo: after its phases (writing)"] = max(0.0, ran.pop("dynamo") - sum(
            v for k, v in seconds.items() if k not in ("read back and checked",
                                                        "float64 reference")))
    for exporter, spent in ran.items():
        seconds["%s exporter" % exporter] += spent
    seconds["other"] = max(0.0, total - sum(seconds.values()))
    return seconds


def _builds(record_path):
    """The build names an input record lists (`  - build: "name"`)."""
    with open(record_path, encoding="utf-8", errors="replace") as f:
        return re.findall(r'^  - build: "([^"]+)"', f.read(), re.M)


def _table(rows, columns, first):
    """Prints a Markdown table: one row per group and "all", each column's seconds and share of
    the group's whole (rows: {group: (count, whole seconds, Counter)})."""
    print("| group | %s | seconds | " % first
          + " | ".join("%s s (share)" % c for c in columns) + " |")
    print("|---" * (3 + len(columns)) + "|")
    for group in sorted(rows) + ["all"]:
        if group == "all":
            n = sum(r[0] for r in rows.values())
            whole = sum(r[1] for r in rows.values())
            total = sum((r[2] for r in rows.values()), collections.Counter())
        else:
            n, whole, total = rows[group]
        cells = ["%.0f (%.0f%%)" % (total[c], 100 * total[c] / whole if whole else 0)
                 for c in columns]
        print("| %s | %d | %.0f | %s |" % (group, n, whole, " | ".join(cells)))


def main(argv):
    if len(argv) != 2 or not os.path.isdir(os.path.join(argv[1], "inputs")):
        print("usage: bench/corpus_stages.py CACHE_DIR (a turnkey cache with inputs/)",
              file=sys.stderr)
        return 2
    inputs_dir = os.path.join(argv[1], "inputs")
    stages = collections.defaultdict(lambda: [0, 0.0, collections.Counter()])
    phases = collections.defaultdict(lambda: [0, 0.0, collections.Counter()])
    for name in sorted(os.listdir(inputs_dir)):
        if not name.endswith(".progress.jsonl"):
            continue
        stem = name[: -len(".progress.jsonl")]
        record_path = os.path.join(inputs_dir, stem + ".yaml")
        record = _record(record_path) if os.path.exists(record_path) else {}
        script = record.get("input", "")
        group = os.path.basename(os.path.dirname(os.path.realpath(script))) if script else "?"
        seconds, span = stage_seconds(os.path.join(inputs_dir, name))
        row = stages[group]
        row[0], row[1] = row[0] + 1, row[1] + span
        row[2].update(seconds)
        for build in _builds(record_path) if record else ():
            log = os.path.join(argv[1], build, "log_export-pytorch.txt")
            if os.path.exists(log):
                with open(log, encoding="utf-8", errors="replace") as f:
                    split = export_phases(f.read())
                if split:
                    row = phases[group]
                    row[0], row[1] = row[0] + 1, row[1] + sum(split.values())
                    row[2].update(split)
    if not stages:
        print("bench/corpus_stages.py: %s holds no input's progress events (the cache of a "
              "corpus run, bench/corpus, has them)" % inputs_dir, file=sys.stderr)
        return 1
    # Markdown tables: docs/corpus.md takes them as printed.
    names = sorted({s for r in stages.values() for s in r[2]}, key=lambda s: (s != "discover", s))
    _table(stages, names, "inputs")
    if phases:
        print()
        names = sorted({p for r in phases.values() for p in r[2]}, key=lambda p: (p == "other", p))
        _table(phases, names, "exports")
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv))
