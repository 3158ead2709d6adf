"""Multimodal rotary sections that do not fit their rotary width. A rotary embedding of the
Qwen2-VL kind splits its frequencies into sections for time, height and width (`mrope_section`,
which the model reads from its rope parameters or, where they name none, takes from its own
code) and fails in its forward where the sections do not sum to its frequencies: "split_with_sizes
expects split_sizes to sum exactly to 64 ..., but got split_sizes=[8, 12, 12]" (GLM-4V). The
published checkpoints give a `partial_rotary_factor` that makes them fit (GLM-4.1V: 0.5 of a
128-wide head); the class defaults leave it out. Found on the model built on the meta device, so
a class whose sections are written in its code is seen too."""

import copy

import torch

from .config import configs


def _mismatches(cls, config):
    """(configuration the rotary embedding reads, its sections, its frequency count) for each
    rotary embedding of cls(config) whose sections do not sum to its frequencies; None where the
    model does not build."""
    try:
        with torch.device("meta"):
            model = cls(config)
    except Exception:  # the script's own build raises it again, in its words
        return None
    found = []
    for module in model.modules():
        sections, frequencies = getattr(module, "mrope_section", None), getattr(
            module, "inv_freq", None)
        if (isinstance(sections, (list, tuple)) and sections
                and all(isinstance(s, int) for s in sections)
                and isinstance(frequencies, torch.Tensor) and frequencies.dim() == 1
                and sum(sections) != frequencies.numel()
                and isinstance(getattr(getattr(module, "config", None), "rope_parameters", None),
                               dict)):
            found.append((module.config, list(sections), frequencies.numel()))
    return found


def _scaled(sections, total):
    """sections scaled to sum to total, each at least 1, the rounding's rest on the last."""
    scaled = [max(1, round(s * total / sum(sections))) for s in sections[:-1]]
    return scaled + [max(1, total - sum(scaled))]


def _fixes(sections, frequencies, rope):
    """Candidate rope parameters, most faithful first: the share of the head that rotates made
    what the sections need (the published checkpoints' way), else the sections scaled to the
    frequencies there are (a head too narrow for them)."""
    factor = rope.get("partial_rotary_factor", 1.0) * sum(sections) / frequencies
    if 0 < factor <= 1:
        yield {"partial_rotary_factor": factor, "mrope_section": list(sections)}
    yield {"mrope_section": _scaled(sections, frequencies)}


def _holder(config, wanted):
    """The configuration among config and its parts that the model's module read (the same
    object, else one of its class)."""
    holders = list(configs(config))
    return next((h for h in holders if h is wanted),
                next((h for h in holders if type(h) is type(wanted)), None))


def rotary_sections_fitted(config, cls):
    """`config`, or a copy whose rope parameters make every multimodal rotary section of
    cls(config) sum to its frequencies (see _fixes); prints what it changed."""
    mismatches = _mismatches(cls, config)
    if not mismatches:
        return config
    config = copy.deepcopy(config)
    changed = []
    for read, sections, frequencies in mismatches:
        holder = _holder(config, read)
        if holder is None or any(c[0] is holder for c in changed):
            continue
        original = dict(holder.rope_parameters)
        for fix in _fixes(sections, frequencies, original):
            holder.rope_parameters = dict(original, **fix)
            left = _mismatches(cls, config)
            if left is not None and not any(_holder(config, r) is holder for r, _, _ in left):
                changed.append((holder, fix))
                break
        else:
            holder.rope_parameters = original
    if changed:
        print("corpus_inputs: %s's rotary sections do not fit its rotary width: %s"
              % (type(config).__name__, "; ".join(
                  "%s %s" % (type(h).__name__, ", ".join("%s=%r" % kv for kv in f.items()))
                  for h, f in changed)))
    return config
