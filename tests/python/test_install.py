"""`turnkeyml` installed with pip into a user's own venv (pyproject.toml, docs/python_api.md).

Run by an interpreter that has torch (ctest: Debian's /usr/bin/python3), with TURNKEY_SOURCE_DIR
and TURNKEY_BIN set. Each case makes a venv that sees that interpreter's torch
(--system-site-packages) but not the checkout's python/ folder, installs the package with pip
(offline: --no-build-isolation uses the venv's own setuptools), and benchmarks a tiny model from
outside the checkout:
- editable (`pip install -e REPO`): the package stays in REPO/python and starts REPO/build/turnkey
  on its own;
- a copy (`pip install REPO`): the binary named by TURNKEY_BIN.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ["TURNKEY_SOURCE_DIR"]
BINARY = os.environ["TURNKEY_BIN"]

USER_CODE = """
import os, sys, turnkeyml, torch
from turnkeyml import benchmark_model
print("PACKAGE", os.path.dirname(turnkeyml.__file__))
print("BINARY", turnkeyml.turnkey_binary())
model = torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.ReLU())
perf = benchmark_model(model, {"input": torch.rand(2, 6)}, iterations=5, cache_dir=sys.argv[1],
                       build_name="install_check")
print("MEAN", perf.mean_latency)
"""


def run(argv, env=None, cwd=None):
    result = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=600)
    if result.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (" ".join(argv), result.returncode,
                                                     result.stdout))
    return result.stdout


class Install(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tk-install-")
        self.venv = os.path.join(self.dir, "venv")
        run([sys.executable, "-m", "venv", "--system-site-packages", self.venv])
        self.python = os.path.join(self.venv, "bin", "python3")
        # The user's environment: no PYTHONPATH into the checkout, no TURNKEY_BIN unless given.
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("PYTHONPATH", "TURNKEY_BIN")}
        self.env["TURNKEY_BUILD_MONITOR"] = "False"
        self.env["PIP_NO_INDEX"] = "1"

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def pip_install(self, *args):
        run([self.python, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
             *args], env=self.env, cwd=self.dir)

    def check_user_code(self, env, package_dir, binary):
        out = run([self.python, "-c", USER_CODE, os.path.join(self.dir, "cache")], env=env,
                  cwd=self.dir)
        self.assertIn("PACKAGE %s" % package_dir, out)
        self.assertIn("BINARY %s" % binary, out)
        mean = float(out.split("MEAN ")[1].split()[0])
        self.assertGreater(mean, 0.0)

    def test_a_copy_in_the_venv_starts_the_binary_turnkey_bin_names(self):
        # Installed from a copy of the package's files, as from a source archive.
        copy = os.path.join(self.dir, "src")
        os.makedirs(copy)
        shutil.copy(os.path.join(SOURCE, "pyproject.toml"), copy)
        shutil.copytree(os.path.join(SOURCE, "python"), os.path.join(copy, "python"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        self.pip_install(copy)
        site = run([self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   env=self.env).strip()
        env = dict(self.env, TURNKEY_BIN=BINARY)
        self.check_user_code(env, os.path.join(site, "turnkeyml"), BINARY)
        # Without TURNKEY_BIN and with no turnkey on PATH, one line says how to name it.
        bare = dict(self.env, PATH="/usr/bin:/bin")
        result = subprocess.run([self.python, "-c", USER_CODE, os.path.join(self.dir, "c2")],
                                env=bare, cwd=self.dir, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=600)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("the turnkey binary was not found", result.stdout)
        self.assertIn("TURNKEY_BIN", result.stdout)

    def test_an_editable_install_starts_the_checkouts_own_binary(self):
        # Editable from a copy of the checkout's layout (python/, pyproject.toml and the built
        # binary at build/turnkey), so the test writes nothing into the checkout itself.
        copy = os.path.join(self.dir, "checkout")
        os.makedirs(os.path.join(copy, "build"))
        shutil.copy(os.path.join(SOURCE, "pyproject.toml"), copy)
        shutil.copytree(os.path.join(SOURCE, "python"), os.path.join(copy, "python"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        os.symlink(BINARY, os.path.join(copy, "build", "turnkey"))
        self.pip_install("-e", copy)
        self.check_user_code(self.env, os.path.join(copy, "python", "turnkeyml"),
                             os.path.join(copy, "build", "turnkey"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
