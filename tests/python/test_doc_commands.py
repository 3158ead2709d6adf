#!/usr/bin/env python3
"""Every command the documents show, run (issue 17).

1. The commands of README.md, models/README.md and docs/*.md, extracted from the files at test
   time (so a new example cannot go stale unseen): each line of a shell code block that starts with
   `turnkey`/`build/turnkey`/`benchit` (only its `$ ` lines when a block has prompts), and each
   inline code span that does. A command runs with paths adapted (PLACEHOLDERS: names that are no
   file of this repository), tiny models, capped iterations and a temporary cache, and must succeed
   or fail with one line naming a documented limit of this machine (LIMITS). A synopsis (with
   metavariables: `turnkey cache stats NAME...`) is not run: its command's `-h` must succeed and
   list every option the synopsis shows.
2. The commands and API calls of the original tool's five documents (/work/shared/seeds), adapted
   to this repository, listed in tests/data/seed_commands.txt (format described there).

Run by ctest (turnkey_doc_commands): TURNKEY_BIN names the binary; the interpreter running this
file must have torch (it runs the API calls). `--only docs|seeds` runs one list; `-v` prints each
command's output.
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = os.environ.get("TURNKEY_BIN", str(REPO / "build" / "turnkey"))

DOC_FILES = [REPO / "README.md", REPO / "models" / "README.md"] + sorted(
    (REPO / "docs").glob("*.md"))

# A command starts with the program, after optional VAR=value assignments and a `$ ` prompt.
COMMAND_START = re.compile(r"^(?:\$ )?(?:[A-Z_]+=\S* )*(?:build/)?(?:turnkey|benchit)(?: |$)")
SHELL_LANGS = ("", "sh", "bash", "shell", "console")

# Names in the documents that are no file where the command runs -> what runs instead (tiny
# inputs; a placeholder may stand for several).
PLACEHOLDERS = {
    "my_script.py": ["examples/cli/scripts/hello_world.py"],
    "script.py": ["examples/cli/scripts/hello_world.py"],
    "hello_world.py": ["examples/cli/scripts/hello_world.py"],
    # A conv net: OpenCV DNN (docs/plugins.md) takes it; 1-D inputs like hello_world's it does not.
    "resnet18_script.py": ["models/selftest/small_conv.py"],
    "model.onnx": ["examples/cli/onnx/sample.onnx"],
    "corpus/*.py": ["models/selftest/linear.py", "models/selftest/twolayer.py"],
    "before_cache": ["{cache}"],
    "after_cache": ["{cache}"],
    "/tmp/rep-cache-a": ["{cache}"],
    "/tmp/rep-cache-c": ["{cache}"],
    "/tmp/c": ["{work}/c"],
    "$rt": ["ort"],
    "$PWD": ["{work}"],
}

# Real inputs too costly for the walk (it runs in CI on 2 cores) -> tiny ones that exercise the same
# options. Whole corpora take minutes to hours (docs/corpus.md); BERT-base exports in ~10 s.
STAND_INS = {
    "models/selftest/*.py": ["models/selftest/linear.py", "models/selftest/twolayer.py"],
    "models/torchvision/*.py": ["models/selftest/linear.py"],
    "models/transformers_like/bert_base.py": ["models/selftest/embedding.py"],
}

# Option values capped so the walk stays cheap; the option itself is still exercised.
CAPS = {"--iterations": 50, "--duration": 0.3}

# Shown in the documents but not commands a user types: text -> why.
NOT_RUN = {
    "turnkey SCRIPT --attach E,C": "the Python API's attach mode, started by turnkeyml itself "
                                   "(docs/protocol.md)",
    "turnkey SCRIPT --attach E,C [options]": "the Python API's attach mode (docs/protocol.md)",
    "turnkey __isolate": "the worker entry point turnkey starts itself (docs/corpus_runs.md)",
    "TURNKEY_PLUGIN_PATH=$PWD turnkey model.onnx --runtime my-runtime":
        "names the reader's own plugin, built in the folder they are in (docs/plugins.md)",
}

# Documented limits of this machine: a command may fail with one line matching one of these.
LIMITS = [
    (re.compile(r"nvidia|GPU|CUDA|TensorRT", re.I), "no GPU"),
    (re.compile(r"needs (PyTorch|torch) >= 2|torch 1\.13[^\n]*exports ONNX opsets 7 to 17"),
     "PyTorch 1.13 (torch 2 features need .deps/pypi)"),
    (re.compile(r"\.deps/pypi[^\n]*(not an executable|absent|not found)"),
     "PyPI interpreter not made (scripts/setup-pypi)"),
    (re.compile(r"\b(timm|transformers|diffusers)\b"), "no timm/transformers packages"),
    (re.compile(r"imports (tensorflow|keras)[^\n]*scripts/setup-keras|\.deps/keras[^\n]*"
                r"(not an executable|absent|not found)"),
     "Keras interpreter not made, or not named (scripts/setup-keras, docs/keras.md)"),
    (re.compile(r"[Ss]lurm|sbatch|slurmctld"), "no Slurm cluster running"),
    (re.compile(r"openvino: unavailable: [^\n]*scripts/setup-openvino"),
     "OpenVINO not installed (scripts/setup-openvino)"),
]

PYTHON_PREAMBLE = '''
import os, sys, torch
torch.manual_seed(0)
class YourModel(torch.nn.Module):
    def __init__(self, n=10):
        super().__init__()
        self.fc = torch.nn.Linear(n, 5)
    def forward(self, x):
        return self.fc(x)
model = my_model = model_a = YourModel()
model_b = YourModel(20)
x = torch.rand(10)
inputs = inputs_a = {"x": x}
inputs_b = {"x": torch.rand(20)}
CACHE_DIR = os.environ["TURNKEY_CACHE_DIR"]
'''


class Walk:
    def __init__(self, verbose):
        self.verbose = verbose
        self.tmp = Path(tempfile.mkdtemp(prefix="tk-doc-commands-"))
        # The work folder mirrors the repository (read-only parts linked, examples copied, since
        # the documents' commands write beside them), so commands run as written from its root.
        self.work = self.tmp / "repo"
        self.work.mkdir()
        for name in ("models", "python", "scripts", "bench", "docs", "extras", ".deps", "build"):
            if (REPO / name).exists():
                (self.work / name).symlink_to(REPO / name)
        shutil.copytree(REPO / "examples", self.work / "examples")
        self.cache = self.tmp / "cache"
        self.env = dict(os.environ)
        self.env.update({
            "TURNKEY_CACHE_DIR": str(self.cache),
            "TURNKEY_BUILD_MONITOR": "False",
            "TURNKEY_TRACEBACK": "False",
            "PYTHONPATH": str(REPO / "python"),
            "TURNKEY_BIN": BIN,
        })
        self.failures = []
        self.pending_failed = []
        self.pending_passed = []
        self.count = 0
        self.ran = set()

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- adapting a command ----------------------------------------------------------------

    def subst(self, text):
        return text.replace("{cache}", str(self.cache)).replace("{work}", str(self.work))

    @staticmethod
    def search_dirs(argv):
        """Folders the classic grammar's --search-dir / -s names: inputs are found there."""
        return [argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("--search-dir", "-s")]

    def adapt(self, argv, cwd):
        out = []
        i = 0
        while i < len(argv):
            tok = argv[i]
            if tok in STAND_INS:
                out += STAND_INS[tok]
            elif tok in PLACEHOLDERS and not (Path(cwd) / tok).exists() and \
                    not any((Path(cwd) / d / tok).exists() for d in self.search_dirs(argv)):
                out += [self.subst(t) for t in PLACEHOLDERS[tok]]
            elif tok in CAPS and i + 1 < len(argv):
                cap = CAPS[tok]
                try:
                    value = min(float(argv[i + 1]), cap)
                    out += [tok, str(int(value)) if isinstance(cap, int) else str(value)]
                    i += 1
                except ValueError:
                    out.append(tok)
            elif any(c in tok for c in "*?") and not tok.startswith("-") and "::" not in tok:
                matches = sorted(glob.glob(tok, root_dir=cwd))
                out += matches if matches else [tok]
            else:
                out.append(self.subst(tok.replace("$PWD", str(self.work))))
            i += 1
        return out

    # ---- running ---------------------------------------------------------------------------

    def run(self, argv, cwd, env_extra=None, timeout=300):
        env = dict(self.env)
        env.update(env_extra or {})
        if argv and argv[0] in ("turnkey", "build/turnkey"):
            argv = [BIN] + argv[1:]
        elif argv and argv[0] in ("benchit", "build/benchit"):
            argv = [str(Path(BIN).parent / "benchit")] + argv[1:]
        elif argv and argv[0] in ("python", "python3"):
            argv = [sys.executable] + argv[1:]
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=timeout)
            code, out = p.returncode, p.stdout + p.stderr
        except OSError as e:  # not found, not executable
            code, out = 127, str(e)
        except subprocess.TimeoutExpired as e:
            code, out = -1, f"timed out after {timeout} s\n{e.stdout or ''}{e.stderr or ''}"
        return code, out, time.monotonic() - t0

    def verdict(self, code, out):
        """'' when fine, else why not."""
        if code == 0:
            return ""
        if "Traceback (most recent call last)" in out:
            return f"exit {code} with a traceback"
        lines = [l for l in out.splitlines() if l.strip()]
        for pattern, limit in LIMITS:
            hits = [l for l in lines if pattern.search(l)]
            if hits:
                return ""  # a documented limit, said on a line
        return f"exit {code}, and no line names a documented limit"

    def check(self, origin, shown, argv, cwd, env_extra=None, pending=None, expect=None):
        self.count += 1
        code, out, secs = self.run(argv, cwd, env_extra)
        why = self.verdict(code, out)
        if not why and expect and not re.search(expect, out):
            why = f"the output does not show /{expect}/"
        tag = "ok " if not why else ("PENDING" if pending else "FAIL")
        print(f"[{tag}] {secs:5.1f}s {origin}: {shown}", flush=True)
        if self.verbose or (why and not pending):
            print("    $ " + " ".join(shlex.quote(a) for a in argv))
            print("    " + "\n    ".join(out.strip().splitlines()[-25:]))
        if why and pending:
            self.pending_failed.append(f"{origin}: {shown} ({why}; needs {pending})")
        elif why:
            self.failures.append(f"{origin}: {shown}: {why}")
        elif pending:
            self.pending_passed.append(f"{origin}: {shown} (marked 'needs {pending}')")

    # ---- list 1: README.md and docs/ -------------------------------------------------------

    def doc_commands(self):
        found = []
        for path in DOC_FILES:
            in_block, lang, block = False, "", []
            for n, line in enumerate(path.read_text().splitlines(), 1):
                s = line.strip()
                if s.startswith("```"):
                    if not in_block:
                        in_block, lang, block = True, s[3:].strip(), []
                        continue
                    in_block = False
                    prompts = any(l.startswith("$ ") for _, l in block)
                    for bn, l in block:
                        if prompts and not l.startswith("$ "):
                            continue
                        if COMMAND_START.match(l):
                            found.append((f"{path.relative_to(REPO)}:{bn}", l))
                    continue
                if in_block:
                    if lang in SHELL_LANGS:
                        block.append((n, s))
                    continue
                for span in re.findall(r"`([^`]+)`", line):
                    span = span.strip()
                    if COMMAND_START.match(span):
                        found.append((f"{path.relative_to(REPO)}:{n}", span))
        return found

    @staticmethod
    def split_command(text):
        """[(env, argv)] of a shown line: prompt, comment and `&&` handled like a shell."""
        text = text[2:] if text.startswith("$ ") else text
        words = shlex.split(text, comments=True)
        commands, cur = [], []
        for w in words:
            if w == "&&":
                commands.append(cur)
                cur = []
            else:
                cur.append(w)
        commands.append(cur)
        out = []
        for argv in commands:
            env = {}
            while argv and re.match(r"^[A-Z_]+=", argv[0]):
                k, v = argv.pop(0).split("=", 1)
                env[k] = v
            out.append((env, argv))
        return out

    @staticmethod
    def is_synopsis(argv):
        # Metavariables (SCRIPT, NAME..., A B), optional parts ([--html]) or an ellipsis.
        return any(re.fullmatch(r"[A-Z][A-Z_]*(\.\.\.)?|\.\.\.|\[.*|.*\]|.*\.\.\.", w)
                   for w in argv[1:])

    def check_synopsis(self, origin, shown, argv):
        self.count += 1
        words = []
        for w in argv[1:]:
            if w.startswith("-") or w.startswith("[") or re.fullmatch(r"[A-Z][A-Z_]*(\.\.\.)?", w):
                break
            words.append(w)
        options = sorted(set(re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", " ".join(argv[1:]))))
        code, out, secs = self.run([argv[0]] + words + ["-h"], self.work)
        missing = [o for o in options if o not in out]
        ok = code == 0 and not missing
        print(f"[{'ok ' if ok else 'FAIL'}] {secs:5.1f}s {origin}: {shown} (synopsis: "
              f"{' '.join(['turnkey'] + words + ['-h'])})", flush=True)
        if not ok:
            self.failures.append(f"{origin}: {shown}: `-h` exit {code}"
                                 + (f", does not list {', '.join(missing)}" if missing else ""))

    def walk_docs(self):
        seen = set()
        for origin, shown in self.doc_commands():
            if shown in seen:
                continue  # the same command in two places runs once
            seen.add(shown)
            if shown in NOT_RUN:
                print(f"[not run] {origin}: {shown}: {NOT_RUN[shown]}")
                continue
            for env, argv in self.split_command(shown):
                if len(argv) == 1 or (len(argv) == 1 and argv[0] == "build/turnkey"):
                    continue  # the program's name in prose, not a command
                if self.is_synopsis(argv):
                    self.check_synopsis(origin, shown, argv)
                    continue
                env = {k: self.subst(v.replace("$PWD", str(self.work))) for k, v in env.items()}
                adapted = self.adapt(argv, self.work)
                key = (tuple(sorted(env.items())), tuple(adapted))
                if key in self.ran:
                    continue  # two shown commands that adapt to the same run
                self.ran.add(key)
                self.check(origin, shown, adapted, self.work, env)
        self.walk_python_blocks()

    def python_blocks(self):
        for path in DOC_FILES:
            in_block, block, start = False, [], 0
            for n, line in enumerate(path.read_text().splitlines(), 1):
                s = line.strip()
                if s.startswith("```"):
                    if not in_block and s[3:].strip() == "python":
                        in_block, block, start = True, [], n
                    elif in_block:
                        in_block = False
                        yield f"{path.relative_to(REPO)}:{start}", "\n".join(block)
                    continue
                if in_block:
                    block.append(line)

    def walk_python_blocks(self):
        """Python blocks: code (it imports) runs after the preamble; a signature (no import) must
        name only keywords the function accepts."""
        for origin, code in self.python_blocks():
            if "import" in code:
                self.check(origin, "python block", [sys.executable, "-c", PYTHON_PREAMBLE + code],
                           self.work)
                continue
            m = re.match(r"\s*(\w+)\(", code)
            if not m:
                continue
            keywords = re.findall(r"(\w+)=", code)
            probe = ("import inspect, turnkeyml\n"
                     f"params = inspect.signature(turnkeyml.{m.group(1)}).parameters\n"
                     f"missing = [k for k in {keywords!r} if k not in params]\n"
                     "assert not missing, f'not accepted: {missing}'\n")
            self.check(origin, f"signature of {m.group(1)}()", [sys.executable, "-c", probe],
                       self.work)

    # ---- list 2: the original's documents ----------------------------------------------------

    def walk_seeds(self, path):
        cwd = self.work
        for n, raw in enumerate(path.read_text().splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            origin = f"{path.name}:{n}"
            pending = None
            m = re.match(r"^\[needs ([^\]]+)\]\s*(.*)$", line)
            if m:
                pending, line = m.group(1), m.group(2)
            m = re.match(r"^\[skip: ([^\]]+)\]\s*(.*)$", line)
            if m:
                print(f"[not run] {origin}: {m.group(2)}: {m.group(1)}")
                continue
            expect = None
            if " => " in line:
                line, expect = line.rsplit(" => ", 1)
            if line.startswith("cd "):
                cwd = self.work / line[3:].strip()
                continue
            if line.startswith("py: "):
                code = PYTHON_PREAMBLE + line[4:].replace("; ", "\n") + "\n"
                self.check(origin, line, [sys.executable, "-c", code], cwd, pending=pending,
                           expect=expect)
                continue
            for env, argv in self.split_command(line):
                env = {k: self.subst(v) for k, v in env.items()}
                if argv[0] == "ls":
                    argv = ["ls"] + argv[1:]
                self.check(origin, line, self.adapt(argv, cwd), cwd, env, pending=pending,
                           expect=expect)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["docs", "seeds"])
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    walk = Walk(args.verbose)
    t0 = time.monotonic()
    try:
        if args.only in (None, "docs"):
            walk.walk_docs()
        if args.only in (None, "seeds"):
            walk.walk_seeds(REPO / "tests" / "data" / "seed_commands.txt")
    finally:
        walk.close()
    print(f"\n{walk.count} commands in {time.monotonic() - t0:.0f} s")
    if walk.pending_passed:
        print("Marked as needing another branch's feature, but they pass now (remove the mark):")
        print("  " + "\n  ".join(walk.pending_passed))
    if walk.pending_failed:
        print(f"{len(walk.pending_failed)} commands wait for features of other branches:")
        print("  " + "\n  ".join(walk.pending_failed))
    if walk.failures:
        print(f"{len(walk.failures)} FAILED:")
        print("  " + "\n  ".join(walk.failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
