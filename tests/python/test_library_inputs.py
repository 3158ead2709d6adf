# labels: test_group::torch2 author::turnkey
"""What library models hand the Python side (python/turnkeyml/discovery): ModelOutput and
BaseOutput, plain dataclasses, cache objects, decorated forwards. Real transformers and diffusers
classes (random weights, tiny configurations, no download); run by the PyPI interpreter:
`.deps/pypi/bin/python3 tests/python/test_library_inputs.py` (ctest: torch2.library_inputs)."""

import dataclasses
import functools
import unittest

import torch

from turnkeyml import corpus_inputs
from turnkeyml.corpus_inputs import config as corpus_config, fitting as corpus_fitted, text as corpus_text
from turnkeyml.discovery import hashing, inputs

import diffusers
import transformers
from diffusers.models.unets.unet_2d_condition import UNet2DConditionOutput
from transformers.cache_utils import DynamicCache
from transformers.modeling_outputs import BaseModelOutput


@dataclasses.dataclass(frozen=True)
class Pair:
    first: torch.Tensor
    second: tuple


def shared_decorator(forward):
    """One wrapper for every forward it decorates, as transformers' decorators are."""
    @functools.wraps(forward)
    def wrapper(self, *args, **kwargs):
        return forward(self, *args, **kwargs)
    return wrapper


class Doubles(torch.nn.Module):
    @shared_decorator
    def forward(self, x):
        return x * 2


class Negates(torch.nn.Module):
    @shared_decorator
    def forward(self, x):
        return -x


class ShiftsOne(torch.nn.Module):
    @shared_decorator
    def forward(self, x):
        return x + 1


class ShiftsTwo(torch.nn.Module):
    """The same class as ShiftsOne after an edit of its forward."""

    @shared_decorator
    def forward(self, x):
        return x + 2


ShiftsOne.__qualname__ = ShiftsTwo.__qualname__ = "Shifts"
ShiftsOne.__name__ = ShiftsTwo.__name__ = "Shifts"


class Outputs(unittest.TestCase):
    def test_base_output_keeps_its_class_and_field_names(self):
        out = UNet2DConditionOutput(sample=torch.zeros(2))
        mapped = inputs.map_tensors(out, lambda t: t + 1)
        self.assertIs(type(mapped), UNet2DConditionOutput)
        self.assertTrue(torch.equal(mapped.sample, torch.ones(2)))
        names = []
        inputs.walk(out, "output", lambda name, value: names.append(name))
        self.assertEqual(names, ["output['sample']"])

    def test_model_output_keeps_its_class_and_leaves_none_fields_out(self):
        out = BaseModelOutput(last_hidden_state=torch.ones(1), hidden_states=(torch.ones(1),))
        mapped = inputs.map_tensors(out, lambda t: t * 3)
        self.assertIs(type(mapped), BaseModelOutput)
        self.assertEqual(mapped.hidden_states[0].item(), 3.0)
        self.assertIsNone(mapped.attentions)
        self.assertEqual(len(inputs.tensors_of(out)), 2)

    def test_plain_dataclasses_are_walked_by_field_frozen_ones_too(self):
        value = Pair(first=torch.ones(1), second=(torch.zeros(2), 3))
        names = []
        inputs.walk(value, "output", lambda name, leaf: names.append(name))
        self.assertEqual(names, ["output.first", "output.second[0]", "output.second[1]"])
        mapped = inputs.map_tensors(value, lambda t: t + 5)
        self.assertIs(type(mapped), Pair)
        self.assertEqual(mapped.first.item(), 6.0)
        self.assertEqual(mapped.second[1], 3)
        self.assertEqual(value.first.item(), 1.0)  # the original is untouched
        self.assertNotEqual(inputs.leaf_key(value),
                            inputs.leaf_key(Pair(first=torch.ones(2), second=(torch.zeros(2), 3))))


