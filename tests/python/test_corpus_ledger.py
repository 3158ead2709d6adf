"""bench/corpus_ledger.py, the record a corpus run of days keeps in git (docs/corpus_libraries.md):
which scripts a run leaves out, how a run's folder is added (a folder added again keeps the
ledger's lines of unchanged outcomes, with the commit that made them), and the rate it prints.
Run by any Python 3: `python3 tests/python/test_corpus_ledger.py` (ctest:
turnkey_corpus_ledger_tests)."""

import importlib.machinery
import io
import os
import tempfile
import unittest
from contextlib import redirect_stdout

LEDGER_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                         "corpus_ledger.py")
ledger_tool = importlib.machinery.SourceFileLoader("corpus_ledger", LEDGER_PY).load_module()


class CorpusLedger(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        root = os.path.join(self.dir.name, "models", "transformers")
        os.makedirs(root)
        self.scripts = []
        for name in ("a_model", "b_model", "c_model"):
            path = os.path.join(root, name + ".py")
            with open(path, "w") as f:
                f.write("# %s\n" % name)
            self.scripts.append(path)
        self.out = os.path.join(self.dir.name, "run")
        os.makedirs(os.path.join(self.out, "cache"))
        self.ledger = os.path.join(self.dir.name, "ledger.tsv")

    def tearDown(self):
        self.dir.cleanup()

    def run_folder(self, commit, outcomes):
        with open(os.path.join(self.out, "commit"), "w") as f:
            f.write(commit + "\n")
        with open(os.path.join(self.out, "outcomes.tsv"), "w") as f:
            for script, status in outcomes:
                f.write("\t".join([script, os.path.basename(script)[:-3] + "_1234abcd", status,
                                   "benchmark", "", "within_tolerance", "outputs"]) + "\n")

    def add(self):
        with redirect_stdout(io.StringIO()):
            ledger_tool.add(self.ledger, self.out)
        return {r["script"]: r for r in ledger_tool.read(self.ledger)}

    def test_a_folder_added_again_keeps_the_lines_of_unchanged_outcomes(self):
        a, b, c = self.scripts
        self.run_folder("1111111111111111", [(a, "successful"), (b, "failed")])
        first = self.add()
        self.assertEqual({r["commit"] for r in first.values()}, {"111111111111"})
        self.assertEqual(ledger_tool.left(self.ledger, self.scripts), [c])
        # Resumed by a newer turnkey: b ran again and succeeded, c is new, a is as it was.
        self.run_folder("2222222222222222", [(a, "successful"), (b, "successful"),
                                             (c, "cancelled")])
        second = self.add()
        self.assertEqual(second["models/transformers/a_model.py"]["commit"], "111111111111")
        self.assertEqual(second["models/transformers/b_model.py"]["commit"], "222222222222")
        self.assertEqual(second["models/transformers/b_model.py"]["status"], "successful")
        self.assertNotIn("models/transformers/c_model.py", second)  # unfinished: not added
        # A script whose text changed is run again.
        with open(a, "a") as f:
            f.write("# changed\n")
        self.assertEqual(ledger_tool.left(self.ledger, self.scripts), [a, c])

    def test_tables_count_each_corpus_builds_and_its_failures_by_cause(self):
        a, b, c = self.scripts
        rows = [  # script, build, status, stage, error, verdict, compared
            (a, "a_1", "successful", "benchmark", "", "within_tolerance", "outputs"),
            (a, "a_2", "successful", "benchmark", "", "within_tolerance_on_intermediates",
             "intermediate tensors"),
            (b, "b_1", "out_of_memory", "benchmark",
             "out of memory while reading ort's outputs (std::bad_alloc)", "", ""),
            (c, "-", "discovery_failed", "discover",
             "ImportError: needs natten (log: /x/c.log)", "", "")]
        with open(os.path.join(self.out, "commit"), "w") as f:
            f.write("3333333333333333\n")
        with open(os.path.join(self.out, "outcomes.tsv"), "w") as f:
            for row in rows:
                f.write("\t".join(row) + "\n")
        # The first call's seconds, from the build's stats (schema 12): a line's call_s.
        os.makedirs(os.path.join(self.out, "cache", "a_1"))
        with open(os.path.join(self.out, "cache", "a_1", "turnkey_stats.yaml"), "w") as f:
            f.write("depth: 0\nfirst_call_s: 1.25\nschema_version: 12\n")
        self.add()
        calls = {r["build"]: r["call_s"] for r in ledger_tool.read(self.ledger)}
        self.assertEqual((calls["a_1"], calls["a_2"]), ("1.2", ""))
        printed = io.StringIO()
        with redirect_stdout(printed):
            ledger_tool.tables(self.ledger)
        lines = printed.getvalue().splitlines()
        # 3 scripts, 1 with signal (a); builds: 3 discovered, 3 exported, 2 benchmarked; verdicts.
        self.assertIn("| transformers | 3 | 1 | 3 | 3 | 2 | 1 | 1 | 0 | 0 | 0 | 0.0 h |", lines)
        self.assertIn("| discovery_failed | discover | ImportError | 1 | c_model: ImportError: "
                      "needs natten |", lines)
        self.assertIn("| out_of_memory | benchmark | out of memory | 1 | b_model: "
                      "out of memory while reading ort's outputs (std::bad_alloc) |", lines)


if __name__ == "__main__":
    unittest.main()
