# Reads address 0: the interpreter dies with SIGSEGV.
import ctypes

from pids import note_pid

note_pid()
ctypes.string_at(0)
