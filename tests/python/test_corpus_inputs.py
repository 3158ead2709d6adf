# labels: test_group::torch2 author::turnkey
"""corpus_inputs for the classes the transformers dry run still failed after session 15
(docs/corpus.md): each builds a real transformers class from a tiny configuration (random
weights, no download) and runs its forward with the corpus's inputs. Run by the PyPI
interpreter: `.deps/pypi/bin/python3 tests/python/test_corpus_inputs.py` (ctest:
torch2.corpus_inputs)."""

import unittest

import torch

from turnkeyml import corpus_inputs

import transformers


def forward(model, given):
    with torch.no_grad():
        return model(**given)


class CorpusInputsOfTheirOwnLayout(unittest.TestCase):
    """Configurations and inputs of the layouts the corpus did not make before (session 16)."""

    def test_rotary_sections_are_made_to_fit_the_rotary_width(self):
        # Glm4vTextConfig() names no rotary sections; the model takes [8, 12, 12] (32
        # frequencies) from its code, against 64 of a whole 128-wide head ("split_with_sizes
        # expects split_sizes to sum exactly to 64"): the published checkpoints rotate half the
        # head. A head too narrow for the sections (32 wide: 16 frequencies) gets them scaled.
        for hidden, rope in ((256, {"partial_rotary_factor": 0.5, "mrope_section": [8, 12, 12]}),
                             (64, {"mrope_section": [4, 6, 6]})):
            config = transformers.Glm4vTextConfig(
                vocab_size=100, hidden_size=hidden, intermediate_size=32, num_hidden_layers=1,
                num_attention_heads=2, num_key_value_heads=1)
            config = corpus_inputs.fitted(config, transformers.Glm4vTextModel)
            self.assertEqual({k: config.rope_parameters.get(k) for k in rope}, rope)
            model = transformers.Glm4vTextModel(config).eval()
            forward(model, corpus_inputs.transformers_inputs(model, 1, 8))


if __name__ == "__main__":
    unittest.main()
