"""Which threads are runnable while a command runs (bench/device-check's gap on nvidia: turnkey's
results there record ~5 other runnable threads before the timed calls, the bare loop's process
none): runs COMMAND, reads every thread's state from /proc every 20 ms until it exits, and
prints the threads found runnable (state R) most often, as "process/thread: share of samples",
and the mean number of runnable threads per sample, this sampler excluded.

    python3 runnable.py [--top 12] -- COMMAND [ARGS...]

Exit code: the command's.
"""
import argparse
import collections
import os
import subprocess
import sys
import time


def comm(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "?"


def runnable_threads(skip):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == skip:
            continue
        tasks = "/proc/%s/task" % pid
        try:
            tids = os.listdir(tasks)
        except OSError:
            continue
        for tid in tids:
            try:
                with open("%s/%s/stat" % (tasks, tid)) as f:
                    stat = f.read()
            except OSError:
                continue
            state = stat[stat.rfind(")") + 2:][:1]
            if state == "R":
                found.append("%s/%s" % (comm("/proc/%s/comm" % pid),
                                        stat[stat.find("(") + 1:stat.rfind(")")]))
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    child = subprocess.Popen(command)
    counts, samples, total = collections.Counter(), 0, 0
    me = os.getpid()
    while child.poll() is None:
        found = runnable_threads(me)
        counts.update(found)
        total += len(found)
        samples += 1
        time.sleep(0.02)
    print("RUNNABLE %s: %d samples, mean %.2f runnable threads per sample"
          % (os.path.basename(command[0]), samples, total / max(samples, 1)))
    for name, n in counts.most_common(args.top):
        print("RUNNABLE   %-40s %5.2f threads on average" % (name, n / max(samples, 1)))
    sys.stdout.flush()
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
