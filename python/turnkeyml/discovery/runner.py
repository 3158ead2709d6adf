"""Entry point of the Python side: runs a user script, reports its models, serves exports.

    python -m turnkeyml.discovery.runner --event-fd E --command-fd C --script PATH
        [--script-args STRING] [--max-depth N]

The messages are specified in docs/protocol.md. The script runs as `__main__` with its own
stdout and stderr; we talk only through the two pipes.
"""

import argparse
import atexit
import contextlib
import importlib.metadata
import operator
import os
import platform
import runpy
import shlex
import sys
import threading
import traceback

from .commands import error_fields, one_line, serve
from .protocol import Channel, exit_now


def _parse_args(argv):
    parser = argparse.ArgumentParser(prog="turnkeyml.discovery.runner")
    parser.add_argument("--event-fd", type=int, required=True)
    parser.add_argument("--command-fd", type=int, required=True)
    parser.add_argument("--script", required=True)
    parser.add_argument("--script-args", default="")
    parser.add_argument("--max-depth", type=int, default=0)
    return parser.parse_args(argv)


def _version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _flush_std_streams():
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


_PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")


def _without_our_frames(summary, seen=None):
    """Drops turnkeyml's own frames (the hook between the script and a module's forward) from a
    TracebackException and from the exceptions chained to it."""
    seen = set() if seen is None else seen
    if summary is None or id(summary) in seen:
        return
    seen.add(id(summary))
    summary.stack = traceback.StackSummary.from_list(
        [f for f in summary.stack if not f.filename.startswith(_PACKAGE_DIR)])
    _without_our_frames(summary.__cause__, seen)
    _without_our_frames(summary.__context__, seen)


def _script_traceback(error, script):
    """The traceback from the script's first frame on: our own frames are noise to the user.
    A SyntaxError has no script frame; its text already points into the script."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != script:
        tb = tb.tb_next
    summary = traceback.TracebackException(type(error), error, tb)
    _without_our_frames(summary)
    return "".join(summary.format())




# What a script may import that this interpreter can lack, and what installs it.
_FRAMEWORKS = {"tensorflow": "TensorFlow", "keras": "Keras", "tf2onnx": "tf2onnx"}


def _missing_framework(error):
    """The one line for a script that imports TensorFlow or Keras where the interpreter has
    neither: what to install and which interpreter to name. None for any other error."""
    if not isinstance(error, ModuleNotFoundError):
        return None
    top = (getattr(error, "name", None) or "").split(".")[0]
    if top not in _FRAMEWORKS:
        return None
    return ("the script imports %s, which %s cannot import: scripts/setup-keras installs "
            "TensorFlow and Keras into .deps/keras; run with --python .deps/keras/bin/python3"
            % (top, sys.executable))


def _run_script(script, script_args):
    """Runs the script as __main__; returns the script_end fields."""
    sys.argv = [script] + shlex.split(script_args)
    # As `python script.py` does: the script's folder first (main() removed our launcher's
    # entry); turnkeyml stays importable for parse().
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.dirname(script))
    if package_root not in sys.path:
        sys.path.append(package_root)
    try:
        runpy.run_path(script, run_name="__main__")
        return {"status": "ok"}
    except SystemExit as error:
        code = error.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)  # what the interpreter does with sys.exit("message")
            code = 1
        fields = {"status": "exit", "exit_code": code, "traceback": None}
        if code != 0:
            fields["error"] = "SystemExit: %s" % error.code
        return fields
    except BaseException as error:  # KeyboardInterrupt too: reported, then we stop
        fields = {"status": "exception", "traceback": _script_traceback(error, script)}
        fields.update(error_fields(error))
        missing = _missing_framework(error)
        if missing:
            fields["error"] = missing
        if isinstance(error, KeyboardInterrupt):
            fields["interrupted"] = True
        return fields


def _serve(channel, tracker):
    return serve(channel, tracker.entries if tracker is not None else [])


class _Finisher:
    """Reports the end of the script, serves exports, and ends the process. Reached once: from
    main() when the script returns or raises, or from the script's own os._exit() call."""

    def __init__(self, channel, tracker, also_uninstall=()):
        self._channel = channel
        self._tracker = tracker
        self._also_uninstall = also_uninstall
        self._once = threading.Lock()  # never released: a second caller waits for our exit

    def finish(self, end, run_atexit=True):
        self._once.acquire()
        os._exit = exit_now
        tracker = self._tracker
        if tracker is not None:
            tracker.uninstall()
        for uninstall in self._also_uninstall:
            uninstall()
        _flush_std_streams()
        self._channel.send("script_end", **end)
        self._channel.send("counts", counts=tracker.counts() if tracker else {},
                           first_call_s=tracker.first_call_times() if tracker else {})
        if end.get("interrupted"):
            code = 130
        else:
            self._channel.send("ready")
            code = _serve(self._channel, tracker)
        if run_atexit:
            # The script may have left non-daemon threads behind: do not wait for them.
            with contextlib.suppress(BaseException):
                atexit._run_exitfuncs()
        _flush_std_streams()
        exit_now(code)

    def hard_exit(self, status):
        """Stands in for os._exit while the script runs. The models are still alive in this
        process: report them and serve their exports, then leave without unwinding the script
        (no finally blocks, no atexit handlers), as os._exit would have."""
        status = operator.index(status)
        if os.getpid() != self._channel.owner_pid:  # a fork of the script: not ours to report
            exit_now(status)
        end = {"status": "exit", "exit_code": status, "traceback": None}
        if status != 0:
            end["error"] = "os._exit(%d)" % status
        self.finish(end, run_atexit=False)


