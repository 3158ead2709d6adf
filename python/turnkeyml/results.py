"""What the Python API hands back from a build's turnkey_stats.yaml (docs/python_api.md).

The C++ field table (src/cache/fields.cpp, docs/cache.md) names every field of a result; a
MeasuredPerformance takes each one as an attribute named like its key without the unit suffix
(`mean_latency_ms` -> `mean_latency`, `throughput_ips` -> `throughput`), so a field added there
appears here without a change.
"""

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

    def __init__(self, stats, build_name, build_dir):
        self.stats = stats
        self.build_name = build_name
        self.build_dir = build_dir
        self.model_name = stats.get("model_name")
        for key, value in latest_result(stats).items():
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
        """The reference tool's three lines, plus the spread."""
        low, high = self.median_latency_ci
        print("\nPerformance of %s on device %s is:" % (self.build_name, self.device_name))
        print("> latency: %.4f ms" % self.mean_latency)
        print("> throughput: %.1f ips" % self.throughput)
        print("> median %.4f ms [95%% CI %.4f, %.4f], p90 %.4f ms, p99 %.4f ms (%d iterations)"
              % (self.median_latency, low, high, self.p90_latency, self.p99_latency,
                 self.iterations))


def read_build(build_dir, build_name, yaml):
    """(stats, state) of a build dir as dicts; {} for a file that cannot be read."""
    def load(name):
        try:
            with open(os.path.join(build_dir, name), encoding="utf-8") as f:
                return yaml.safe_load(f) or {}
        except OSError:
            return {}
    return load("turnkey_stats.yaml"), load("%s_state.yaml" % build_name)
