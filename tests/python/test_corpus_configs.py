# labels: test_group::torch2 author::turnkey
"""corpus_inputs' configurations for the classes the transformers corpus run failed on (session
18): values the class defaults leave out or set to what does not run (defaults.completed, with
the published checkpoints' values: published), and configurations cut to fit (fitted). Each
builds the real transformers class and runs its forward with the corpus's inputs. Run by the
PyPI interpreter: `.deps/pypi/bin/python3 tests/python/test_corpus_configs.py` (ctest:
torch2.corpus_configs); the input layouts are tests/python/test_corpus_inputs.py's."""

import contextlib
import io
import unittest

import torch

from turnkeyml import corpus_inputs
from turnkeyml.corpus_inputs import defaults

import transformers


def forward(model, given):
    with torch.no_grad():
        return model(**given)


class CorpusConfigurations(unittest.TestCase):
    """Configurations completed and cut so that the model builds, fits and runs."""

    def test_layer_indices_derived_from_the_kinds_are_cut_with_them(self):
        # Zamba2 derives `hybrid_layer_ids` (where its layers are "hybrid") from its kinds when
        # it is made; the kinds cut to [linear, hybrid] left it naming layer 2, and the shared
        # block looked up the cut model's layer 1 ("KeyError: 1").
        config = transformers.Zamba2Config(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_attention_heads=2,
            num_key_value_heads=2, n_mamba_heads=2, mamba_d_state=8, mamba_headdim=32,
            chunk_size=8, adapter_rank=4, use_shared_attention_adapter=True,
            layers_block_type=["mamba", "mamba", "hybrid", "mamba", "hybrid"],
            num_hidden_layers=5)
        with torch.device("meta"):
            size = sum(p.numel() for p in transformers.Zamba2Model(config).parameters())
        config = corpus_inputs.fitted(config, transformers.Zamba2Model, max_parameters=size - 1)
        self.assertEqual((config.layers_block_type, config.hybrid_layer_ids),
                         (["linear_attention", "hybrid"], [1]))
        model = transformers.Zamba2Model(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_a_sliding_mask_no_layer_reads_gets_a_window(self):
        # Step 3.7's text model builds its sliding-window mask though no layer of its defaults
        # slides, and they leave the window unset ("Could not find a `sliding_window` argument
        # in the config"): the whole context is given.
        config = transformers.Step3p7TextConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, head_dim=16, n_routed_experts=2,
            num_experts_per_tok=1, moe_intermediate_size=16, share_expert_dim=16,
            max_position_embeddings=64)
        config = corpus_inputs.fitted(config, transformers.Step3p7TextModel)
        self.assertEqual(config.sliding_window, 64)
        model = transformers.Step3p7TextModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_rotary_sections_the_defaults_leave_out_get_the_published_ones(self):
        # HunYuanVL's text model reads multimodal rotary sections its defaults leave out
        # ("object of type 'NoneType' has no len()"); HunyuanOCR's are four of 16 (a 128 head).
        config = transformers.HunYuanVLTextConfig(
            vocab_size=64, hidden_size=256, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1)
        config = corpus_inputs.fitted(config, transformers.HunYuanVLTextModel)
        self.assertEqual(config.rope_parameters["mrope_section"], [16, 16, 16, 16])
        model = transformers.HunYuanVLTextModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_edgetam_gets_the_backbone_and_image_size_its_parts_name(self):
        # EdgeTAM's defaults misspell their backbone's key ("archirecture": "repvit_m1"): timm
        # built a ResNet-50, whose 1024 channels its neck refused ("expected input[1, 1024, 14,
        # 14] to have 384 channels"). Its image size (and SAM 2's) is named in its prompt
        # encoder's part only: "shape '[1, -1, 256, 256]' is invalid" at 224.
        config = corpus_inputs.fitted(transformers.EdgeTamConfig(), transformers.EdgeTamModel)
        self.assertEqual(config.vision_config.backbone_config.architecture, "repvit_m1")
        model = transformers.EdgeTamModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_values"].shape), [1, 3, 1024, 1024])
        forward(model, given)

    def test_pp_ocr_detectors_get_their_released_backbones_and_necks(self):
        # PP-OCRv6's detectors' defaults build PP-LCNetV4's recognition backbone; the medium's
        # neck is unset ("'NoneType' object is not subscriptable"), the small's has placeholder
        # channels ("expected input[1, 384, 14, 56] to have 12 channels").
        for config, cls, widths in (
                (transformers.PPOCRV6SmallDetConfig(), transformers.PPOCRV6SmallDetModel, 384),
                (transformers.PPOCRV6MediumDetConfig(), transformers.PPOCRV6MediumDetModel, 896)):
            config = corpus_inputs.fitted(config, cls)
            self.assertEqual(config.backbone_config.stage_out_channels[-1], widths)
            model = cls(config).eval()
            forward(model, {"pixel_values": torch.rand(1, 3, 64, 64)})

    def test_deepseek_ocr_2_gets_its_published_mlp_kinds_and_experts(self):
        # Its defaults leave mlp_layer_types None ("'NoneType' object is not subscriptable": not
        # even counted on the meta device, so built whole, out of memory) and experts 1407 wide,
        # rows torch's CPU grouped_mm refuses ("strides should be multiple of 16 bytes").
        config = transformers.DeepseekOcr2TextConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=2, n_routed_experts=8, n_shared_experts=1)
        config = corpus_inputs.fitted(config, transformers.DeepseekOcr2TextModel)
        self.assertEqual((config.mlp_layer_types, config.num_experts_per_tok,
                          config.moe_intermediate_size), (["dense", "sparse"], 6, 896))
        model = transformers.DeepseekOcr2TextModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_deepseek_v2_experts_get_the_published_width(self):
        # DeepSeek-V2's defaults' experts are 1407 wide (V2-Lite's are 1408), rows torch's CPU
        # grouped_mm refuses: "strides should be multiple of 16 bytes".
        config = transformers.DeepseekV2Config(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, n_routed_experts=8, kv_lora_rank=16, q_lora_rank=None,
            qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8)
        config = corpus_inputs.fitted(config, transformers.DeepseekV2Model)
        self.assertEqual(config.moe_intermediate_size, 1408)
        model = transformers.DeepseekV2Model(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_emu3_gets_a_vocabulary_map(self):
        # Emu3 reads its image tokens' map when built, None in its defaults ("'NoneType' object
        # has no attribute 'get'"; not counted on the meta device either: out of memory).
        config = transformers.Emu3Config(
            vq_config=dict(codebook_size=16, embed_dim=4, latent_channels=4, base_channels=32,
                           channel_multiplier=[1, 1], num_res_blocks=1, attn_resolutions=[],
                           hidden_size=32),
            text_config=dict(vocab_size=64, hidden_size=32, intermediate_size=64,
                             num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                             pad_token_id=0, bos_token_id=1, eos_token_id=2))
        config = corpus_inputs.fitted(config, transformers.Emu3Model)
        self.assertEqual(config.vocabulary_map, {})
        model = transformers.Emu3Model(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_gemma_3n_shares_its_cache_only_where_its_cut_still_can(self):
        # The last num_kv_shared_layers layers reuse an earlier layer's cache of their kind; 15
        # of 2 layers: "The set of layer types producing a cache is different than the set of
        # layer types using them", so fitted could not cut its 6.8 B (out of memory).
        config = transformers.Gemma3nTextConfig(
            vocab_size=64, vocab_size_per_layer_input=64, hidden_size=32,
            hidden_size_per_layer_input=8, intermediate_size=64, num_hidden_layers=6,
            num_attention_heads=2, num_key_value_heads=1, head_dim=16, laurel_rank=4,
            layer_types=["sliding_attention", "full_attention"] * 3, num_kv_shared_layers=2,
            activation_sparsity_pattern=[0.0] * 6)
        config = corpus_inputs.fitted(config, transformers.Gemma3nTextModel, max_parameters=1)
        self.assertEqual(config.num_kv_shared_layers, 0)
        self.assertEqual(len(config.activation_sparsity_pattern), config.num_hidden_layers)
        model = transformers.Gemma3nTextModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_a_causal_lm_that_does_not_build_as_an_encoder_is_built_as_a_decoder(self):
        # ReformerConfig() says is_decoder=False: "If you want to use `ReformerModelWithLMHead`
        # make sure that `is_decoder=True`".
        config = corpus_inputs.fitted(transformers.ReformerConfig(num_hashes=1),
                                      transformers.ReformerModelWithLMHead)
        self.assertTrue(config.is_decoder)
        model = transformers.ReformerModelWithLMHead(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 64))

    def test_chameleon_gets_a_vocabulary_map(self):
        # Chameleon reads its image tokens' map when built, None in its defaults as in Emu3's
        # ("'NoneType' object has no attribute 'get'").
        config = transformers.ChameleonConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, pad_token_id=0, bos_token_id=1,
            eos_token_id=2, vq_config=dict(embed_dim=4, num_embeddings=16, latent_channels=4,
                                           base_channels=32, channel_multiplier=[1, 1],
                                           num_res_blocks=1, attn_resolutions=[]))
        config = corpus_inputs.fitted(config, transformers.ChameleonModel)
        self.assertEqual(config.vocabulary_map, {})
        model = transformers.ChameleonModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))


    def test_a_timm_backbone_gets_the_timm_model_it_wraps(self):
        # TimmBackbone's defaults name no timm model ("backbone is not set in the config").
        config = corpus_inputs.fitted(transformers.TimmBackboneConfig(),
                                      transformers.TimmBackbone)
        self.assertEqual(config.backbone, "resnet50")
        model = transformers.TimmBackbone(config).eval()
        maps = forward(model, corpus_inputs.transformers_inputs(model, 1, 8)).feature_maps
        self.assertEqual(list(maps[-1].shape), [1, 2048, 7, 7])

    def test_heads_that_do_not_divide_the_width_get_the_published_towers(self):
        # Aya Vision's defaults give its SigLIP tower 14 heads over 1152 ("embed_dim must be
        # divisible by num_heads"); SigLIP So400m, 1152 wide, has 16. A width with no published
        # tower written down keeps its heads.
        config = transformers.SiglipVisionConfig(
            hidden_size=1152, num_attention_heads=14, num_hidden_layers=1, intermediate_size=64,
            image_size=28, patch_size=14)
        config = corpus_inputs.fitted(config, transformers.SiglipVisionModel)
        self.assertEqual(config.num_attention_heads, 16)
        model = transformers.SiglipVisionModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))
        other = transformers.SiglipVisionConfig(hidden_size=60, num_attention_heads=7)
        self.assertIs(defaults.completed(other), other)

    def test_diffusion_gemma_gets_its_published_experts_and_keeps_top_k_within_a_cut(self):
        # DiffusionGemma's defaults build its router of None experts ("empty(): argument 'size'
        # ... NoneType"); diffusiongemma-26B-A4B has 128, 8 a token. Cut to fewer experts than
        # that, a token takes at most all of them ("selected index k out of range").
        config = transformers.DiffusionGemmaTextConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, head_dim=16)
        config = corpus_inputs.fitted(config, transformers.DiffusionGemmaEncoderTextModel)
        self.assertEqual((config.num_experts, config.top_k_experts,
                          config.moe_intermediate_size), (128, 8, 704))
        config = corpus_inputs.fitted(config, transformers.DiffusionGemmaEncoderTextModel,
                                      max_parameters=1)  # never fits: cut to the last step's 2
        self.assertEqual((config.num_experts, config.top_k_experts), (2, 2))
        model = transformers.DiffusionGemmaEncoderTextModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_gemma_3n_keeps_its_vision_and_audio_ids_at_the_end_of_a_cut_vocabulary(self):
        # Gemma 3n's vision and audio embedders own the text vocabulary's last 2 x 128 ids, its
        # image and audio tokens among them, and it pads its audio with the last id: cut from
        # 262,400 to 32,000 ids with the embedders' offsets left at 262,144 and 262,272, the
        # padding's lookup fell before the audio table ("index out of range in self"). Its tower
        # makes 25 audio embeddings of 400 frames and the model pads them to 188, which its
        # placeholder check counts: 25 audio tokens did not match ("tokens: 25, features: 188").
        tail = 32768  # the ids from here on are the embedders' (262,144 in the defaults)
        config = transformers.Gemma3nConfig(
            text_config=dict(
                vocab_size=tail + 256, vocab_size_per_layer_input=tail, hidden_size=32,
                hidden_size_per_layer_input=8, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=1, head_dim=16, laurel_rank=4,
                layer_types=["sliding_attention", "full_attention"], num_kv_shared_layers=0,
                activation_sparsity_pattern=[0.0] * 2),
            vision_config=dict(vocab_offset=tail),
            audio_config=dict(vocab_offset=tail + 128, hidden_size=32, conf_num_hidden_layers=1,
                              conf_num_attention_heads=2, sscp_conv_channel_size=[8, 4]),
            boi_token_id=tail - 257, eoi_token_id=tail, image_token_id=tail + 1,
            boa_token_id=tail - 256, eoa_token_id=tail + 128, audio_token_id=tail + 129)
        config = corpus_inputs.fitted(config, transformers.Gemma3nModel, max_parameters=1)
        text, end = config.text_config, 32000 - 256  # the tail moved to the cut's end
        self.assertEqual(text.vocab_size, 32000)
        self.assertEqual((config.vision_config.vocab_offset, config.audio_config.vocab_offset,
                          text.vocab_size_per_layer_input), (end, end + 128, end))
        self.assertEqual((config.eoi_token_id, config.image_token_id, config.eoa_token_id,
                          config.audio_token_id), (end, end + 1, end + 128, end + 129))
        self.assertLess(max(config.boi_token_id, config.boa_token_id), end)  # text tokens
        model = transformers.Gemma3nModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        ids = given["input_ids"][0].tolist()
        self.assertEqual((ids.count(end + 129), ids.count(end + 1)), (188, 256))
        # The image's 256 tokens stay in the text as the vision embedder's own ids; its tower
        # (MobileNetV5, 25 s on 2 cores) is not run here.
        given.pop("pixel_values")
        forward(model, given)

    def test_blt_cuts_its_hashed_byte_n_gram_tables_with_its_vocabulary(self):
        # BLT's 260-byte vocabulary leaves nothing to cut; its hashed n-gram tables (500,002
        # rows for each of 6 n-gram sizes) are 3.1 B of its 4.6 B parameters: cut to one layer
        # a part it stayed at 3.2 B and its build asked for 12 GB (out of memory). Hashes are
        # taken modulo the table's size, which any size holds.
        config = corpus_inputs.fitted(transformers.BltConfig(), transformers.BltModel)
        self.assertEqual(config.encoder_hash_byte_group_vocab, 32000)
        with torch.device("meta"):
            size = sum(p.numel() for p in transformers.BltModel(config).parameters())
        self.assertLess(size, corpus_inputs.MAX_PARAMETERS)

    def test_qwen_2_5_omni_thinker_gets_the_vision_start_token_its_rotary_index_reads(self):
        # Its class defaults have no `vision_start_token_id`, which its rotary index reads
        # ("'Qwen2_5OmniThinkerConfig' object has no attribute 'vision_start_token_id'"); the
        # published thinker_config gives 151652, renumbered into the cut vocabulary.
        config = transformers.Qwen2_5OmniThinkerConfig(
            text_config=dict(vocab_size=152064, hidden_size=32, intermediate_size=64,
                             num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                             rope_parameters=dict(rope_type="default", rope_theta=10000.0,
                                                  mrope_section=[2, 3, 3])),
            audio_config=dict(d_model=32, encoder_layers=1, encoder_attention_heads=2,
                              encoder_ffn_dim=64, output_dim=32),
            vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                               out_hidden_size=32, fullatt_block_indexes=[0]))
        self.assertFalse(hasattr(config, "vision_start_token_id"))
        config = corpus_inputs.fitted(config, transformers.Qwen2_5OmniThinkerModel,
                                      max_parameters=1)
        self.assertLess(config.vision_start_token_id, 32000)
        model = transformers.Qwen2_5OmniThinkerModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 16))

    def test_perception_lm_gets_its_published_perception_encoder(self):
        # Its class defaults name timm's resnet50 with no arguments, and its projector reads
        # `vision_config.model_args["embed_dim"]` ("'NoneType' object is not subscriptable"):
        # Perception-LM-1B's tower is given, its images at the tower's 448 rather than timm's
        # 336 for that architecture. Built here with one of the tower's 23 layers (time).
        config = transformers.PerceptionLMConfig(text_config=dict(
            model_type="llama", vocab_size=1000, hidden_size=32, intermediate_size=64,
            num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1))
        self.assertIsNone(config.vision_config.model_args)
        config = defaults.completed(config)
        tower = config.vision_config
        self.assertEqual(tower.architecture, "vit_pe_core_large_patch14_336")
        self.assertEqual((tower.model_args["embed_dim"], tower.model_args["depth"]), (1024, 23))
        tower.model_args["depth"] = 1
        model = transformers.PerceptionLMModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_values"].shape[-2:]), [448, 448])
        images = forward(model, given).image_hidden_states
        self.assertEqual(images.shape[-1], 32)  # projected from 1024 to the text width

    def test_qwen3_omni_thinker_text_gets_its_published_heads(self):
        # Its class defaults put 2048 in 28 heads: 73-wide heads its rotary embedding makes 74
        # wide ("The size of tensor a (73) must match the size of tensor b (74)"); the published
        # thinker has 32 heads of 128. Cut to one layer and few experts here (time).
        config = transformers.Qwen3OmniMoeThinkerConfig()
        self.assertEqual((config.text_config.hidden_size,
                          config.text_config.num_attention_heads), (2048, 28))
        config = corpus_inputs.fitted(config, transformers.Qwen3OmniMoeThinkerModel,
                                      max_parameters=1)
        text = config.text_config
        self.assertEqual((text.num_attention_heads, text.head_dim), (32, 128))
        model = transformers.Qwen3OmniMoeThinkerModel(config).eval()
        out = forward(model, corpus_inputs.transformers_inputs(model, 1, 16))
        self.assertEqual(list(out.last_hidden_state.shape), [1, 16, 2048])

    def test_lw_detr_gets_the_projector_scale_of_its_published_checkpoint(self):
        # Its class defaults give the projector no scale: no feature map ("torch.cat(): expected a
        # non-empty list of Tensors"); lwdetr_small_60e_coco has one at 1.0, and the two fields
        # the class derives from the scales follow it (a level of d_model channels).
        config = transformers.LwDetrConfig(
            d_model=32, decoder_ffn_dim=32, decoder_layers=1, decoder_self_attention_heads=2,
            decoder_cross_attention_heads=2, num_queries=10,
            backbone_config=dict(model_type="lw_detr_vit", hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=2, mlp_ratio=2, image_size=64,
                                 window_block_indices=[0], out_indices=[1, 2]))
        self.assertEqual(tuple(config.projector_scale_factors), ())
        config = defaults.completed(config)
        self.assertEqual((list(config.projector_scale_factors), config.projector_in_channels,
                          config.num_feature_levels), ([1.0], [32], 1))
        model = transformers.LwDetrModel(config).eval()
        out = forward(model, corpus_inputs.transformers_inputs(model, 1, 8))
        self.assertEqual(list(out.last_hidden_state.shape[:2]), [1, 10])

    def test_fields_the_layers_read_and_the_configuration_classes_lack_are_given(self):
        # transformers 5.23's DBRX attention reads `rope_theta` its configuration class lacks
        # and clamps to a `clip_qkv` its defaults leave None; Moonshine Streaming's decoder
        # reads `num_key_value_heads` its class lacks: dbrx-base's values, and as many key-value
        # heads as heads (2 here, not the defaults' 8).
        config = transformers.DbrxConfig(
            d_model=32, n_heads=2, n_layers=1, max_seq_len=64, vocab_size=100,
            ffn_config=dict(ffn_hidden_size=64, moe_num_experts=2, moe_top_k=1))
        self.assertFalse(hasattr(config.attn_config, "rope_theta"))
        config = defaults.completed(config)
        self.assertEqual((config.attn_config.rope_theta, config.attn_config.clip_qkv), (500000, 8))
        model = transformers.DbrxModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))
        tiny = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                    num_attention_heads=2)
        config = transformers.MoonshineStreamingConfig(
            vocab_size=100, encoder_config=dict(tiny, num_key_value_heads=2), **tiny)
        self.assertFalse(hasattr(config, "num_key_value_heads"))
        config = defaults.completed(config)
        self.assertEqual(config.num_key_value_heads, 2)
        model = transformers.MoonshineStreamingModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_uvdoc_puts_out_every_bridge_stage_its_head_reads(self):
        # Its backbone's defaults put out the last of its six bridge stages, its head reads all
        # six ("weight of size [128, 768, 1, 1], expected input[1, 128, 14, 14] to have 768
        # channels").
        config = transformers.UVDocConfig()
        self.assertEqual(config.backbone_config.out_features, ["stage6"])
        config = defaults.completed(config)
        self.assertEqual(config.backbone_config.out_features, ["stage%d" % i for i in range(1, 7)])
        model = transformers.UVDocModel(config).eval()
        out = forward(model, corpus_inputs.transformers_inputs(model, 1, 8))
        self.assertEqual(out.last_hidden_state.shape[1], 2)  # a point per cell: (x, y)

    def test_a_configuration_that_does_not_build_on_the_meta_device_says_why(self):
        # Granite 4 Vision's defaults lack `deepstack_layer_map`: fitted cannot count the model,
        # the script then builds its 8 B text model whole and runs out of memory before the
        # projector raises. fitted says the cause; a model that builds says nothing of the kind.
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            corpus_inputs.fitted(transformers.Granite4VisionConfig(),
                                 transformers.Granite4VisionModel)
            corpus_inputs.fitted(transformers.BertConfig(num_hidden_layers=1),
                                 transformers.BertModel)
        lines = [line for line in said.getvalue().splitlines() if "meta device" in line]
        self.assertEqual(lines, [
            "corpus_inputs: Granite4VisionModel does not build from Granite4VisionConfig on the "
            "meta device, so it is not cut (TypeError: object of type 'NoneType' has no len())"])


if __name__ == "__main__":
    unittest.main()
