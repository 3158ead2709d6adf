# Shared by the hostile scripts (not an input): records a process id in $HOSTILE_PID_DIR/pids.txt,
# when set, so a test can check that none of the processes they start is left running.
import os


def note_pid(pid=None):
    folder = os.environ.get("HOSTILE_PID_DIR")
    if folder:
        with open(os.path.join(folder, "pids.txt"), "a") as f:
            f.write("%d\n" % (pid or os.getpid()))
