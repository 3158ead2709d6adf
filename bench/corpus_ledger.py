#!/usr/bin/env python3
"""The ledger of a corpus run that outlives machines: one line per script (and per build of it)
in a tab-separated file kept in git, so that a run of days goes on from session to session on
whatever machine comes next (a machine and its /work are not kept; the ledger is).

    bench/corpus_ledger.py add LEDGER CORPUS_OUT   # merge a bench/corpus run's finished scripts
    bench/corpus_ledger.py left LEDGER SCRIPT...   # those the ledger does not hold (CORPUS_LEDGER)
    bench/corpus_ledger.py summary LEDGER          # counts per corpus and outcome, the rate with
                                                   # signal, where the hours go, as Markdown
    bench/corpus_ledger.py tables LEDGER           # issue 28's tables per corpus: models
                                                   # discovered, exported, benchmarked, verdicts,
                                                   # failure classes (count, one example each)

`add` reads CORPUS_OUT/outcomes.tsv (bench/corpus) and the seconds per stage of each input's
progress events (bench/corpus_stages.py); a script already in the ledger is replaced by the newer
run's lines. A script whose text has changed since its line was written (script_sha: the first 12
hex digits of its sha256) is `left` to run: a regenerated script runs again. Scripts that the run
did not finish (not_run, cancelled, or cut off without a
record) are not added: a later run does them. Columns: see FIELDS; `script` is the path from the
models folder up (models/timm/resnet50.py), whatever folder of links the run read it through.
"""

import collections
import datetime
import hashlib
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_stages import _record, stage_seconds  # noqa: E402  (bench/ is no package)

FIELDS = ("script", "script_sha", "build", "status", "stage", "verdict", "compared",
          "discover_s", "export_s", "benchmark_s", "wall_s", "commit", "date", "error", "call_s")
# Outcomes that say nothing about the script: a later run must do it again.
UNFINISHED = ("not_run", "cancelled")


def _models_path(script):
    """models/<corpus>/<name>.py of a script path (through links), else the path as given."""
    real = os.path.realpath(script)
    parts = real.split(os.sep)
    if "models" in parts:
        return "/".join(parts[len(parts) - 1 - parts[::-1].index("models"):])
    return script


def _sha(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:12]
    except OSError:
        return "-"


def left(ledger, scripts):
    """The scripts (paths, through links or not) that the ledger holds no line of, or a line
    made from another text of the script."""
    held = {(r["script"], r["script_sha"]) for r in read(ledger)}
    return [s for s in scripts if (_models_path(s), _sha(s)) not in held]


def read(ledger):
    rows = []
    if os.path.exists(ledger):
        with open(ledger, encoding="utf-8") as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                values = line.rstrip("\n").split("\t")
                rows.append(dict(zip(FIELDS, values + [""] * (len(FIELDS) - len(values)))))
    return rows


def write(ledger, rows):
    rows = sorted(rows, key=lambda r: (r["script"], r["build"]))
    tmp = ledger + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("# " + "\t".join(FIELDS) + "\n")
        for row in rows:
            f.write("\t".join(str(row.get(k, "")).replace("\t", " ") for k in FIELDS) + "\n")
    os.replace(tmp, ledger)


def _input_seconds(cache):
    """{script as the run named it: (seconds per stage, wall seconds)} from the input records."""
    inputs = os.path.join(cache, "inputs")
    found = {}
    for name in sorted(os.listdir(inputs)) if os.path.isdir(inputs) else []:
        if name.endswith(".progress.jsonl"):
            record = os.path.join(inputs, name[: -len(".progress.jsonl")] + ".yaml")
            if os.path.exists(record):
                found[_record(record).get("input", "")] = stage_seconds(
                    os.path.join(inputs, name))
    return found


def _commit(out):
    """The commit of the turnkey that ran, as bench/corpus wrote it into the run's folder."""
    try:
        with open(os.path.join(out, "commit"), encoding="utf-8") as f:
            text = f.read().strip()
    except OSError:
        return "?"
    head, plus, changes = text.partition("+")
    return head[:12] + plus + changes


def _first_call_s(cache, build):
    """The build's first_call_s (stats schema 12: the script's first call of the model, within
    discovery), "" when not recorded."""
    stats = os.path.join(cache, build, "turnkey_stats.yaml")
    seconds = _record(stats).get("first_call_s", "") if os.path.isfile(stats) else ""
    try:
        return "%.1f" % float(seconds) if seconds else ""
    except ValueError:
        return ""