def _drop_launcher_path_entry():
    """Removes the sys.path[0] our launcher added (the working directory for -m, "" for -c)
    before we import anything: a torch.py or onnx.py lying there is not the library."""
    if not getattr(sys.flags, "safe_path", False) and sys.path and \
            sys.path[0] in ("", os.getcwd()):
        del sys.path[0]


def _preload_export():
    """Imports what exports need while only library folders are on sys.path: once the script
    runs, its folder comes first, and a user file named onnx.py there would be imported (and
    run) in the library's place."""
    try:
        from . import export
        export.load_onnx()
    except ImportError:  # no onnx: exports will say so
        pass


def _watch_for_keras(tracker):
    """Discovery of Keras models, armed for when the script imports keras (no TensorFlow import
    before that, none at all for a script without it). Returns the uninstall functions."""
    from .keras_hooks import KerasTracker, KerasWatcher

    keras_tracker = KerasTracker(tracker)

    def on_import():
        try:
            keras_tracker.install()
        except Exception as error:  # noqa: BLE001 (the script's import must not fail for us)
            tracker._warn("Keras models will not be discovered: %s" % one_line(error))

    watcher = KerasWatcher(on_import, tracker._script_path)
    sys.meta_path.insert(0, watcher)
    return (watcher.remove, keras_tracker.uninstall)


def main(argv=None):
    _drop_launcher_path_entry()
    options = _parse_args(sys.argv[1:] if argv is None else argv)
    channel = Channel(options.event_fd, options.command_fd)
    script = os.path.abspath(options.script)
    try:
        import torch
        torch_version = torch.__version__
    except ImportError:
        torch = None
        torch_version = None
    channel.send("hello", python=platform.python_version(), torch=torch_version,
                 onnx=_version("onnx"), onnxscript=_version("onnxscript"), pid=os.getpid())

    tracker = None
    if torch is not None:
        from .hooks import Tracker
        _preload_export()
        tracker = Tracker(channel.send, script, options.max_depth)
        tracker.install(stop_code=_run_script.__code__)
        also_uninstall = _watch_for_keras(tracker)
    finisher = _Finisher(channel, tracker, also_uninstall if tracker is not None else ())
    os._exit = finisher.hard_exit
    try:
        end = _run_script(script, options.script_args)
    except BaseException as error:  # our own failure around the script: still report what we saw
        end = {"status": "exception", "traceback": traceback.format_exc()}
        end.update(error_fields(error))
    finisher.finish(end)


if __name__ == "__main__":
    main()