class Caches(unittest.TestCase):
    def test_a_cache_is_copied_at_capture_and_for_every_use(self):
        cache = DynamicCache()
        args, kwargs = inputs.capture((torch.ones(1),), {"past_key_values": cache})
        self.assertIsNot(kwargs["past_key_values"], cache)
        self.assertTrue(inputs.has_state((args, kwargs)))
        self.assertFalse(inputs.has_state(((torch.ones(1),), {"use_cache": True, "n": 3})))
        first = inputs.copy_call((args, kwargs), lambda t: t)
        second = inputs.copy_call((args, kwargs), lambda t: t)
        self.assertIsNot(first[1]["past_key_values"], second[1]["past_key_values"])

    def test_a_model_called_with_a_copy_sees_the_captured_state_each_time(self):
        torch.manual_seed(0)
        config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100,
                                         n_positions=32)
        model = transformers.GPT2LMHeadModel(config).eval()
        ids = torch.randint(0, 100, (1, 5))
        captured = inputs.capture((), {"input_ids": ids, "past_key_values": DynamicCache(),
                                       "use_cache": True})
        with torch.no_grad():
            outs = [model(**inputs.copy_call(captured, lambda t: t)[1]) for _ in range(3)]
        for out in outs:
            self.assertEqual(out.past_key_values.get_seq_length(), 5)  # never grows
            self.assertTrue(torch.equal(out.logits, outs[0].logits))
        self.assertEqual(captured[1]["past_key_values"].get_seq_length(), 0)


class Hashing(unittest.TestCase):
    def test_forwards_sharing_a_decorator_render_their_own_code(self):
        """An edited forward changes the hash even when another module's forward, hashed
        first, has the same decorator (the rendering was cached by the wrapper's code)."""
        self.assertEqual(hashing.class_path(ShiftsOne), hashing.class_path(ShiftsTwo))
        self.assertNotEqual(hashing.forward_rendering(Doubles()),
                            hashing.forward_rendering(Negates()))
        described = [{"name": "x", "dtype": "float32", "shape": [2]}]
        one = hashing.model_hash(torch.nn.Sequential(Doubles(), ShiftsOne()), described)
        two = hashing.model_hash(torch.nn.Sequential(Doubles(), ShiftsTwo()), described)
        self.assertNotEqual(one, two)
        self.assertEqual(one, hashing.model_hash(torch.nn.Sequential(Doubles(), ShiftsOne()),
                                                 described))

    def test_library_submodules_render_their_own_classes(self):
        torch.manual_seed(0)
        config = transformers.BertConfig(num_hidden_layers=1, hidden_size=32,
                                         num_attention_heads=2, intermediate_size=64,
                                         vocab_size=100)
        model = transformers.BertModel(config)
        described = [{"name": "input_ids", "dtype": "int64", "shape": [1, 4]}]
        expected = {}
        for name, sub in model.named_modules():
            expected[name] = hashing.forward_rendering(sub)
        self.assertNotEqual(expected["embeddings"], expected["encoder"])
        self.assertEqual(hashing.model_hash(model, described),
                         hashing.model_hash(model, described))

    def test_a_model_on_the_meta_device_is_hashed(self):
        with torch.device("meta"):
            model = diffusers.UNet2DModel(sample_size=8, block_out_channels=(8, 16),
                                          norm_num_groups=4, layers_per_block=1,
                                          down_block_types=("DownBlock2D", "DownBlock2D"),
                                          up_block_types=("UpBlock2D", "UpBlock2D"))
        described = [{"name": "sample", "dtype": "float32", "shape": [1, 3, 8, 8]}]
        self.assertEqual(len(hashing.model_hash(model, described)), 64)



def tiny_qwen2_audio(vocab_size, **fields):
    """A Qwen2-Audio configuration of one layer per tower: 10 encoder positions (20 frames)."""
    return transformers.Qwen2AudioConfig(
        audio_config=dict(d_model=16, encoder_layers=1, encoder_attention_heads=2,
                          encoder_ffn_dim=32, num_mel_bins=8, max_source_positions=10),
        text_config=dict(model_type="qwen2", vocab_size=vocab_size, hidden_size=16,
                         intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                         num_key_value_heads=1),
        **fields)


