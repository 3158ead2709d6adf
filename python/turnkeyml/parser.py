"""Standard script parameters of the model corpus: `batch_size, height = parse(["batch_size",
"height"])`. Values come from the script's command line (`--batch_size 8`), which turnkey fills
from `--script-args`; arguments the script does not ask for are ignored.
"""

import argparse
import sys


def _boolean(text):
    lowered = str(text).strip().lower()
    if lowered in ("1", "true", "yes", "y", "on"):
        return True
    if lowered in ("0", "false", "no", "n", "off"):
        return False
    raise argparse.ArgumentTypeError("expected a boolean (true/false), got %r" % text)


# name: (type, default, help)
STANDARD_ARGS = {
    "batch_size": (int, 1, "batch size of the model's input"),
    "max_seq_length": (int, 128, "maximum (and benchmarked) input sequence length"),
    "max_audio_seq_length": (int, 25600, "maximum (and benchmarked) audio sequence length"),
    "height": (int, 224, "height of the input image"),
    "num_channels": (int, 3, "number of channels of the input image"),
    "width": (int, 224, "width of the input image"),
    "pretrained": (_boolean, False, "use pretrained weights"),
    "k": (int, 8, "graph neural networks: k"),
    "alpha": (float, 2.2, "graph neural networks: alpha"),
    "out_channels": (int, 16, "graph neural networks: output channels"),
    "num_layers": (int, 8, "graph neural networks: number of layers"),
    "in_channels": (int, 1433, "graph neural networks: input channels"),
}


# The values parse() returned in this process, by name: discovery reports the script's
# `batch_size` with each model (docs/protocol.md), which tells the batch of a model whose first
# input is not batch-major (a vision tower fed rows of patches and a grid per image).
parsed = {}


def parse(names, argv=None):
    """Values of the standard arguments `names`, in the same order.

    Reads sys.argv[1:] unless `argv` is given; unknown command-line arguments are left for the
    script's own parser.
    """
    unknown = [n for n in names if n not in STANDARD_ARGS]
    if unknown:
        raise ValueError("unknown standard argument(s) %s; known: %s"
                         % (", ".join(unknown), ", ".join(STANDARD_ARGS)))
    parser = argparse.ArgumentParser(add_help=False)
    for name in names:
        type_, default, help_text = STANDARD_ARGS[name]
        parser.add_argument("--" + name, type=type_, default=default, help=help_text)
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    values = [getattr(known, name) for name in names]
    parsed.update(zip(names, values))
    return values
