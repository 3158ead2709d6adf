# Never ends.

from pids import note_pid

note_pid()
while True:
    pass