def add(ledger, out):
    seconds = _input_seconds(os.path.join(out, "cache"))
    commit, date = _commit(out), datetime.date.today().isoformat()
    new = []
    with open(os.path.join(out, "outcomes.tsv"), encoding="utf-8") as f:
        for line in f:
            script, build, status, stage, error, verdict, compared = (
                line.rstrip("\n").split("\t") + [""] * 7)[:7]
            if status in UNFINISHED or error.startswith("did not finish"):
                continue
            stages, wall = seconds.get(script, ({}, 0.0))
            export = sum(v for k, v in stages.items() if k not in ("discover", "benchmark",
                                                                    "benchmark run"))
            new.append({"script": _models_path(script), "script_sha": _sha(script),
                        "build": build, "status": status,
                        "stage": stage, "verdict": verdict, "compared": compared,
                        "discover_s": "%.1f" % stages.get("discover", 0),
                        "export_s": "%.1f" % export,
                        "benchmark_s": "%.1f" % (stages.get("benchmark", 0)
                                                 + stages.get("benchmark run", 0)),
                        "wall_s": "%.1f" % wall, "commit": commit, "date": date,
                        "error": error[:200],
                        "call_s": _first_call_s(os.path.join(out, "cache"), build)})
    # A run folder added again (a run resumed by another turnkey) holds the scripts added before:
    # where a script's lines are the same outcomes of the same text, the ledger keeps its own,
    # with the commit and date that made them.
    old = read(ledger)
    new_by, old_by = _by_script(new), _by_script(old)
    same = {s for s, lines in new_by.items()
            if [_outcome(r) for r in lines] == [_outcome(r) for r in old_by.get(s, [])]}
    new = [r for r in new if r["script"] not in same]
    replaced = {r["script"] for r in new}
    kept = [r for r in old if r["script"] not in replaced]
    write(ledger, kept + new)
    print("corpus_ledger: %d lines of %d scripts from %s (%d scripts as the ledger had them); "
          "the ledger has %d scripts" % (len(new), len(replaced), out, len(same),
                                         len({r["script"] for r in kept + new})))


def _outcome(row):
    return tuple(row.get(k, "") for k in ("script_sha", "build", "status", "stage", "verdict",
                                           "compared"))


def _by_script(rows):
    by_script = collections.defaultdict(list)
    for row in rows:
        by_script[row["script"]].append(row)
    return by_script


def _corpus(script):
    return script.split("/")[1] if script.startswith("models/") else "?"


def _with_signal(lines):
    """Issue 28's measure: every build successful, one verdict that compared with signal."""
    return (all(r["status"] == "successful" for r in lines)
            and any(r["verdict"].startswith("within_tolerance") for r in lines))


def summary(ledger):
    by_script = _by_script(read(ledger))
    table = collections.defaultdict(collections.Counter)
    for script, lines in by_script.items():
        ok = all(r["status"] == "successful" for r in lines)
        c = table[_corpus(script)]
        c["scripts"] += 1
        c["successful with signal" if _with_signal(lines) else
          "successful" if ok else lines[0]["status"]] += 1
        c["wall s"] += float(lines[0]["wall_s"] or 0)
    columns = sorted({k for c in table.values() for k in c} - {"scripts", "wall s"})
    print("| corpus | scripts | " + " | ".join(columns) + " | wall s |")
    print("|---" * (3 + len(columns)) + "|")
    for corpus in sorted(table):
        c = table[corpus]
        print("| %s | %d | %s | %d |" % (corpus, c["scripts"],
                                         " | ".join(str(c[k]) for k in columns), c["wall s"]))
    print()
    rates_and_hours(by_script)
    discover_split(by_script)


# The verdict columns of `tables`: (heading, the ledger's verdict).
VERDICTS = (("within tolerance", "within_tolerance"),
            ("on intermediates", "within_tolerance_on_intermediates"),
            ("against float64", "within_tolerance_of_float64"),
            ("inconclusive", "inconclusive"),
            ("mismatch", "outside_tolerance"))


def _funnel(lines):
    """Counts of one corpus's builds: discovered (a build was opened), exported (it reached the
    benchmark), benchmarked (the benchmark measured it: successful, or a mismatch, which ran to
    the end), and each verdict."""
    c = collections.Counter()
    for r in lines:
        if r["build"] in ("", "-"):
            continue
        c["discovered"] += 1
        c["exported"] += r["stage"] == "benchmark"
        c["benchmarked"] += r["stage"] == "benchmark" and r["status"] in (
            "successful", "numeric_mismatch")
        c[r["verdict"]] += 1
    return c


def _cause(error):
    """A failure's class within its status: the exception's name ("RuntimeError: ..."), or the
    error's first three words ("std::bad_alloc", "out of memory", "ort outputs differ")."""
    named = re.match(r"([A-Za-z_][\w.]*): ", error)
    return named.group(1) if named else " ".join(error.split()[:3])


