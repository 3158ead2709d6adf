"""Labels of a build, as the `# labels: key::v1,v2 key2::v3` line of its script gave them.

turnkey records them in the build's turnkey_stats.yaml (`labels`, the same text); the reference
tool kept them in `<cache>/labels/<build_name>.txt`, which is read when present.
"""

import os


def to_dict(label_list):
    """["key::v1,v2", "key2::v3"] -> {"key": ["v1", "v2"], "key2": ["v3"]}. Items without "::"
    are skipped with a warning, as the reference did."""
    labels = {}
    for item in label_list:
        if not item:
            continue
        key, sep, values = item.partition("::")
        if not sep or not key:
            import warnings
            warnings.warn("Malformed label %r: each label must have the format "
                          "key::value1,value2,..." % item)
            continue
        labels[key] = values.split(",") if values else []
    return labels


def _stats_labels(stats_path):
    import yaml

    with open(stats_path, encoding="utf-8") as f:
        stats = yaml.safe_load(f) or {}
    text = stats.get("labels") if isinstance(stats, dict) else None
    return text if isinstance(text, str) else ""


def load_from_cache(cache_dir, build_name):
    """The labels of build `build_name` in `cache_dir` as {key: [values]} ({} when its script
    had none). Raises FileNotFoundError when the cache holds no such build."""
    cache_dir = os.path.expanduser(os.fspath(cache_dir))
    legacy = os.path.join(cache_dir, "labels", "%s.txt" % build_name)
    if os.path.isfile(legacy):
        with open(legacy, encoding="utf-8") as f:
            return to_dict(f.readline().strip().split(" "))
    stats_path = os.path.join(cache_dir, build_name, "turnkey_stats.yaml")
    if not os.path.isfile(stats_path):
        raise FileNotFoundError("no build %r in cache %s (no %s)"
                                % (build_name, cache_dir, stats_path))
    return to_dict(_stats_labels(stats_path).split())
