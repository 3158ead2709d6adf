# labels: test_group::torch2 author::turnkey
"""corpus_inputs for the classes the transformers dry run still failed after session 15
(docs/corpus.md): each builds a real transformers class from a tiny configuration (random
weights, no download) and runs its forward with the corpus's inputs. Run by the PyPI
interpreter: `.deps/pypi/bin/python3 tests/python/test_corpus_inputs.py` (ctest:
torch2.corpus_inputs)."""

import importlib.machinery
import os
import unittest

import torch

from turnkeyml import corpus_inputs

import transformers


GENERATOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models",
                         "transformers", "generate")


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

    def test_a_class_of_a_part_of_a_composite_is_built_from_its_own_configuration(self):
        # MusicgenModel is registered beside MusicgenConfig (text encoder, audio encoder,
        # decoder) but takes the decoder's: "'MusicgenConfig' object has no attribute 'dropout'".
        # Llama4ForCausalLM takes Llama4TextConfig, the composite's text part ("'Llama4Config'
        # object has no attribute 'pad_token_id'"); InternLM3 takes LlamaConfig, no part of its
        # registry's configuration, which it reads as it is.
        generate = importlib.machinery.SourceFileLoader("generate", GENERATOR).load_module()
        self.assertEqual(generate.own_configuration("MusicgenConfig", "MusicgenModel"),
                         "MusicgenDecoderConfig")
        self.assertEqual(generate.own_configuration("Llama4Config", "Llama4ForCausalLM"),
                         "Llama4TextConfig")
        self.assertEqual(generate.own_configuration("InternLM3Config", "InternLM3Model"),
                         "InternLM3Config")
        self.assertEqual(generate.own_configuration("BertConfig", "BertModel"), "BertConfig")

    def test_audio_codes_of_several_codebooks_get_a_row_per_codebook(self):
        # MusicGen's decoder takes (batch * codebooks, length) token ids: "shape '[-1, 4, 128]'
        # is invalid for input of size 128" for one row per sample.
        config = transformers.MusicgenDecoderConfig(
            vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
            ffn_dim=32, num_codebooks=4)
        model = transformers.MusicgenModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual(list(given["input_ids"].shape), [2 * 4, 8])
        self.assertEqual(list(forward(model, given).last_hidden_state.shape), [2, 8, 16])

    def test_audio_features_get_the_frame_size_the_encoder_takes(self):
        # A Parakeet encoder of 128 mel bins (Canary's, Cohere ASR's) got frames of 80 ("a and
        # b must have same reduction dim, but got [73, 2560] X [4096, 1024]"); the Audio
        # Spectrogram Transformer takes its frames as `input_values`, as many as its position
        # table (`max_length`).
        config = transformers.ParakeetEncoderConfig(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
            subsampling_conv_channels=8, num_mel_bins=128)
        model = transformers.ParakeetEncoder(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(given["input_features"].shape[-1], 128)
        forward(model, given)
        config = transformers.ASTConfig(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
            max_length=64, num_mel_bins=16, patch_size=16)
        model = transformers.ASTModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["input_values"].shape), [1, 64, 16])
        forward(model, given)

    def test_a_codec_gets_samples_with_a_channel_axis(self):
        # DAC, EnCodec, Mimi take (batch, channels, samples): "not enough values to unpack
        # (expected 3, got 2)" for (batch, samples).
        config = transformers.DacConfig(encoder_hidden_size=4, downsampling_ratios=[2, 2],
                                        decoder_hidden_size=8, n_codebooks=2, codebook_size=16,
                                        codebook_dim=4)
        model = transformers.DacModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual(list(given["input_values"].shape), [2, 1, 16000])
        forward(model, given)

    def test_query_former_outputs_get_image_tokens_in_the_text(self):
        # Blip2Config() and InstructBlipConfig() leave image_token_index None: the forward
        # compared the text to None ("'bool' object has no attribute 'unsqueeze'"). The token
        # is given, and the text holds one per query before its words.
        config = transformers.Blip2Config(
            vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                               num_attention_heads=2, image_size=32, patch_size=16),
            qformer_config=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=64, encoder_hidden_size=32),
            text_config=dict(model_type="opt", vocab_size=100, hidden_size=32, ffn_dim=64,
                             num_hidden_layers=1, num_attention_heads=2, word_embed_proj_dim=32),
            num_query_tokens=4)
        config = corpus_inputs.fitted(config, transformers.Blip2Model)
        self.assertEqual(config.image_token_index, 99)
        model = transformers.Blip2Model(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual(int((given["input_ids"] == 99).sum()), 2 * 4)
        forward(model, given)

    def test_a_tower_of_native_resolutions_gets_patches_their_grid_and_mask(self):
        # Siglip2VisionModel: "missing 2 required positional arguments: 'pixel_attention_mask'
        # and 'spatial_shapes'"; its patches are rows of channels * patch * patch values.
        config = transformers.Siglip2VisionConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
            num_patches=16, patch_size=4)
        model = transformers.Siglip2VisionModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual(list(given["pixel_values"].shape), [2, 16, 3 * 4 * 4])
        self.assertEqual(given["spatial_shapes"].tolist(), [[4, 4]] * 2)
        self.assertEqual(list(forward(model, given).last_hidden_state.shape), [2, 16, 32])
        # Gemma 4's tower: "missing 1 required positional argument: 'pixel_position_ids'", the
        # (x, y) of each patch, on a side of whole pooling windows (3 x 3: 18 patches).
        config = transformers.Gemma4VisionConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=2, head_dim=16, patch_size=4, position_embedding_size=64)
        model = transformers.Gemma4VisionModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_position_ids"].shape), [1, 18 * 18, 2])
        forward(model, given)

    def test_a_video_model_gets_clips_of_its_frames(self):
        # VideoMAE, ViViT, TimeSformer, X-CLIP: "not enough values to unpack (expected 5, got
        # 4)" for images; a clip is (frames, channels, height, width), num_frames of them.
        config = transformers.VideoMAEConfig(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
            image_size=32, patch_size=16, num_frames=4, tubelet_size=2)
        model = transformers.VideoMAEModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual(list(given["pixel_values"].shape), [2, 4, 3, 32, 32])
        forward(model, given)

    def test_text_ends_with_the_end_of_sequence_token_a_classifier_pools_on(self):
        # BART, mBART, PLBart, MVP and BigBird-Pegasus sequence classifiers pool on the
        # end-of-sequence token ("Each example must contain at least one <eos> token"), which
        # random text almost never holds, and BART's `forced_eos_token_id` (the same id) was
        # taken for a placeholder and kept out of the text. A data-dependent check: fake
        # tensors, and so the dry run, cannot see it.
        config = transformers.BartConfig(
            vocab_size=64, d_model=16, encoder_layers=1, decoder_layers=1,
            encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
            decoder_ffn_dim=32, max_position_embeddings=32, num_labels=3)
        self.assertEqual((config.eos_token_id, config.forced_eos_token_id), (2, 2))
        model = transformers.BartForSequenceClassification(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual(given["input_ids"][:, -1].tolist(), [2, 2])
        self.assertEqual(list(forward(model, given).logits.shape), [2, 3])

    def test_a_main_input_of_its_own_name_gets_the_first_layout_the_forward_takes(self):
        # Perceiver names its main input `inputs`, whose layout its preprocessor decides: token
        # ids for the masked LM, embeddings of d_model for the bare model ("takes 'inputs' as its
        # main input, which models/transformers does not make").
        config = transformers.PerceiverConfig(
            num_latents=4, d_latents=16, d_model=24, num_blocks=1, num_self_attends_per_block=1,
            num_self_attention_heads=1, num_cross_attention_heads=1, vocab_size=40,
            max_position_embeddings=32)
        masked = transformers.PerceiverForMaskedLM(config).eval()
        given = corpus_inputs.transformers_inputs(masked, 2, 8)
        self.assertEqual((given["inputs"].dtype, list(given["inputs"].shape)), (torch.long, [2, 8]))
        forward(masked, given)
        bare = transformers.PerceiverModel(config).eval()
        given = corpus_inputs.transformers_inputs(bare, 2, 8)
        self.assertEqual(list(given["inputs"].shape), [2, 8, 24])
        forward(bare, given)

    def test_x_mod_gets_a_default_language(self):
        # "Input language unknown. Please call `XmodPreTrainedModel.set_default_language()`":
        # the first of the configuration's languages.
        config = transformers.XmodConfig(
            vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=40, languages=["de_DE", "en_XX"])
        config = corpus_inputs.fitted(config, transformers.XmodModel)
        self.assertEqual(config.default_language, "de_DE")
        model = transformers.XmodModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_a_hybrid_cut_to_one_layer_keeps_one_that_attends(self):
        # GraniteMoE-Hybrid's defaults attend in their last layer only; cut to its first layer
        # it had none, and transformers 5's cache needs one ("`get_seq_length` can only be
        # called on Attention layers"). RecurrentGemma's kinds repeat every 3 layers
        # (`block_types`): a cut keeps a whole cycle.
        config = transformers.GraniteMoeHybridConfig(
            vocab_size=64, hidden_size=32, intermediate_size=32, num_hidden_layers=4,
            num_attention_heads=2, num_key_value_heads=1, num_local_experts=2,
            num_experts_per_tok=1, mamba_n_heads=2, mamba_d_head=32, mamba_d_state=8,
            mamba_n_groups=1, mamba_expand=2, mamba_chunk_size=8)
        config.layer_types = ["linear_attention"] * 3 + ["full_attention"]
        config = corpus_inputs.fitted(config, transformers.GraniteMoeHybridModel,
                                      max_parameters=1)
        self.assertEqual(config.layer_types, ["full_attention"])
        model = transformers.GraniteMoeHybridModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))
        gemma = corpus_inputs.fitted(transformers.RecurrentGemmaConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=6,
            num_attention_heads=2, lru_width=32, attention_window_size=8),
            transformers.RecurrentGemmaModel, max_parameters=1)
        self.assertEqual(gemma.num_hidden_layers, 3)

    def test_a_region_feature_model_gets_its_regions_beside_its_text(self):
        # LXMERT reads an image as a detector's regions: "`visual_feats` cannot be `None`".
        config = transformers.LxmertConfig(
            vocab_size=50, hidden_size=16, num_attention_heads=2, intermediate_size=32,
            l_layers=1, x_layers=1, r_layers=1, visual_feat_dim=12, visual_pos_dim=4)
        model = transformers.LxmertModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual([list(given[k].shape) for k in ("visual_feats", "visual_pos")],
                         [[2, 36, 12], [2, 36, 4]])
        forward(model, given)

    def test_rotary_parameters_read_per_layer_kind_get_the_default_for_each(self):
        # Cohere Compass reads rope_parameters[kind] and its defaults leave them empty
        # ("KeyError: 'full_attention'").
        config = transformers.CohereCompassTextConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=1)
        config = corpus_inputs.fitted(config, transformers.CohereCompassTextModel)
        self.assertEqual(set(config.rope_parameters), set(config.layer_types))
        model = transformers.CohereCompassTextModel(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_a_model_that_refuses_text_alone_gets_an_image_beside_it(self):
        # ViLT: "You have to specify either pixel_values or image_embeds".
        config = transformers.ViltConfig(
            vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=32, image_size=32, patch_size=16, max_position_embeddings=16)
        model = transformers.ViltModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_values"].shape), [1, 3, 32, 32])
        forward(model, given)

    def test_kosmos_2_gets_its_images_place_in_the_text(self):
        # "'NoneType' object has no attribute 'to'" without image_embeds_position_mask.
        config = transformers.Kosmos2Config(
            text_config={"vocab_size": 64, "embed_dim": 16, "layers": 1, "attention_heads": 2,
                         "ffn_dim": 32, "max_position_embeddings": 32},
            vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                           "num_attention_heads": 2, "image_size": 32, "patch_size": 16},
            latent_query_num=4)
        model = transformers.Kosmos2Model(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(given["image_embeds_position_mask"].tolist(), [[0, 1, 1, 1, 1, 0, 0, 0]])
        forward(model, given)

    def test_xlstm_is_cut_in_its_blocks_too(self):
        # xLSTM builds num_blocks blocks; num_hidden_layers cut alone left a model as large as
        # before, whose cache had one layer ("KeyError 1").
        # The defaults (6.66 B parameters) cut on the meta device: 0.41 B.
        config = corpus_inputs.fitted(transformers.xLSTMConfig(), transformers.xLSTMModel)
        self.assertEqual((config.num_blocks, config.num_hidden_layers), (1, 1))
        with torch.device("meta"):
            model = transformers.xLSTMModel(config)
        self.assertLess(sum(p.numel() for p in model.parameters()), corpus_inputs.MAX_PARAMETERS)

    def test_an_encoder_decoder_over_hidden_states_gets_them_for_both_halves(self):
        # SpeechT5's bare model has no prenets: its encoder and decoder take hidden states
        # ("Given normalized_shape=[768] ... but got input of size [1, 16000]" for samples).
        config = transformers.SpeechT5Config(
            hidden_size=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64)
        model = transformers.SpeechT5Model(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(given["input_values"].shape[-1], 32)
        self.assertEqual(given["decoder_input_values"].shape[-1], 32)
        forward(model, given)

    def test_an_image_encoded_at_several_scales_holds_a_patch_at_the_smallest(self):
        # DepthPro encodes its image at scales 0.25, 0.5 and 1 in patches of patch_size: "Image
        # size 224x224 is too small to be scaled" for the default size; here 64 / 0.25.
        dinov2 = dict(model_type="dinov2", image_size=64, patch_size=16, hidden_size=16,
                      num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)
        config = transformers.DepthProConfig(
            patch_size=64, fusion_hidden_size=16, intermediate_hook_ids=[1, 0],
            intermediate_feature_dims=[16, 16], scaled_images_feature_dims=[16, 16, 16],
            image_model_config=dinov2, patch_model_config=dinov2, fov_model_config=dinov2)
        model = transformers.DepthProModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_values"].shape), [1, 3, 256, 256])
        forward(model, given)

    def test_a_model_of_several_main_inputs_gets_each(self):
        # OneFormer declares two main inputs, an image and its task: "takes ['pixel_values',
        # 'task_inputs'] as its main input, which models/transformers does not make".
        config = transformers.OneFormerConfig(
            backbone_config=dict(model_type="swin", image_size=64, embed_dim=8, depths=[1] * 4,
                                 num_heads=[1] * 4, out_features=["stage1", "stage2", "stage3",
                                                                   "stage4"]),
            num_queries=4, conv_dim=32, mask_dim=32, hidden_dim=32, encoder_feedforward_dim=32,
            dim_feedforward=32, encoder_layers=1, decoder_layers=2, num_attention_heads=2,
            text_encoder_width=32, text_encoder_num_layers=1, task_seq_len=8)
        model = transformers.OneFormerModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["task_inputs"].shape), [1, 8])
        forward(model, given)

    def test_a_model_that_requires_text_beside_its_image_gets_it(self):
        # Grounding DINO finds in its image what its text names: "missing 1 required positional
        # argument: 'input_ids'".
        config = transformers.GroundingDinoConfig(
            backbone_config=dict(model_type="swin", image_size=64, embed_dim=8, depths=[1] * 4,
                                 num_heads=[1] * 4, out_features=["stage2", "stage3", "stage4"]),
            text_config=dict(model_type="bert", vocab_size=64, hidden_size=16,
                             num_hidden_layers=1, num_attention_heads=2, intermediate_size=32),
            num_queries=4, encoder_layers=1, decoder_layers=1, d_model=32, encoder_ffn_dim=32,
            decoder_ffn_dim=32, encoder_attention_heads=2, decoder_attention_heads=2,
            max_text_len=16)
        model = transformers.GroundingDinoModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertLess(int(given["input_ids"].max()), 64)
        forward(model, given)

    def test_a_codec_of_samples_and_features_gets_both(self):
        # NeuCodec encodes samples acoustically and log-mel features semantically: "missing 1
        # required positional argument: 'input_features'"; a frame per code (320 samples).
        config = transformers.NeuCodecConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=2, head_dim=16, quantization_dim=64,
            semantic_model_config=dict(model_type="wav2vec2-bert", hidden_size=32,
                                       num_hidden_layers=1, num_attention_heads=2,
                                       intermediate_size=64, output_hidden_size=32))
        model = transformers.NeuCodecModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["input_features"].shape), [1, 50, 160])
        forward(model, given)

    def test_udop_gets_normalized_boxes(self):
        # UDOP indexes its 2-D tables by coordinates in 0..1 times their size, and averages them:
        # "mean(): could not infer output dtype ... Got: torch.int64" for LayoutLM's indices.
        config = transformers.UdopConfig(
            vocab_size=64, d_model=32, d_kv=16, d_ff=64, num_layers=1, num_decoder_layers=1,
            num_heads=2, image_size=32, patch_size=16)
        model = transformers.UdopModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertTrue(given["bbox"].is_floating_point())
        self.assertLessEqual(float(given["bbox"].max()), 1.0)
        forward(model, given)

    def test_an_audio_encoder_gets_a_mask_it_reads_though_it_has_a_default(self):
        # AudioFlamingo 3's encoder: "'NoneType' object has no attribute 'sum'" without
        # input_features_mask, which its forward does not require.
        config = transformers.AudioFlamingo3EncoderConfig(
            num_mel_bins=16, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=32, max_source_positions=20)
        model = transformers.AudioFlamingo3Encoder(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["input_features_mask"].shape), [1, 40])
        forward(model, given)

    def test_experts_the_defaults_leave_unset_get_the_published_sizes(self):
        # dots.llm1's defaults leave its routed experts None ("empty() takes 1 positional
        # argument but 3 were given"); its published config.json has 128, 6 a token, 2 shared.
        config = transformers.Dots1Config(
            vocab_size=64, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
            num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
            first_k_dense_replace=0)
        config = corpus_inputs.fitted(config, transformers.Dots1Model)
        self.assertEqual((config.n_routed_experts, config.num_experts_per_tok,
                          config.n_shared_experts), (128, 6, 2))
        model = transformers.Dots1Model(config).eval()
        forward(model, corpus_inputs.transformers_inputs(model, 1, 8))

    def test_hrm_is_cut_in_its_blocks_per_stack(self):
        # num_hidden_layers counts HRM's cache slots (blocks x H_cycles x (L_cycles + 1)); cut
        # alone, it left the blocks as they were and too few slots ("list index out of range").
        config = corpus_inputs.fitted(transformers.HrmTextConfig(), transformers.HrmTextModel)
        self.assertEqual((config.num_layers_per_stack, config.num_hidden_layers),
                         (2, 2 * config.H_cycles * (config.L_cycles + 1)))

    def test_an_image_size_of_two_sides_gets_images_of_those_sides(self):
        # MGP-STR reads text lines of 32x128: "Input image size (32*32) doesn't match model
        # (32*128)" for a square of the first side.
        config = transformers.MgpstrConfig(
            image_size=[16, 64], patch_size=4, hidden_size=16, num_hidden_layers=1,
            num_attention_heads=2, max_token_length=8)
        model = transformers.MgpstrForSceneTextRecognition(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_values"].shape), [1, 3, 16, 64])
        forward(model, given)

    def test_each_side_of_an_encoder_decoder_gets_its_own_vocabulary_and_layout(self):
        # Dia names no vocabulary of its own: its encoder reads 256 byte tokens ("index out of
        # range in self" for ids up to 1,000), its decoder audio codes in 9 channels, the
        # channels as the last axis (a row per sample and channel, which its forward also
        # declares, fails in its own `view`: "view size is not compatible").
        config = transformers.DiaConfig(
            encoder_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                vocab_size=40),
            decoder_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                cross_num_attention_heads=2, cross_head_dim=8,
                                cross_num_key_value_heads=1, cross_hidden_size=16,
                                vocab_size=1028, num_channels=3),
            delay_pattern=[0, 8, 9])
        model = transformers.DiaModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertLess(int(given["input_ids"].max()), 40)
        self.assertEqual(list(given["decoder_input_ids"].shape), [2, 8, 3])
        self.assertGreaterEqual(int(given["decoder_input_ids"].max()), 40)
        forward(model, given)

    def test_an_image_segmented_in_context_gets_an_example_image_and_mask(self):
        # SegGPT: "missing 2 required positional arguments: 'prompt_pixel_values' and
        # 'prompt_masks'"; the example stacks above the image within its configured size.
        config = transformers.SegGptConfig(
            hidden_size=16, num_hidden_layers=2, num_attention_heads=2, mlp_dim=32,
            image_size=[64, 32], patch_size=16, pretrain_image_size=32, decoder_hidden_size=8,
            intermediate_hidden_state_indices=[0, 1], merge_index=0)
        model = transformers.SegGptModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        for name in ("pixel_values", "prompt_pixel_values", "prompt_masks"):
            self.assertEqual(list(given[name].shape), [1, 3, 32, 32], name)
        forward(model, given)


    def test_a_drafter_gets_its_noise_block_and_the_target_context(self):
        # Muse Glimmer's assistant (a DFlash drafter): "takes 'noise_embeds' as its main input,
        # which models/transformers does not make"; its forward requires the target model's
        # hidden states at its target layers beside it, concatenated along the last axis.
        config = transformers.MuseGlimmerAssistantConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=1, head_dim=16, block_size=4, target_layer_ids=[0, 2, 4])
        model = transformers.MuseGlimmerAssistantModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["noise_embeds"].shape), [1, 4, 32])
        self.assertEqual(list(given["context_hidden_states"].shape), [1, 8, 96])
        forward(model, given)

    def test_a_model_that_splices_images_into_its_text_gets_images_and_their_tokens(self):
        # LLaVA: one image token per feature vector its projector makes of an image, 16 patches
        # here (a 32-pixel image in patches of 8; the class token dropped by its defaults); the
        # model counts them itself. Its defaults put the image token past the text vocabulary
        # (token 64 of 64 rows here, 32000 of 32000 in LLaVA's): the vocabulary grows to hold
        # it, padded to a multiple of 64 as the published checkpoints' (32,064).
        config = transformers.LlavaConfig(
            text_config=dict(model_type="llama", vocab_size=64, hidden_size=32,
                             intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                             num_key_value_heads=1),
            vision_config=dict(model_type="clip_vision_model", hidden_size=32,
                               intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                               image_size=32, patch_size=8, projection_dim=32),
            image_token_index=64, vision_feature_layer=-1)
        config = corpus_inputs.fitted(config, transformers.LlavaModel)
        self.assertEqual(config.text_config.vocab_size, 128)
        model = transformers.LlavaModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual(list(given["pixel_values"].shape), [2, 3, 32, 32])
        self.assertEqual(list(given["input_ids"].shape), [2, 16 + 8])
        self.assertEqual((given["input_ids"] == 64).sum(dim=1).tolist(), [16, 16])
        forward(model, given)

    def test_a_tower_that_counts_its_grid_before_its_patches_gets_the_layout_it_takes(self):
        # Inkling 2's tower counts its patches from its grid (a data-dependent repeat) before it
        # reshapes its pixels, so fake tensors take every grid layout as far as that count: a
        # real forward tells them apart. Its grid counts merged patches (8 x 8 of a 16 x 16
        # patch side), its rows are merged patches of pixels, channels last. Qwen2-VL's tower
        # reshapes first, and keeps its flattened patches and grid in patches.
        config = transformers.Inkling2VisionConfig(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=2, patch_size=4,
            spatial_merge_size=2, posemb_grid_size=8, projection_hidden_dim=32,
            text_hidden_size=32)
        model = transformers.Inkling2VisionModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual(list(given["pixel_values"].shape), [2 * 8 * 8, 8, 8, 3])
        self.assertEqual(given["image_grid_thw"].tolist(), [[1, 8, 8]] * 2)
        forward(model, given)
        config = transformers.Qwen2_5_VLVisionConfig(
            depth=1, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=4,
            temporal_patch_size=2, spatial_merge_size=2, out_hidden_size=32, window_size=16,
            fullatt_block_indexes=[0])
        model = transformers.Qwen2_5_VisionTransformerPretrainedModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["hidden_states"].shape), [16 * 16, 3 * 2 * 4 * 4])
        self.assertEqual(given["grid_thw"].tolist(), [[1, 16, 16]])
        forward(model, given)


if __name__ == "__main__":
    unittest.main()