def tables(ledger):
    """Per corpus: scripts, the build funnel and the verdicts, wall time; then its failures by
    status, stage and cause, with a count and one example (the first in the ledger's order)."""
    by_script = _by_script(read(ledger))
    corpora = collections.defaultdict(dict)
    for script, lines in by_script.items():
        corpora[_corpus(script)][script] = lines
    heads = ["discovered", "exported", "benchmarked"] + [h for h, _ in VERDICTS]
    print("| corpus | scripts | successful with signal | " + " | ".join(heads) +
          " | wall time, summed |")
    print("|---" * (len(heads) + 4) + "|")
    for corpus in sorted(corpora):
        scripts = corpora[corpus]
        c = _funnel([r for lines in scripts.values() for r in lines])
        signal = sum(_with_signal(lines) for lines in scripts.values())
        wall = sum(float(lines[0]["wall_s"] or 0) for lines in scripts.values())
        cells = [c["discovered"], c["exported"], c["benchmarked"]] + [c[v] for _, v in VERDICTS]
        print("| %s | %d | %d | %s | %.1f h |" % (corpus, len(scripts), signal,
                                                 " | ".join(map(str, cells)), wall / 3600))
    for corpus in sorted(corpora):
        failures = collections.OrderedDict()
        for script, lines in sorted(corpora[corpus].items()):
            for r in lines:
                if r["status"] == "successful":
                    continue
                key = (r["status"], r["stage"], _cause(r["error"]))
                failures.setdefault(key, []).append((script, r["error"]))
        if not failures:
            continue
        print("\n%s: failures by status, stage and cause\n" % corpus)
        print("| status | at | cause | builds | example |")
        print("|---|---|---|---|---|")
        for (status, stage, cause), seen in sorted(failures.items(),
                                                   key=lambda kv: (kv[0][0], -len(kv[1]))):
            script, error = seen[0]
            example = error.split(" (log: ")[0][:160].replace("|", "\\|")
            print("| %s | %s | %s | %d | %s: %s |" % (status, stage, cause.replace("|", "\\|"),
                                                      len(seen), os.path.basename(script)[:-3],
                                                      example))


def discover_split(by_script):
    """Of discovery's seconds, the model calls' (first_call_s, lines since stats schema 12) and
    the rest (starting Python, the imports, building the models, hashing them), per corpus, over
    the scripts every line of which has its call seconds."""
    rows = collections.defaultdict(collections.Counter)
    for script, lines in by_script.items():
        if not all(r["call_s"] for r in lines) or lines[0]["build"] in ("", "-"):
            continue
        c = rows[_corpus(script)]
        c["n"] += 1
        c["discover"] += sum(float(r["discover_s"] or 0) for r in lines)
        c["calls"] += sum(float(r["call_s"]) for r in lines)
    if not rows:
        return
    print()
    print("| corpus | scripts with call seconds | discover s per script | of it: model calls "
          "| the rest (Python, imports, construction, hashing) |")
    print("|---" * 5 + "|")
    for corpus in sorted(rows):
        c = rows[corpus]
        share = c["calls"] / c["discover"] if c["discover"] else 0.0
        print("| %s | %d | %.1f | %.0f%% | %.0f%% |" % (corpus, c["n"], c["discover"] / c["n"],
                                                       100 * share, 100 * (1 - share)))


def _wilson(k, n, z=1.96):
    """The 95% Wilson score interval of a proportion k/n (a random sample's rate)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _corpus_size(corpus):
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", corpus)
    try:
        return sum(1 for n in os.listdir(folder) if n.endswith(".py"))
    except OSError:
        return 0


def rates_and_hours(by_script):
    """Per corpus: the share successful with signal and its 95% interval (the run's order is a
    random draw, CORPUS_SHUFFLE, so the scripts done are a sample of the corpus), where the
    seconds went (stages summed over a script's builds; 'other' is the rest of the input's span,
    first progress event to last, outside every stage), and the whole corpus's hours at -j 1 at
    this pace (the wall seconds of the run that wrote each line, whatever its load)."""
    stages = ("discover_s", "export_s", "benchmark_s")
    print("| corpus | scripts done | of | successful with signal (95% interval) "
          "| discover | export | benchmark | other | s per script | corpus at -j 1 |")
    print("|---" * 10 + "|")
    per = collections.defaultdict(lambda: collections.Counter())
    for script, lines in by_script.items():
        c = per[_corpus(script)]
        c["n"] += 1
        c["signal"] += _with_signal(lines)
        wall = float(lines[0]["wall_s"] or 0)
        spent = 0.0
        for stage in stages:
            seconds = sum(float(r[stage] or 0) for r in lines)
            c[stage] += seconds
            spent += seconds
        c["wall"] += wall
        c["other"] += max(0.0, wall - spent)
    for corpus in sorted(per):
        c = per[corpus]
        n, wall = c["n"], c["wall"] or 1.0
        low, high = _wilson(c["signal"], n)
        share = " | ".join("%.0f%%" % (100 * c[k] / wall) for k in stages + ("other",))
        size = _corpus_size(corpus)
        print("| %s | %d | %d | %.1f%% (%.1f–%.1f%%) | %s | %.0f | %.1f h |" % (
            corpus, n, size, 100 * c["signal"] / n, 100 * low, 100 * high, share,
            c["wall"] / n, size * c["wall"] / n / 3600))


def main(argv):
    if len(argv) == 4 and argv[1] == "add":
        add(argv[2], argv[3])
    elif len(argv) >= 3 and argv[1] == "left":
        for script in left(argv[2], argv[3:]):
            print(script)
    elif len(argv) == 3 and argv[1] == "summary":
        summary(argv[2])
    elif len(argv) == 3 and argv[1] == "tables":
        tables(argv[2])
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
