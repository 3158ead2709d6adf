# labels: test_group::torch2 author::turnkey
"""models/timm's scripts for models over the corpus's budget: the generator finds the argument
that counts a model's blocks (turnkeyml.corpus_inputs.blocks, tried on the meta device) and writes
a script that builds the model with fewer blocks and says so. timm's own tiny test models with a
budget set below them (no download); run by the PyPI interpreter:
`PYTHONPATH=python .deps/pypi/bin/python3 tests/python/test_timm_corpus.py`
(ctest: torch2.timm_corpus)."""

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

import timm
import torch

from turnkeyml.corpus_inputs import blocks

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
SIZE = (3, 160, 160)  # the test models' default input size


def _generator():
    """models/timm/generate as a module (it has no .py extension on purpose)."""
    path = os.path.join(ROOT, "models", "timm", "generate")
    loader = importlib.machinery.SourceFileLoader("timm_generate", path)
    spec = importlib.util.spec_from_loader("timm_generate", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class FewerBlocks(unittest.TestCase):
    def test_a_model_within_the_budget_is_left_as_it_is(self):
        self.assertIsNone(blocks.fewer_blocks("test_vit", SIZE))

    def test_a_vit_over_the_budget_keeps_its_widths_and_heads_with_fewer_blocks(self):
        default = timm.create_model("test_vit", pretrained=False)
        budget = blocks.parameters("test_vit") - 1
        fit = blocks.fewer_blocks("test_vit", SIZE, budget)
        self.assertEqual(list(fit.kwargs), ["depth"])
        self.assertLess(fit.kwargs["depth"], len(default.blocks))
        self.assertLessEqual(fit.after, budget)
        smaller = timm.create_model("test_vit", pretrained=False, **fit.kwargs).eval()
        self.assertEqual(sum(p.numel() for p in smaller.parameters()), fit.after)
        self.assertEqual(len(smaller.blocks), fit.kwargs["depth"])
        self.assertEqual(smaller.embed_dim, default.embed_dim)
        self.assertEqual(smaller.blocks[0].attn.num_heads, default.blocks[0].attn.num_heads)
        with torch.no_grad():
            self.assertEqual(tuple(smaller(torch.rand(1, *SIZE)).shape), (1, default.num_classes))

    def test_stages_keep_their_number_and_widths_with_their_block_counts_capped(self):
        default = timm.create_model("test_convnext", pretrained=False)
        depths = [len(stage.blocks) for stage in default.stages]
        fit = blocks.fewer_blocks("test_convnext", SIZE, blocks.parameters("test_convnext") - 1)
        self.assertEqual(list(fit.kwargs), ["depths"])
        capped = list(fit.kwargs["depths"])
        self.assertEqual(len(capped), len(depths))
        self.assertTrue(all(c <= d for c, d in zip(capped, depths)) and capped != depths)
        smaller = timm.create_model("test_convnext", pretrained=False, **fit.kwargs)
        self.assertEqual([len(stage.blocks) for stage in smaller.stages], capped)
        self.assertEqual(smaller.num_features, default.num_features)

    def test_block_counts_in_a_configuration_dataclass_are_found(self):
        # MaxViT and CoAtNet take their stage depths in a configuration (cfg.depths), which
        # timm.create_model overlays with a keyword argument of the same name.
        fit = blocks.fewer_blocks("test_coatnet", SIZE, blocks.parameters("test_coatnet") - 1)
        self.assertEqual(fit.kwargs, {"depths": (1, 1, 1, 1)})  # from (1, 1, 2, 1)
        self.assertEqual(blocks.parameters("test_coatnet", **fit.kwargs), fit.after)

    def test_a_budget_below_one_block_per_stage_leaves_the_model_as_it_is_and_says_so(self):
        fit = blocks.fewer_blocks("test_vit", SIZE, 1000)
        self.assertEqual(fit.kwargs, {})
        self.assertIn("none fits", fit.changed)


class Generator(unittest.TestCase):
    def test_a_script_within_the_budget_is_the_committed_one_byte_for_byte(self):
        with open(os.path.join(ROOT, "models", "timm", "test_vit.py"), encoding="utf-8") as f:
            self.assertEqual(_generator().script("test_vit"), f.read())

    def test_a_script_over_the_budget_builds_fewer_blocks_and_says_what_changed(self):
        generate = _generator()
        budget = blocks.parameters("test_vit") - 1
        fit = blocks.fewer_blocks("test_vit", SIZE, budget)
        text = generate.script("test_vit", budget)
        call = 'timm.create_model("test_vit", pretrained=False, depth=%d)' % fit.kwargs["depth"]
        self.assertEqual(text.count(call), 2)  # the docstring's and the script's
        labels = text.splitlines()[0].split()
        self.assertIn("fitted::depth=%d,default_parameters=%s" % (
            fit.kwargs["depth"], generate._size(fit.before).replace(" ", "")), labels)
        self.assertIn("The default model has %s parameters" % generate._size(fit.before),
                      " ".join(text.split()))
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "test_vit.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
            run = subprocess.run([sys.executable, path], env=env, capture_output=True,
                                 text=True, timeout=600)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("logits shape: (1, 1000)", run.stdout)


if __name__ == "__main__":
    unittest.main()
