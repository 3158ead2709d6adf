"""What the Python API hands back from a build's turnkey_stats.yaml (docs/python_api.md).

The C++ field table (src/cache/fields.cpp, docs/cache.md) names every field of a result; a
MeasuredPerformance takes each one as an attribute named like its key without the unit suffix
(`mean_latency_ms` -> `mean_latency`, `throughput_ips` -> `throughput`), so a field added there
appears here without a change.
"""

import math
import os

LATENCY_UNITS = "milliseconds (ms)"
THROUGHPUT_UNITS = "inferences per second (IPS)"

# Unit suffixes of the field table's keys.
_UNIT_SUFFIXES = ("_ms", "_ips", "_bytes", "_s")


def attribute_name(key):
    """A stats key without its unit suffix: the MeasuredPerformance attribute it fills."""
    for suffix in _UNIT_SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[:-len(suffix)]
    return key


def latest_result(stats):
    """The result this run made: the entry of `results` with the top level's samples file (the
    top level holds the latest run), else the top level itself (stats of schema <= 3)."""
    samples = stats.get("samples_file")
    for result in stats.get("results") or []:
        if isinstance(result, dict) and samples and result.get("samples_file") == samples:
            return result
    return stats


class MeasuredPerformance:
    """What benchmark_model measured. Latencies in milliseconds, throughput in inferences per
    second (batch size x 1000 / mean latency). `stats` is the whole turnkey_stats.yaml; every
    field of the benchmarked result is an attribute (its key without the unit suffix)."""

    latency_units = LATENCY_UNITS
    throughput_units = THROUGHPUT_UNITS

    def __init__(self, stats, build_name, build_dir, result=None):
        self.stats = stats
        self.build_name = build_name
        self.build_dir = build_dir
        self.model_name = stats.get("model_name")
        # `result`: one entry of stats["results"] (a sweep leaves several); else the latest.
        for key, value in (result if result is not None else latest_result(stats)).items():
            name = attribute_name(key)
            if name.isidentifier() and name not in ("stats", "build_name", "build_dir"):
                setattr(self, name, value)
        # Distribution-free 95% confidence interval of the median (docs/measurement.md).
        self.median_latency_ci = (getattr(self, "median_ci_low", None),
                                  getattr(self, "median_ci_high", None))

    def __repr__(self):
        return ("MeasuredPerformance(build_name=%r, runtime=%r, device=%r, mean_latency=%.4g ms, "
                "throughput=%.4g IPS)" % (self.build_name, self.runtime, self.device,
                                          self.mean_latency, self.throughput))

    def print(self):
        """The reference tool's three lines, plus the spread. Latencies keep at least 4
        significant digits (a tiny model runs in ~1 us: 0.0013 ms, not 0.0013 -> 0.001)."""
        low, high = self.median_latency_ci
        ms = format_ms
        name = self.stats.get("class") or self.model_name or self.build_name
        print("\nPerformance of %s on device %s is:" % (name, self.device_name))
        print("> latency: %s ms" % ms(self.mean_latency))
        print("> throughput: %.1f ips" % self.throughput)
        print("> median %s ms [95%% CI %s, %s], p90 %s ms, p99 %s ms (%d iterations)"
              % (ms(self.median_latency), ms(low), ms(high), ms(self.p90_latency),
                 ms(self.p99_latency), self.iterations))


def format_ms(value):
    """A latency with at least 4 significant digits and at least 3 decimals: 0.001412,
    0.03300, 85.600."""
    if value is None:
        return "?"
    if value == 0 or not math.isfinite(value):
        return "%.3f" % value
    decimals = max(3, 3 - int(math.floor(math.log10(abs(value)))))
    return "%.*f" % (decimals, value)


def _finished_epoch(text):
    """Seconds since the epoch of a result's `finished` (ISO 8601 UTC), None when unreadable."""
    import datetime
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except (TypeError, ValueError):
        return None


def results_since(cache_dir, started, yaml):
    """MeasuredPerformance of the builds in `cache_dir` (None: TURNKEY_CACHE_DIR, else
    ~/.cache/turnkey) that a run started at `started` (time.time()) ended successfully with a
    benchmark, in the order they were built: one per result the run made (a sweep over batch
    sizes or --concurrency makes several in one build)."""
    if cache_dir is None:
        cache_dir = os.environ.get("TURNKEY_CACHE_DIR") or "~/.cache/turnkey"
    cache_dir = os.path.expanduser(os.fspath(cache_dir))
    found = []
    try:
        names = os.listdir(cache_dir)
    except OSError:
        return []
    for name in names:
        build_dir = os.path.join(cache_dir, name)
        state_path = os.path.join(build_dir, "%s_state.yaml" % name)
        try:
            modified = os.stat(state_path).st_mtime
        except OSError:
            continue
        if modified + 1e-3 < started:
            continue
        stats, state = read_build(build_dir, name, yaml)
        if state.get("build_status") != "successful" or "mean_latency_ms" not in stats:
            continue
        if "benchmark" not in (state.get("sequence") or []):
            continue
        # This run's results of the build, in the order it finished them.
        mine = []
        for result in stats.get("results") or []:
            if not isinstance(result, dict) or result.get("status") != "successful":
                continue
            finished = _finished_epoch(result.get("finished"))
            if finished is not None and finished + 1e-3 >= started and \
                    "mean_latency_ms" in result:
                mine.append((result.get("finished"), result))
        if not mine:
            mine = [("", None)]
        for finished, result in sorted(mine, key=lambda m: m[0]):
            found.append((state.get("started") or "", modified, finished, name, stats, build_dir,
                          result))
    found.sort(key=lambda f: (f[0], f[1], f[2]))
    return [MeasuredPerformance(stats, name, build_dir, result)
            for _, _, _, name, stats, build_dir, result in found]


def read_build(build_dir, build_name, yaml):
    """(stats, state) of a build dir as dicts; {} for a file that cannot be read."""
    def load(name):
        try:
            with open(os.path.join(build_dir, name), encoding="utf-8") as f:
                return yaml.safe_load(f) or {}
        except OSError:
            return {}
    return load("turnkey_stats.yaml"), load("%s_state.yaml" % build_name)
