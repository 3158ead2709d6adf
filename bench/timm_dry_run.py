#!/usr/bin/env python3
"""A dry run of models/timm scripts in minutes instead of days: each script's model is built on
the meta device (no memory, no weights) by the script's own lines (the generator's fewer blocks
included), its parameters are counted, and it is called on fake tensors (shapes and dtypes only,
no compute) at the script's input size. It finds what fails before export (models that do not
build, forwards that do not take their default input size) and which models are over the corpus's
budget; it proves nothing about export or benchmark.

    PYTHONPATH=python .deps/pypi/bin/python3 bench/timm_dry_run.py models/timm/*.py > dry_run.txt

Prints one line per script: `OK name parameters`, `INCONCLUSIVE name parameters stage ...` (the
forward has an operation whose output shape depends on the data, which fake tensors cannot follow:
only a real run says), or `FAIL name parameters stage error-type message` (stage: build or
forward; parameters `-` where the model did not build). Run it in batches (xargs -n 200): a
process that built a thousand models holds on to what their modules cached.
"""

import re
import sys

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from dry_run_lines import failure, main  # bench/dry_run_lines.py, beside this file

_IMAGES = re.compile(r"^images = torch\.rand\(batch_size, (\d+), (\d+), (\d+)\)$", re.M)


def _built(source):
    """The script's model and its images' shape: the script's lines up to `model.eval()` run on
    the meta device (so a fitted script's keyword arguments count), without the command line."""
    head = source.split("\nmodel.eval()")[0].replace(
        "from turnkeyml.parser import parse", "").replace(
        'batch_size = parse(["batch_size"])[0]', "batch_size = 1")
    names = {"__name__": "dry_run"}
    with torch.device("meta"):
        exec(compile(head, "<script>", "exec"), names)
    return names["model"].eval(), tuple(int(n) for n in _IMAGES.search(source).groups())


def _size(parameters):
    return "%.1fM" % (parameters / 1e6) if parameters < 1e9 else "%.2fB" % (parameters / 1e9)


def dry_run(path):
    name = path.rsplit("/", 1)[-1][:-3]
    stage, parameters = "build", "-"
    try:
        with open(path, encoding="utf-8") as f:
            model, (c, h, w) = _built(f.read())
        parameters = _size(sum(p.numel() for p in model.parameters()))
        stage = "forward"
        with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
            model(torch.empty(1, c, h, w, device="meta"))
        return "OK %s %s" % (name, parameters)
    except Exception as error:  # the line says what and where
        return failure(error, name, parameters, stage)


if __name__ == "__main__":
    sys.exit(main(dry_run))
