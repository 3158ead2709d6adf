# labels: test_group::torch2 author::turnkey
"""corpus_inputs for the classes the transformers dry run still failed in session 19
(docs/corpus_dry_runs.md): image pairs, audio or clips beside text, texts and sizes a forward
requires under names of its own, frames and images at the sizes a tower takes; since session 21
a question beside its context and noise a forward would draw itself. Each builds a real
transformers class from a tiny configuration (random weights, no download) and runs its forward
with the corpus's inputs. Run by the PyPI interpreter:
`.deps/pypi/bin/python3 tests/python/test_corpus_side_inputs.py` (ctest: torch2.corpus_side_inputs)."""

import unittest

import torch

from turnkeyml import corpus_inputs

import transformers


def forward(model, given):
    with torch.no_grad():
        return model(**given)


# Perception Encoder's parts, tiny: layers of 32, a timm tower of its own image size (384).
_PE_LAYERS = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=2, head_dim=16)
_PE_VIDEO = dict(_PE_LAYERS, vision_config=dict(
    model_type="timm_wrapper", architecture="vit_tiny_patch16_384", num_classes=16))
_PE_TEXT = dict(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                num_attention_heads=2, max_position_embeddings=64, pad_token_id=0,
                bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2)


class InputsBesideTheMainOne(unittest.TestCase):
    """Inputs of the classes the dry run of session 19 still failed."""

    def test_a_keypoint_matcher_gets_images_in_pairs(self):
        # EfficientLoFTR and LightGlue: "Input must be a 5D tensor of shape (batch_size, 2,
        # num_channels, height, width)" for single images.
        config = transformers.EfficientLoFTRConfig(num_attention_layers=1)
        model = transformers.EfficientLoFTRModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_values"].shape), [1, 2, 3, 224, 224])
        forward(model, given)

    def test_queries_spliced_in_at_a_video_token_get_clips_and_a_token_per_frame(self):
        # InstructBLIPVideo: its `pixel_values` are clips ("not enough values to unpack
        # (expected 5, got 4)" for images), its text holds the queries of every frame at its
        # video token, which its defaults leave None.
        config = transformers.InstructBlipVideoConfig(
            vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                               num_attention_heads=2, image_size=32, patch_size=16),
            qformer_config=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=64, encoder_hidden_size=32, vocab_size=100),
            text_config=dict(model_type="opt", vocab_size=100, hidden_size=32, ffn_dim=64,
                             num_hidden_layers=1, num_attention_heads=2, word_embed_proj_dim=32),
            num_query_tokens=4)
        config = corpus_inputs.fitted(config, transformers.InstructBlipVideoModel)
        self.assertEqual(config.video_token_index, 99)
        model = transformers.InstructBlipVideoModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual(given["pixel_values"].dim(), 5)
        frames = given["pixel_values"].shape[1]
        self.assertEqual(int((given["input_ids"] == 99).sum()), 2 * 4 * frames)
        forward(model, given)

    def test_a_model_that_refuses_text_alone_gets_a_clip_of_its_timm_towers_size(self):
        # Perception Encoder's PeVideoModel: "missing 1 required positional argument:
        # 'pixel_values_videos'" for text alone; its video tower is timm's, whose pretrained
        # configuration gives its image size (vit_pe_core_large_patch14_336: "Input height (224)
        # doesn't match model (336)"; vit_tiny_patch16_384 here).
        config = transformers.PeVideoConfig(text_config=_PE_TEXT, video_config=_PE_VIDEO)
        model = transformers.PeVideoModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_values_videos"].shape)[-3:], [3, 384, 384])
        forward(model, given)

    def test_an_audio_encoder_that_takes_a_video_beside_gets_both(self):
        # Perception Encoder's audio-video encoder embeds samples (with a channel axis) and a
        # clip together; without the clip it fails before its layers.
        config = transformers.PeAudioVideoEncoderConfig(
            audio_config=dict(_PE_LAYERS, dac_config=dict(
                encoder_hidden_size=4, hidden_size=32, decoder_hidden_size=16,
                downsampling_ratios=[2, 4, 5, 8], upsampling_ratios=[8, 5, 4, 2],
                hop_length=320, codebook_dim=8, codebook_size=16, n_codebooks=2)),
            video_config=_PE_VIDEO, **_PE_LAYERS)
        model = transformers.PeAudioVideoEncoder(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["input_values"].shape), [1, 1, 16000])
        self.assertEqual(given["pixel_values_videos"].dim(), 5)
        forward(model, given)

    def test_idefics_gets_images_per_sample_and_the_images_each_token_attends_to(self):
        # "Exactly 1 of pixel_values, image_encoder_embeddings or perceiver_embeddings has to
        # be not-None" for text alone; its images are (batch, images, channels, height, width).
        config = transformers.IdeficsConfig(
            vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, cross_layer_interval=1, use_resampler=False,
            vision_config=dict(embed_dim=32, image_size=32, patch_size=16, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=64))
        model = transformers.IdeficsModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_values"].shape), [1, 1, 3, 32, 32])
        self.assertEqual(list(given["image_attention_mask"].shape), [1, 8, 1])
        forward(model, given)

    def test_a_speech_encoder_decoder_over_samples_gets_decoder_ids(self):
        # Moonshine: "You must specify exactly one of input_ids or inputs_embeds" in its decoder.
        config = transformers.MoonshineConfig(
            vocab_size=100, hidden_size=32, intermediate_size=64, encoder_num_hidden_layers=1,
            decoder_num_hidden_layers=1, encoder_num_attention_heads=2,
            decoder_num_attention_heads=2)
        model = transformers.MoonshineModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertIn("decoder_input_ids", given)
        forward(model, given)

    def test_samples_of_whole_tokens_for_an_encoder_of_a_fixed_count_a_token(self):
        # Muse Spark's audio encoder: "`input_values` length 16000 is not a multiple of 1920".
        config = transformers.MuseSparkAudioConfig(
            hidden_sizes=[8, 16, 16, 16], depths=[1, 1, 1, 1], out_hidden_size=16)
        model = transformers.MuseSparkAudioModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(given["input_values"].shape[-1] % config.samples_per_token, 0)
        forward(model, given)

    def test_texts_of_their_own_names_get_their_rows_and_their_count_per_sample(self):
        # OmDet-Turbo: "missing 5 required positional arguments: 'classes_input_ids',
        # 'classes_attention_mask', 'tasks_input_ids', 'tasks_attention_mask',
        # 'classes_structure'": the classes of each sample flattened, counted per sample.
        config = transformers.OmDetTurboConfig(
            image_size=224, text_config=dict(
                model_type="clip_text_model", vocab_size=100, hidden_size=32, intermediate_size=64,
                num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=16),
            text_projection_in_dim=32, text_projection_out_dim=32, task_encoder_hidden_dim=32,
            class_embed_dim=32, num_queries=16, encoder_hidden_dim=64,
            vision_features_channels=(64, 64, 64), encoder_attention_heads=2,
            encoder_dim_feedforward=32, decoder_hidden_dim=64, decoder_num_heads=2,
            decoder_num_layers=1, decoder_dim_feedforward=32)
        model = transformers.OmDetTurboForObjectDetection(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        rows = int(given["classes_structure"].sum())
        self.assertEqual(given["classes_input_ids"].shape[0], rows)
        self.assertEqual(given["tasks_input_ids"].shape[0], 1)
        forward(model, given)

    def test_tvp_gets_its_frames_at_its_padded_size(self):
        # TVP pads its frames to max_img_size: at 224 its forward was refused on fake tensors,
        # and the frames were left out ("'NoneType' object has no attribute 'dtype'").
        config = transformers.TvpConfig(
            backbone_config=dict(model_type="resnet", embedding_size=8, hidden_sizes=[8, 8, 8, 16],
                                 depths=[1, 1, 1, 1], out_features=["stage4"]),
            max_img_size=64, visual_prompt_size=8, num_frames=2, hidden_size=32,
            intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, vocab_size=100,
            max_position_embeddings=64)
        model = transformers.TvpModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_values"].shape), [1, 2, 3, 64, 64])
        forward(model, given)

    def test_a_windowed_backbone_gets_whole_windows_of_patches(self):
        # RF-DETR's DINOv2 attends within num_windows x num_windows windows of its patch grid:
        # 224 is 56 patches of 4, not 3 whole windows; its own image size (36) is.
        config = transformers.RfDetrConfig(
            backbone_config=dict(
                model_type="rf_detr_dinov2", hidden_size=32, num_attention_heads=2,
                num_hidden_layers=2, image_size=36, patch_size=4, num_windows=3,
                window_block_indexes=[0], out_features=["stage1", "stage2"], out_indices=[1, 2]),
            d_model=32, decoder_ffn_dim=64, decoder_layers=1, decoder_self_attention_heads=2,
            decoder_cross_attention_heads=2, num_queries=8, group_detr=1, intermediate_size=64)
        model = transformers.RfDetrModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(list(given["pixel_values"].shape), [1, 3, 36, 36])
        forward(model, given)

    def test_a_tower_of_packed_images_gets_each_images_size_in_patches(self):
        # MiniCPM-V's vision towers make their position ids from `target_sizes`: "'NoneType'
        # object has no attribute 'device'" without them.
        config = transformers.MiniCPMV4_7VisionConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            image_size=32, patch_size=4, insert_layer_id=1)
        model = transformers.MiniCPMV4_7VisionModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        self.assertEqual(given["target_sizes"].tolist(), [[8, 8]])
        forward(model, given)

    def test_a_question_answering_head_gets_a_question_and_a_context(self):
        # Longformer's head gives the question before the separators global attention and
        # asserts three a row ("There should be exactly three separator tokens"), which random
        # text never holds; a data-dependent check the dry run cannot see.
        config = transformers.LongformerConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, attention_window=8)
        model = transformers.LongformerForQuestionAnswering(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 32)
        separators = (given["input_ids"] == config.sep_token_id).nonzero()[:, 1].tolist()
        self.assertEqual(separators, [4, 5, 31] * 2)  # the question is an eighth of the row
        self.assertEqual(list(forward(model, given).start_logits.shape), [2, 32])

    def test_noise_a_forward_would_draw_itself_is_given(self):
        # ViTMAE masks patches at random by `noise` it draws where none is given, UnivNet
        # vocodes `noise_sequence` likewise: PyTorch's run and the exported graph drew other
        # numbers (ViTMAE: "inconclusive: nondeterministic operator RandomUniformLike"; UnivNet:
        # the dynamo exporter had no translation of randn). Given, the forward is a function.
        config = transformers.ViTMAEConfig(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
            image_size=32, patch_size=8)
        model = transformers.ViTMAEModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual(list(given["noise"].shape), [2, 16])  # 16 patches an image
        first, second = forward(model, given), forward(model, given)
        self.assertTrue(torch.equal(first.last_hidden_state, second.last_hidden_state))
        config = transformers.UnivNetConfig(
            model_in_channels=8, model_hidden_channels=8, num_mel_bins=16,
            resblock_kernel_sizes=[3], resblock_stride_sizes=[8], resblock_dilation_sizes=[[1]],
            kernel_predictor_num_blocks=1, kernel_predictor_hidden_channels=8)
        model = transformers.UnivNetModel(config).eval()
        given = corpus_inputs.transformers_inputs(model, 1, 8)
        frames = given["input_features"].shape[1]
        self.assertEqual(list(given["noise_sequence"].shape), [1, frames, 8])
        self.assertTrue(torch.equal(forward(model, given).waveforms,
                                    forward(model, given).waveforms))

    def test_a_vision_language_action_model_gets_cameras_text_and_its_actions(self):
        # π0 (PI0Model): "missing 1 required positional argument: 'action_embeds'", and without
        # images of each camera, their mask and the text with each image's tokens its prefix
        # fails. The actions are embeddings in the action expert's width (48 here, not the
        # text's 32 or the vision tower's 16), the state and then the chunk (5 + 1).
        tiny = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                    num_attention_heads=2, num_key_value_heads=1, head_dim=16, vocab_size=100)
        config = transformers.PI0Config(
            vlm_config=dict(model_type="paligemma", text_config=dict(tiny, model_type="gemma"),
                            vision_config=dict(model_type="siglip_vision_model", hidden_size=16,
                                               intermediate_size=32, num_hidden_layers=1,
                                               num_attention_heads=2, image_size=28,
                                               patch_size=7, vision_use_head=False),
                            projection_dim=32, image_token_id=99),
            dit_config=dict(tiny, model_type="gemma", hidden_size=48), chunk_size=5)
        model = transformers.PI0Model(config).eval()
        given = corpus_inputs.transformers_inputs(model, 2, 8)
        self.assertEqual(list(given["pixel_values"].shape), [2, 3, 3, 28, 28])  # 3 cameras
        self.assertTrue(bool(given["pixel_attention_mask"].all()))
        image_tokens = (given["input_ids"] == 99).sum(1).tolist()
        self.assertEqual(image_tokens, [3 * 16] * 2)  # 16 patches an image, each camera's
        self.assertEqual(list(given["action_embeds"].shape), [2, 6, 48])
        self.assertEqual(list(forward(model, given).last_hidden_state.shape), [2, 6, 48])


if __name__ == "__main__":
    unittest.main()
