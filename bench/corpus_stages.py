#!/usr/bin/env python3
"""Where a corpus run's time went, from its cache's input records (docs/corpus_runs.md): for each
input, the seconds from its start to its end split by stage (discover: the script's run, its
imports, model construction and first call; export-pytorch and the other build tools; benchmark:
waiting for the benchmark slot, the timed run, the correctness check), summed per group of
inputs and in all. An input's group is the folder its script lives in (a symbolic link is
followed: a folder of links to models/timm and models/transformers gives a row for each).

    bench/corpus_stages.py CACHE_DIR

Reads <cache>/inputs/<input>.yaml (the record: input, status) and <input>.progress.jsonl (the
events the input's worker wrote: stage changes, the benchmark's own start and end, done).
"""

import collections
import datetime
import json
import os
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


def main(argv):
    if len(argv) != 2 or not os.path.isdir(os.path.join(argv[1], "inputs")):
        print("usage: bench/corpus_stages.py CACHE_DIR (a turnkey cache with inputs/)",
              file=sys.stderr)
        return 2
    inputs_dir = os.path.join(argv[1], "inputs")
    groups = collections.defaultdict(collections.Counter)
    counts = collections.Counter()
    spans = collections.Counter()
    for name in sorted(os.listdir(inputs_dir)):
        if not name.endswith(".progress.jsonl"):
            continue
        stem = name[: -len(".progress.jsonl")]
        record_path = os.path.join(inputs_dir, stem + ".yaml")
        record = _record(record_path) if os.path.exists(record_path) else {}
        script = record.get("input", "")
        group = os.path.basename(os.path.dirname(os.path.realpath(script))) if script else "?"
        seconds, span = stage_seconds(os.path.join(inputs_dir, name))
        groups[group].update(seconds)
        counts[group] += 1
        spans[group] += span
    stages = sorted({s for g in groups.values() for s in g}, key=lambda s: (s != "discover", s))
    # A Markdown table: docs/corpus.md takes it as printed.
    print("| group | inputs | seconds | " + " | ".join("%s s (share)" % s for s in stages) + " |")
    print("|---" * (3 + len(stages)) + "|")
    for group in sorted(groups) + ["all"]:
        if group == "all":
            total = sum(groups.values(), collections.Counter())
            n, span = sum(counts.values()), sum(spans.values())
        else:
            total, n, span = groups[group], counts[group], spans[group]
        cells = ["%.0f (%.0f%%)" % (total[s], 100 * total[s] / span if span else 0)
                 for s in stages]
        print("| %s | %d | %.0f | %s |" % (group, n, span, " | ".join(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
