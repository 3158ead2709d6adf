# Shared by the forged scripts: the Python side's channel, found as a hostile script would.
import gc
import os


def channel():
    return next(o for o in gc.get_objects() if type(o).__name__ == "Channel")


def raw(data):
    ch = channel()
    view = memoryview(data)
    while view:
        view = view[os.write(ch._event_fd, view):]
