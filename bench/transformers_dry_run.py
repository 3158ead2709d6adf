#!/usr/bin/env python3
"""A dry run of models/transformers scripts in minutes instead of hours: each script's model is
built on the meta device (no memory, no weights) from the configuration the script makes
(corpus_inputs.fitted included) and called with the inputs the script makes (moved to the meta
device) on fake tensors: shapes and dtypes only, no compute. It finds what fails before export
(configurations that do not build, inputs a forward does not take, shapes that do not match)
across the whole corpus; it proves nothing about export or benchmark.

    .deps/pypi/bin/python3 bench/transformers_dry_run.py models/transformers/*.py > dry_run.txt

Prints one line per script: `OK name`, `INCONCLUSIVE name ...` (the forward has an operation
whose output shape depends on the data, which fake tensors cannot follow: only a real run says),
or `FAIL name stage error-type message` (stage: config, build, inputs or forward). Run it in
batches (xargs -n 100): some classes leave state behind in the process.
"""

import contextlib
import io
import re
import sys

import torch
import transformers
from torch._subclasses.fake_tensor import FakeTensorMode

from turnkeyml import corpus_inputs

from dry_run_lines import failure, main  # bench/dry_run_lines.py, beside this file


def _configuration(source):
    """The script's configuration: its lines up to the model's construction, run without the
    command-line parsing."""
    head = source.split("\nmodel = ")[0]
    head = head.replace("from turnkeyml.parser import parse", "").replace(
        'batch_size, max_seq_length = parse(["batch_size", "max_seq_length"])', "")
    names = {"__name__": "dry_run"}
    with contextlib.redirect_stdout(io.StringIO()):  # fitted() says what it changed
        exec(compile(head, "<script>", "exec"), names)
    return names["config"]


def dry_run(path):
    name = path.rsplit("/", 1)[-1][:-3]
    stage = "config"
    try:
        source = open(path, encoding="utf-8").read()
        config = _configuration(source)
        cls_name = re.search(r"^model = transformers\.(\w+)\(config\)", source, re.M).group(1)
        stage = "build"
        with torch.device("meta"):
            model = getattr(transformers, cls_name)(config).eval()
        stage = "inputs"
        inputs = {k: v.to("meta") if isinstance(v, torch.Tensor) else v
                  for k, v in corpus_inputs.transformers_inputs(model, 1, 128).items()}
        stage = "forward"
        with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
            model(**inputs)
        return "OK %s" % name
    except Exception as error:  # the line says what and where
        return failure(error, name, stage)


if __name__ == "__main__":
    sys.exit(main(dry_run))