class CorpusInputs(unittest.TestCase):
    """models/transformers' inputs (turnkeyml.corpus_inputs) for real transformers classes."""

    def test_a_dual_encoder_is_fed_text_and_images(self):
        config = transformers.CLIPConfig(
            text_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                             num_attention_heads=2, max_position_embeddings=12),
            vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                               num_attention_heads=2, image_size=32, patch_size=16),
            projection_dim=8)
        model = transformers.CLIPModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 64)
        self.assertEqual(sorted(given), ["attention_mask", "input_ids", "pixel_values"])
        self.assertEqual(list(given["input_ids"].shape), [2, 12])  # the text tower's limit
        self.assertEqual(list(given["pixel_values"].shape), [2, 3, 32, 32])
        with torch.no_grad():
            out = model(**given)
        self.assertEqual(list(out.logits_per_image.shape), [2, 2])

    def test_a_text_model_gets_no_pixels(self):
        config = transformers.BertConfig(hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2)
        given = corpus_inputs.transformers_inputs(transformers.BertModel(config), 1, 8)
        self.assertEqual(sorted(given), ["attention_mask", "input_ids"])

    def test_a_speech_llm_gets_one_audio_token_per_audio_embedding(self):
        # Qwen2-Audio splices its audio tower's embeddings in at audio tokens: text alone fails,
        # a wrong count fails ("Audio features and audio tokens do not match").
        config = tiny_qwen2_audio(vocab_size=300, audio_token_index=299)
        model = transformers.Qwen2AudioForConditionalGeneration(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertIn("input_features", given)
        self.assertEqual(list(given["input_features"].shape), [2, 8, 20])  # 2 frames a position
        audio_tokens = (given["input_ids"] == 299).sum(1).tolist()
        self.assertEqual(audio_tokens[0], audio_tokens[1])
        self.assertGreater(audio_tokens[0], 0)
        self.assertEqual(given["input_ids"].shape[1], 8 + audio_tokens[0])
        with torch.no_grad():
            out = model(**given)
        self.assertEqual(list(out.logits.shape), [2, 8 + audio_tokens[0], 300])

    def test_a_cut_vocabulary_keeps_the_placeholder_tokens_and_random_text_avoids_them(self):
        # Qwen2-Audio's audio token (151646) is past a 32000-token vocabulary: it moves to the
        # vocabulary's end, and random text never holds it (it would ask for audio not given).
        config = tiny_qwen2_audio(vocab_size=151936)
        self.assertEqual(config.audio_token_id, 151646)
        changed = corpus_fitted._shrink(config, 1, 1 << 62, 32000, True)
        self.assertIn("vocab_size 151936 -> 32000", changed)
        self.assertEqual(config.audio_token_id, 31998)
        self.assertEqual(corpus_config.placeholder_tokens(config), {31998})
        ids = corpus_text.token_ids(config.text_config, 4, 100000, {31998})
        self.assertFalse((ids == 31998).any())
        model = transformers.Qwen2AudioForConditionalGeneration(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        with torch.no_grad():
            model(**given)  # every audio token is one of the tower's, and there are enough
        self.assertGreater(int((given["input_ids"] == 31998).sum()), 0)

    def test_experts_cut_below_their_groups_take_the_groups_with_them(self):
        # DeepSeek-V3's router scores n_group groups of experts by their best two: 2 experts left
        # in 8 groups made `view(-1, 8, 0)` fail in the forward (beam_causal_lm, session 15).
        config = transformers.DeepseekV3Config(
            vocab_size=1000, hidden_size=64, intermediate_size=64, moe_intermediate_size=32,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
            n_routed_experts=16, n_group=8, topk_group=4, num_experts_per_tok=4,
            first_k_dense_replace=0, q_lora_rank=None, kv_lora_rank=16, qk_rope_head_dim=8,
            qk_nope_head_dim=8, v_head_dim=16)
        changed = corpus_fitted._shrink(config, 1, 2, 32000, False)
        self.assertIn("n_routed_experts 16 -> 2", changed)
        self.assertIn("n_group 8 -> 1", changed)
        self.assertEqual(config.topk_group, 1)
        model = transformers.DeepseekV3ForCausalLM(config).eval()
        with torch.no_grad():
            out = model(**corpus_inputs.transformers_inputs(model, 1, 8))
        self.assertEqual(list(out.logits.shape), [1, 8, 1000])

    def test_a_configuration_over_the_budget_keeps_its_architecture_with_fewer_layers(self):
        # A Gemma-2-like decoder (sliding and global attention alternate, 8 layers, a 4096-token
        # vocabulary) over a budget of 0.4 M parameters: two layers, one of each kind, stay.
        config = transformers.Gemma2Config(
            vocab_size=4096, hidden_size=64, intermediate_size=128, num_hidden_layers=8,
            num_attention_heads=2, num_key_value_heads=1, head_dim=32)
        cls = transformers.Gemma2ForCausalLM
        self.assertGreater(corpus_fitted._parameters(cls, config), 400_000)
        smaller = corpus_inputs.fitted(config, cls, max_parameters=400_000)
        self.assertEqual(config.num_hidden_layers, 8)  # the caller's configuration is kept
        self.assertEqual(smaller.num_hidden_layers, 2)
        self.assertEqual(smaller.layer_types, ["sliding_attention", "full_attention"])
        self.assertEqual(smaller.hidden_size, 64)
        self.assertEqual(smaller.vocab_size, 4096)  # layers were enough
        model = cls(smaller).eval()
        self.assertLessEqual(sum(p.numel() for p in model.parameters()), 400_000)
        with torch.no_grad():
            out = model(**corpus_inputs.transformers_inputs(model, 1, 8))
        self.assertEqual(list(out.logits.shape), [1, 8, 4096])

    def test_a_hybrid_keeps_one_layer_of_each_kind_not_the_first_layers(self):
        # Qwen3.5: three linear-attention layers, then a full-attention one. Its first layer
        # alone is a model of linear attention only, which fails in its forward ("get_seq_length
        # can only be called on Attention layers"); the cut keeps one layer of each kind.
        config = transformers.Qwen3_5TextConfig(
            vocab_size=4096, hidden_size=64, intermediate_size=128, num_hidden_layers=8,
            num_attention_heads=2, num_key_value_heads=1, head_dim=32,
            linear_num_key_heads=2, linear_num_value_heads=2, linear_key_head_dim=16,
            linear_value_head_dim=16)
        self.assertEqual(config.layer_types[:4], ["linear_attention"] * 3 + ["full_attention"])
        cls = transformers.Qwen3_5TextModel
        smaller = corpus_inputs.fitted(config, cls, max_parameters=500_000)
        self.assertEqual(smaller.num_hidden_layers, 2)
        self.assertEqual(smaller.layer_types, ["linear_attention", "full_attention"])
        model = cls(smaller).eval()
        with torch.no_grad():
            out = model(**corpus_inputs.transformers_inputs(model, 1, 8))
        self.assertEqual(list(out.last_hidden_state.shape), [1, 8, 64])

    def test_a_mixture_of_experts_loses_experts_then_vocabulary_until_it_fits(self):
        config = transformers.MixtralConfig(
            vocab_size=40000, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
            num_attention_heads=2, num_key_value_heads=1, num_local_experts=16,
            num_experts_per_tok=2)
        cls = transformers.MixtralForCausalLM
        smaller = corpus_inputs.fitted(config, cls, max_parameters=2_100_000)
        self.assertEqual(smaller.num_hidden_layers, 1)
        self.assertEqual(smaller.num_local_experts, 4)
        self.assertEqual(smaller.vocab_size, 32000)
        self.assertLessEqual(corpus_fitted._parameters(cls, smaller), 2_100_000)

    def test_a_configuration_within_the_budget_is_returned_as_is(self):
        config = transformers.BertConfig(hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=3, num_attention_heads=2)
        self.assertIs(corpus_inputs.fitted(config, transformers.BertModel), config)


def forward(model, given):
    with torch.no_grad():
        return model(**given)


class CorpusInputsBeyondText(unittest.TestCase):
    """Classes the corpus could not build or feed before (docs/corpus.md, session 15)."""

    def test_a_time_series_model_gets_a_horizon_and_its_lagged_past(self):
        # TimeSeriesTransformerConfig() leaves prediction_length unset: the model raised "The
        # `prediction_length` config needs to be specified"; its main input is `past_values`.
        config = transformers.TimeSeriesTransformerConfig(
            d_model=16, encoder_layers=1, decoder_layers=1, encoder_ffn_dim=16,
            decoder_ffn_dim=16, lags_sequence=[1, 2, 3], num_time_features=1)
        cls = transformers.TimeSeriesTransformerModel
        config = corpus_inputs.fitted(config, cls)
        self.assertEqual((config.prediction_length, config.context_length), (24, 24))
        model = cls(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 64)
        self.assertEqual(list(given["past_values"].shape), [2, 24 + 3])
        self.assertEqual(list(given["future_time_features"].shape), [2, 24, 1])
        self.assertEqual(forward(model, given).last_hidden_state.shape[:2], (2, 24))

    def test_patched_series_and_trajectories_are_made(self):
        config = transformers.PatchTSTConfig(d_model=16, num_hidden_layers=1, ffn_dim=16,
                                             num_input_channels=2, context_length=32)
        model = transformers.PatchTSTModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 64)
        self.assertEqual(list(given["past_values"].shape), [1, 32, 2])
        forward(model, given)
        config = transformers.DecisionTransformerConfig(
            state_dim=5, act_dim=3, hidden_size=16, n_layer=1, n_head=2, n_positions=30)
        model = transformers.DecisionTransformerModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 64)
        self.assertEqual(list(given["states"].shape), [1, 10, 5])  # 3 positions a step
        self.assertEqual(list(forward(model, given).state_preds.shape), [1, 10, 5])

    def test_unset_vocabulary_and_layer_kinds_are_given(self):
        # EsmConfig() has vocab_size=None (an embedding of None rows); Lfm2MoeConfig() leaves
        # layer_types None, which its layers index.
        esm = corpus_inputs.fitted(transformers.EsmConfig(
            hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32),
            transformers.EsmModel)
        self.assertEqual((esm.vocab_size, esm.pad_token_id), (33, 1))
        model = transformers.EsmModel(esm).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))
        lfm = transformers.Lfm2MoeConfig(
            vocab_size=100, hidden_size=16, intermediate_size=32, moe_intermediate_size=16,
            num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, num_experts=2,
            num_dense_layers=1)
        self.assertIsNone(lfm.layer_types)
        lfm = corpus_inputs.fitted(lfm, transformers.Lfm2MoeModel)
        self.assertEqual(lfm.layer_types, ["full_attention"] * 2)
        transformers.Lfm2MoeModel(lfm)

    def test_a_query_former_gets_its_queries_and_image_features(self):
        config = transformers.Blip2QFormerConfig(
            hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            encoder_hidden_size=24)
        model = transformers.Blip2QFormerModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual(list(given["query_embeds"].shape), [2, 32, 16])
        self.assertEqual(list(given["encoder_hidden_states"].shape), [2, 257, 24])
        self.assertEqual(list(forward(model, given).last_hidden_state.shape), [2, 32, 16])

    def test_a_document_model_gets_a_box_per_token(self):
        # BROS: "You have to specify bbox". Boxes are ordered corners; LayoutLM's are indices of
        # its 2-D position tables.
        config = transformers.BrosConfig(vocab_size=100, num_hidden_layers=1,
                                         intermediate_size=32)  # its box widths need 768
        model = transformers.BrosModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        box = given["bbox"]
        self.assertEqual((list(box.shape), box.dtype), ([2, 8, 4], torch.float))
        self.assertTrue(bool((box[..., 2:] >= box[..., :2]).all()))
        forward(model, given)
        layout = transformers.LayoutLMModel(transformers.LayoutLMConfig(
            hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32))
        self.assertEqual(corpus_inputs.transformers_inputs(layout, 1, 8)["bbox"].dtype, torch.long)

    def test_a_vision_tower_gets_patches_and_their_grid(self):
        # Kimi K2.5's tower: "missing 1 required positional argument: 'grid_thw'"; its patches
        # are (patches, channels, 14, 14), the layout that gets past its patch embedding.
        config = transformers.Kimi_K25VisionConfig(
            num_hidden_layers=1, hidden_size=32, intermediate_size=64, num_attention_heads=2)
        model = transformers.Kimi_K25VisionModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_values"].shape), [256, 3, 14, 14])
        self.assertEqual(given["grid_thw"].tolist(), [[1, 16, 16]])
        forward(model, given)

    def test_a_tower_that_does_not_take_its_declared_input_gets_pixels(self):
        # Idefics3's vision tower inherits main_input_name "input_ids" but takes pixel_values.
        config = transformers.Idefics3VisionConfig(
            hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
            image_size=32, patch_size=16)
        model = transformers.Idefics3VisionTransformer(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_values"].shape), [1, 3, 32, 32])
        forward(model, given)

    def test_hybrids_placing_attention_by_period_or_index_keep_an_attention_layer(self):
        # Jamba attends where i % 8 == 4 and Bamba's defaults attend nowhere: cut to their first
        # layers they were models of linear attention only, whose forward fails
        # ("get_seq_length can only be called on Attention layers").
        jamba = transformers.JambaConfig(
            vocab_size=1000, hidden_size=32, intermediate_size=64, num_hidden_layers=8,
            num_attention_heads=2, num_key_value_heads=1, num_experts=2, mamba_dt_rank=4)
        smaller = corpus_inputs.fitted(jamba, transformers.JambaModel, max_parameters=150_000)
        self.assertEqual(smaller.num_hidden_layers, 2)
        self.assertEqual(smaller.layer_types, ["linear_attention", "full_attention"])
        bamba = transformers.BambaConfig(
            vocab_size=1000, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
            num_attention_heads=2, num_key_value_heads=1, mamba_n_heads=2, mamba_d_head=32,
            mamba_d_state=16, mamba_chunk_size=16)
        budget = corpus_fitted._parameters(  # its 4 layers, one attending, are over
            transformers.BambaModel, corpus_fitted.completed(bamba)) - 1
        smaller = corpus_inputs.fitted(bamba, transformers.BambaModel, max_parameters=budget)
        self.assertEqual((smaller.num_hidden_layers, smaller.attn_layer_indices), (2, [1]))
        for config, cls in ((smaller, transformers.BambaModel),
                            (corpus_inputs.fitted(jamba, transformers.JambaModel, 150_000),
                             transformers.JambaModel)):
            model = cls(config).eval()
            forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_a_kind_whose_layers_share_tied_weights_keeps_two_layers(self):
        # Zamba's hybrid layers share one tied transformer block; transformers refuses to build
        # a single hybrid layer, so one layer of each kind did not build and the cut fell back
        # to one Mamba layer.
        config = transformers.ZambaConfig(
            vocab_size=1000, hidden_size=32, intermediate_size=64, num_hidden_layers=12,
            num_attention_heads=2, num_key_value_heads=2, attention_head_dim=16,
            mamba_dt_rank=4, n_mamba_heads=1)
        budget = corpus_fitted._parameters(transformers.ZambaModel, config) - 1  # 12 layers over
        smaller = corpus_inputs.fitted(config, transformers.ZambaModel, max_parameters=budget)
        self.assertEqual(sorted(set(smaller.layers_block_type)), ["hybrid", "linear_attention"])
        model = transformers.ZambaModel(smaller).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_attention_sizes_left_none_are_derived(self):
        # MinistralConfig() has head_dim=None ("unsupported operand type(s) for ** or pow():
        # 'NoneType' and 'float'"), NemotronConfig() num_key_value_heads=None too (4 here).
        for config, cls, heads in (
                (transformers.MinistralConfig, transformers.MinistralModel,
                 {"num_key_value_heads": 2}),
                (transformers.NemotronConfig, transformers.NemotronModel, {})):
            config = config(vocab_size=100, hidden_size=32, intermediate_size=64,
                            num_hidden_layers=1, num_attention_heads=4, **heads)
            config = corpus_inputs.fitted(config, cls)
            self.assertEqual(config.head_dim, 8)
            self.assertIsNotNone(config.num_key_value_heads)
            model = cls(config).eval()
            forward(model, corpus_inputs.transformers_inputs(model, 1, 8))


if __name__ == "__main__":
    unittest.main()
