"""The two pipes to the C++ core (docs/protocol.md): JSON lines out on E, commands in on C."""

import json
import os
import sys
import threading

PROTOCOL_VERSION = 3

# The real one: the runner replaces os._exit while the script runs.
exit_now = os._exit

# The core refuses a message whose text field is longer than its schema's limit in UTF-8 bytes
# (src/discovery/protocol_schema.cpp, kTextBytes): a log or traceback that long (Grounding DINO's
# export warned 4 MB of tracer warnings) is sent as its head and tail around a line saying so.
TEXT_FIELDS_BYTES = {"log": 4 << 20, "traceback": 4 << 20}


def fitted_text(text, limit):
    """`text` if its UTF-8 form fits in `limit` bytes, else its head and tail around a line that
    says how many bytes were left out, within `limit`."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    keep = (limit - 200) // 2
    return "%s\n... (%d bytes left out) ...\n%s" % (
        data[:keep].decode("utf-8", "ignore"), len(data) - 2 * keep,
        data[-keep:].decode("utf-8", "ignore"))


class Channel:
    def __init__(self, event_fd, command_fd):
        # The script must not pass our pipes to the processes it starts.
        os.set_inheritable(event_fd, False)
        os.set_inheritable(command_fd, False)
        self._event_fd = event_fd
        self._commands = os.fdopen(command_fd, "rb", closefd=False)
        self.owner_pid = os.getpid()
        self._lock = threading.Lock()  # script threads may discover models concurrently

    def send(self, type_, **fields):
        if os.getpid() != self.owner_pid:  # a fork of the script: its messages are not ours
            return
        message = {"v": PROTOCOL_VERSION, "type": type_}
        message.update(fields)
        for name, limit in TEXT_FIELDS_BYTES.items():
            if isinstance(message.get(name), str):
                message[name] = fitted_text(message[name], limit)
        data = (json.dumps(message, default=str) + "\n").encode()
        view = memoryview(data)
        try:
            with self._lock:
                while view:
                    written = os.write(self._event_fd, view)
                    view = view[written:]
        except OSError as error:
            self.pipe_closed(error)

    def pipe_closed(self, error):
        """The core is gone: nobody will read what the script finds. Raising would hand the
        error to the user's code (we may be inside a module call), so stop here. (The Python
        API, which started the core itself, raises instead.)"""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os.write(2, ("turnkey: event pipe closed (%s); stopping\n" % error).encode())
        exit_now(1)

    def receive(self):
        """The next command as a dict, None at end of file. Raises ValueError on a bad line."""
        line = self._commands.readline()
        if not line:
            return None
        command = json.loads(line)
        if not isinstance(command, dict):
            raise ValueError("a command must be a JSON object")
        return command
