"""The setup scripts that write gigabytes refuse a disk without room (scripts/lib/free-space.sh).

A CI clone once died in setup-keras with pip's "[Errno 28] No space left on device" after minutes
of work, leaving a half-made venv. Each script here is pointed at a 64 MiB tmpfs, mounted in a
mount namespace of its own (unshare -m: nothing outlives the case), and must exit 1 at once with
one line naming the folder, the space it needs and the space there is, writing nothing there.
Needs root (mount); skipped otherwise. Run with TURNKEY_SOURCE_DIR set.
"""

import os
import re
import shutil
import subprocess
import unittest

SOURCE = os.environ["TURNKEY_SOURCE_DIR"]


def refused(script, env_name):
    """Runs SCRIPT with ENV_NAME (its venv folder) on a tiny tmpfs; returns (rc, stderr, listing)."""
    shell = ('mount -t tmpfs -o size=64m tmpfs /mnt && {env}=/mnt/venv "$0"; rc=$?; '
             'echo "LISTING $(ls -A /mnt | tr "\\n" " ")"; exit $rc').format(env=env_name)
    result = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", shell,
                             os.path.join(SOURCE, "scripts", script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    listing = re.search(r"LISTING (.*)", result.stdout).group(1).strip()
    return result.returncode, result.stderr.strip().splitlines(), listing


@unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare"), "needs root to mount a tmpfs")
class SetupRefusesAFullDisk(unittest.TestCase):
    def check(self, script, env_name, what, gib):
        rc, lines, listing = refused(script, env_name)
        self.assertEqual(rc, 1, lines)
        mine = [line for line in lines if line.startswith(script + ":")]
        self.assertEqual(len(mine), 1, lines)
        self.assertRegex(mine[0], r"^%s: %s needs about %d GiB free; /mnt has 0\.\d GiB "
                         r"\(free some space, or name another disk: %s, TURNKEY_WHEEL_DIR\)$"
                         % (script, what, gib, env_name))
        self.assertEqual(listing, "", "nothing is written on the full disk")

    def test_pypi_venv(self):
        self.check("setup-pypi", "TURNKEY_PYPI_DIR", "the PyPI venv", 7)

    def test_keras_venv(self):
        self.check("setup-keras", "TURNKEY_KERAS_DIR", "the Keras venv", 2)


if __name__ == "__main__":
    unittest.main()
