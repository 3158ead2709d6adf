"""Everything an export writes while it runs (Python prints, C++ writes to fds 1 and 2,
warnings), captured as log lines, each Python line stamped with its time since the capture
began. Used by the PyTorch and Keras exports and the float64 reference run."""

import contextlib
import os
import sys
import tempfile
import time
import warnings


class _Stamped:
    """sys.stdout while output is captured: each line printed from Python starts with the
    seconds since the capture began, so a long export's log says which of its phases took the
    time (the dynamo exporter prints one line as each phase starts and ends). Lines written by
    C++ code straight to the file descriptor carry no stamp."""

    def __init__(self, stream, start):
        self._stream, self._start, self._line_start = stream, start, True

    def write(self, text):
        for piece in text.splitlines(keepends=True):
            if self._line_start:
                self._stream.write("[+%.1f s] " % (time.perf_counter() - self._start))
            self._stream.write(piece)
            self._line_start = piece.endswith("\n")
        return len(text)

    def __getattr__(self, name):  # flush, fileno, encoding, isatty: the stream's own
        return getattr(self._stream, name)


@contextlib.contextmanager
def captured_output():
    """Everything written to fd 1 and 2 (Python or C++ level) goes into the yielded list; lines
    printed from Python are stamped with their time (_Stamped)."""
    log = []
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = [os.dup(1), os.dup(2)]
    stdout = sys.stdout
    with tempfile.TemporaryFile() as sink, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        if stdout is not None and not isinstance(stdout, _Stamped):
            sys.stdout = _Stamped(stdout, time.perf_counter())
        try:
            yield log
        finally:
            sys.stdout = stdout
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sink.seek(0)
            text = sink.read().decode("utf-8", "replace")
            log.extend("%s: %s" % (w.category.__name__, w.message) for w in caught)
            if text:
                log.append(text.rstrip("\n"))
