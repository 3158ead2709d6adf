"""What the C++ core runs (docs/sequences.md):

    python -m turnkeyml.build describe FILE
        prints `TURNKEY_SEQUENCE {"name": ..., "tools": [...]}` on its last line: the Sequence
        FILE defines, as turnkey's tool calls (custom stages as python-stage calls).
    python -m turnkeyml.build run FILE STAGE INPUT_ONNX OUTPUT_ONNX
        runs the custom stage named STAGE of FILE's Sequence on INPUT_ONNX.

A failure prints its traceback, then `error: <one line>` last, and exits with 1.
"""

import json
import os
import sys
import traceback

from . import stage as stages

MARKER = "TURNKEY_SEQUENCE "


def _one_line(error):
    if isinstance(error, stages.SequenceError):
        return str(error)
    message = (str(error).strip().splitlines() or [""])[0]
    return "%s: %s" % (type(error).__name__, message) if message else type(error).__name__


def describe(path):
    path = os.path.abspath(path)
    sequence = stages.load_sequence(path)
    calls = stages.tool_calls(sequence, file=path)
    sys.stdout.flush()
    print(MARKER + json.dumps({"name": sequence.unique_name, "tools": calls}), flush=True)


def run(path, name, input_onnx, output_onnx):
    sequence = stages.load_sequence(path)
    stage = stages.custom_stages(sequence).get(name)
    if stage is None:
        raise stages.SequenceError("%s: its Sequence has no custom stage %r (it has: %s)" % (
            path, name, ", ".join(stages.custom_stages(sequence)) or "none"))
    print("stage %s (%s.%s) on %s" % (name, type(stage).__module__, type(stage).__qualname__,
                                      input_onnx), flush=True)
    stages.fire(stage, input_onnx, output_onnx)
    print("wrote %s" % output_onnx, flush=True)


def main(argv):
    sys.dont_write_bytecode = True  # no __pycache__ beside the user's sequence file
    try:
        if len(argv) == 2 and argv[0] == "describe":
            describe(argv[1])
        elif len(argv) == 5 and argv[0] == "run":
            run(*argv[1:])
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except BaseException as error:  # the user's code may raise anything, SystemExit included
        if not isinstance(error, stages.SequenceError):
            traceback.print_exc()
        sys.stdout.flush()
        print("error: %s" % _one_line(error), file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
