"""The keyword arguments of one forward, by the modality a model's class declares."""

import math

import torch

from .audio import audio_inputs, audio_tower, with_audio
from .config import (MEDIA_TOKENS, accepts, as_size, configs, first_taken, get, placeholder_tokens,
                     sub)
from .image_tokens import image_token, with_image_tokens
from .random_draws import with_drawn_noise
from .required import draft_inputs, grid_inputs, query_token, required, with_required
from .series import series_inputs
from .sound import FEATURES, FRAMES, SAMPLES, audio_main_inputs
from .text import question_and_context, sequence_length, text, text_inputs, token_ids
from .unnamed import first_required, unnamed_main_inputs


def _dual_encoder(model):
    """The name of the images a text tower and an image (or video) tower side by side take
    (CLIP, SigLIP, ALIGN, BLIP, OWL-ViT; VideoPrism's clips): its forward needs both; else None.
    Models that splice image features into the text at image tokens (Llava, Idefics: an
    `image_token_id`; InstructBLIPVideo: a `video_token_index`) need those tokens counted per
    image, which this does not do."""
    config = model.config
    if not (getattr(config, "text_config", None) is not None
            and getattr(config, "vision_config", None) is not None
            and accepts(model, "input_ids")
            and not any(getattr(config, key, None) is not None for key in MEDIA_TOKENS)):
        return None
    return next((n for n in ("pixel_values", "pixel_values_videos") if accepts(model, n)), None)


# How many frames a video model's configuration says a clip has (VideoMAE, ViViT, TimeSformer,
# X-CLIP, VideoPrism: num_frames; V-JEPA 2: frames_per_clip), and the clip's where it says none.
_CLIP_FRAMES = ("num_frames", "frames_per_clip")

_FRAMES_OF_A_CLIP = 8


def _clip_frames(config):
    return next((get(h, n) for h in configs(config) for n in _CLIP_FRAMES
                 if isinstance(get(h, n), int) and get(h, n) > 0), None)


def _image_size(config):
    """The (height, width) of the configuration's images: its image (or crop) size, else 224;
    where it encodes the image at several scales in patches of a fixed size (DepthPro: patches
    of 384 at scales 0.25, 0.5 and 1: "Image size 224x224 is too small to be scaled"), the side
    whose smallest scale is one whole patch (1536, its image processor's size). SAM 2 and EdgeTAM
    name their image size in their prompt encoder's part only (1024: "shape '[1, -1, 256, 256]'
    is invalid" for 224). TVP pads its frames to its `max_img_size` (448: "'NoneType' object
    has no attribute 'dtype'", the frames refused at 224)."""
    prompts = get(config, "prompt_encoder_config")
    height, width = as_size(sub(config, "image_size") or sub(config, "crop_size")
                            or get(prompts, "image_size") or sub(config, "max_img_size")
                            or _windowed_backbone_size(config) or _timm_size(config), 224)
    ratios, patch = sub(config, "scaled_images_ratios"), sub(config, "patch_size")
    if isinstance(ratios, (list, tuple)) and ratios and isinstance(patch, int) and min(ratios) > 0:
        smallest = math.ceil(patch / min(ratios))
        height, width = max(height, smallest), max(width, smallest)
    return height, width


def _matches_pairs(config):
    """Whether the model matches keypoints between two images (transformers' keypoint-matching
    models: EfficientLoFTR, LightGlue, SuperGlue, their base models too), which take the images
    in pairs: "Input must be a 5D tensor of shape (batch_size, 2, num_channels, height, width)"
    for single images."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_KEYPOINT_MATCHING_MAPPING_NAMES

    return getattr(config, "model_type", None) in MODEL_FOR_KEYPOINT_MATCHING_MAPPING_NAMES


def _queries_per_frame(config):
    """Whether a Q-Former model splices its queries in at a video token, those of each frame of
    a clip (InstructBLIPVideo, whose `pixel_values` are clips: "not enough values to unpack
    (expected 5, got 4)" for images)."""
    token = query_token(config)
    return (isinstance(get(config, "num_query_tokens"), int) and token is not None
            and token in (get(config, "video_token_index"), get(config, "video_token_id")))


def _windowed_backbone_size(config):
    """The image side of a detector whose backbone attends within windows of its patch grid
    (LW-DETR, RF-DETR: `num_windows_side`, else `num_windows` a side): the backbone's image
    size, rounded up to whole windows of patches (LW-DETR's 224: "shape '[1, 4, 3, 4, 3, 192]'
    is invalid"; RF-DETR's 518, 37 patches a side, up to 560, its published resolution; at 224
    its 300 queries outnumber its features: "k not in range for dimension"); else None."""
    backbone = get(config, "backbone_config")
    side = get(backbone, "num_windows_side") or get(backbone, "num_windows")
    size, patch = get(backbone, "image_size"), get(backbone, "patch_size")
    if not all(isinstance(v, int) and v > 0 for v in (side, size, patch)):
        return None
    cell = patch * side
    return -(-size // cell) * cell


def _timm_size(config):
    """The (height, width) timm's pretrained configuration gives the timm architecture a
    configuration names (TimmWrapperConfig's `architecture`, in it or a part), else None: its
    images are that size (Perception Encoder's video tower, vit_pe_core_large_patch14_336:
    "Input height (224) doesn't match model (336)")."""
    name = sub(config, "architecture")
    if not isinstance(name, str):
        return None
    arguments = sub(config, "model_args")
    given = arguments.get("img_size") if isinstance(arguments, dict) else None
    if isinstance(given, (list, tuple)) and len(given) == 2:
        return list(given)  # the arguments the tower is built with (PerceptionLM's 448)
    try:
        import timm

        size = getattr(timm.get_pretrained_cfg(name), "input_size", None)
    except Exception:  # not a timm architecture, or timm absent
        return None
    return list(size[-2:]) if isinstance(size, (list, tuple)) and len(size) == 3 else None


def _pixel_values(config, batch_size, video=False):
    """Images at the configuration's size; clips of (frames, channels, height, width) where the
    configuration counts a clip's frames or the input is a video ("not enough values to unpack
    (expected 5, got 4)" for images); pairs of images for a keypoint matcher."""
    height, width = _image_size(config)
    channels = int(sub(config, "num_channels") or 3)
    frames = _clip_frames(config) or (_FRAMES_OF_A_CLIP if video else None)
    frames = 2 if _matches_pairs(config) else frames
    if frames:
        return torch.rand(batch_size, frames, channels, height, width)
    return torch.rand(batch_size, channels, height, width)


# Main inputs this module makes, in the order a forward that does not take its class's declared
# main input is tried for them (vision towers that inherit PreTrainedModel's `input_ids`).
_MAIN_INPUTS = ("pixel_values", "pixel_values_videos") + FEATURES + ("input_values", "input_ids")


def _main_input(model):
    main = getattr(model, "main_input_name", "input_ids")
    if isinstance(main, (list, tuple)) and main:
        # Several main inputs (OneFormer: an image and its task): the first is made by its
        # modality, the others as arguments beside it (required.with_required).
        main = main[0]
    if isinstance(main, str) and not accepts(model, main):
        return next((name for name in _MAIN_INPUTS if accepts(model, name)), main)
    return main


def _audio_features(config, batch_size, main="input_features"):
    mel = sub(config, "num_mel_bins")
    positions = sub(config, "max_source_positions")
    if mel and positions:  # Whisper-like: the encoder takes 2 frames per position
        features = {main: torch.randn(batch_size, int(mel), 2 * int(positions))}
    else:
        per_frame = (sub(config, "input_feat_per_channel") or sub(config, "feature_size")
                     or 80) * (sub(config, "input_channels") or 1)
        features = {main: torch.randn(batch_size, FRAMES, int(per_frame))}
    if getattr(config, "is_encoder_decoder", False):
        features["decoder_input_ids"] = token_ids(config, batch_size, 8)
    return features


def _codebooks(model, inputs, key="input_ids", books=None):
    """inputs with token ids (`key`) in the layout of a model whose tokens are audio codes of
    several codebooks (`num_codebooks`, or `books` where the caller knows them), the first its
    forward takes on fake tensors: one row per sample, one per sample and codebook (MusicGen's
    decoder: (batch * codebooks, length)), the codebooks as an axis of their own (Dia's decoder:
    (batch, length, channels)), or beside a text stream (Kyutai's speech-to-text: a text token
    and 32 codes a step). Codes are drawn within one codebook's vocabulary, which the model
    offsets per codebook into its embedding (Kyutai: `codebook_vocab_size`)."""
    books = books or sub(model.config, "num_codebooks")
    if not isinstance(books, int) or isinstance(books, bool) or books < 2:
        return inputs
    ids = inputs[key]
    codes = sub(model.config, "codebook_vocab_size")
    if isinstance(codes, int) and 1 < codes:
        ids = ids % codes
    layouts = [inputs[key], torch.cat([ids] * books), ids[:, None].expand(-1, books, -1)]
    layouts += [ids[..., None].expand(-1, -1, n) for n in (books, books + 1)]
    return first_taken(model, (dict(inputs, **{key: layout.contiguous()})
                               for layout in layouts)) or inputs


def _side(config, part):
    """The part of an encoder-decoder configuration (`encoder` or `decoder`) that holds its
    side's vocabulary where the whole names none (Dia: a text encoder of 256 byte tokens, a
    decoder of 1,028 audio codes in 9 channels), else the configuration itself."""
    held = get(config, part + "_config")
    return held if held is not None and sub(config, "vocab_size") is None else config


def _question_answering(model):
    """Whether model is a question-answering head (transformers' mapping of them)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES
    return type(model).__name__ in MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES.values()


def _text_main_inputs(model, batch_size, max_seq_length):
    """Token ids and their mask; decoder ids beside them for an encoder-decoder, each side
    within its own vocabulary and, where the decoder's tokens are codes of several channels
    (Dia), in the layout its forward takes."""
    config = model.config
    encoder, decoder = _side(config, "encoder"), _side(config, "decoder")
    length = sequence_length(encoder, max_seq_length)
    avoid = placeholder_tokens(config)
    ids = text(encoder, batch_size, length, avoid)
    if _question_answering(model):
        ids = question_and_context(encoder, ids, avoid)
    inputs = {"input_ids": ids, "attention_mask": torch.ones(batch_size, length, dtype=torch.long)}
    if getattr(config, "is_encoder_decoder", False):
        inputs["decoder_input_ids"] = token_ids(decoder, batch_size, length, avoid)
        if decoder is not config:
            inputs = _codebooks(model, inputs, "decoder_input_ids", get(decoder, "num_channels"))
    return _codebooks(model, inputs)


def _main_inputs(model, main, batch_size, max_seq_length):
    config = model.config
    images = _dual_encoder(model) if main in ("input_ids", "pixel_values",
                                              "pixel_values_videos") else None
    if images:
        inputs = text_inputs(config, batch_size, max_seq_length)
        inputs[images] = _pixel_values(config.vision_config, batch_size,
                                       video=images.endswith("videos"))
        return inputs
    if main == "input_ids" and audio_tower(model):
        audio = audio_inputs(model, batch_size, max_seq_length)
        if audio is not None:
            return with_audio(model, audio, batch_size)
    if main == "input_ids":
        return _text_main_inputs(model, batch_size, max_seq_length)
    if main in ("pixel_values", "pixel_values_videos"):
        video = main.endswith("videos") or _queries_per_frame(config)
        return {main: _pixel_values(config, batch_size, video=video)}
    if main in FEATURES:
        return audio_main_inputs(model, main, _audio_features(config, batch_size, main),
                                 batch_size)
    series = series_inputs(model, batch_size, max_seq_length)
    if series is not None:
        return series
    if main == "input_values":
        guess = dict({main: torch.randn(batch_size, SAMPLES)}, **_clip_beside(model, batch_size))
        if getattr(config, "is_encoder_decoder", False) and accepts(model, "decoder_input_ids"):
            # A speech-to-text encoder-decoder over samples (Moonshine: "You must specify
            # exactly one of input_ids or inputs_embeds" in its decoder without them).
            guess["decoder_input_ids"] = token_ids(config, batch_size, 8)
        return audio_main_inputs(model, main, guess, batch_size)
    if main == "noise_embeds" and "context_hidden_states" in required(model):
        return draft_inputs(model, batch_size, max_seq_length)
    unnamed = unnamed_main_inputs(model, main, _pixel_values(config, batch_size), batch_size,
                                  max_seq_length) if accepts(model, main) else None
    if unnamed is not None:
        return unnamed
    raise ValueError("%s takes %r as its main input, which models/transformers does not make"
                     % (type(model).__name__, main))


def _image_beside_text(model, inputs, batch_size):
    """inputs, with an image where the forward takes text and an image beside it and refuses the
    text alone (ViLT: "You have to specify either pixel_values or image_embeds"; Idefics: its
    images per sample, with the mask of the images each token attends to): tried on fake
    tensors, the text alone first. Models that splice the image in at image tokens (an
    `image_token_id`) are left to image_tokens.with_image_tokens, which counts the tokens."""
    config = model.config
    if ("input_ids" not in inputs or "pixel_values" in inputs
            or not accepts(model, "pixel_values")
            or image_token(config) is not None):
        return inputs
    images = _pixel_values(getattr(config, "vision_config", None) or config, batch_size)
    layouts = [inputs, dict(inputs, pixel_values=images)]
    if accepts(model, "image_attention_mask") and images.dim() == 4:
        # Idefics: images per sample, (batch, images, channels, height, width), and which
        # images each token attends to ("Exactly 1 of pixel_values, image_encoder_embeddings or
        # perceiver_embeddings has to be not-None" without them): one image, all attend.
        length = inputs["input_ids"].shape[1]
        layouts.append(dict(inputs, pixel_values=images[:, None], image_attention_mask=torch.ones(
            batch_size, length, 1, dtype=torch.long)))
    return first_taken(model, layouts) or inputs


def _video_part(config):
    """The part of a configuration that holds its video tower (`video_config`, in it or a part
    of it: Perception Encoder's audio-video models), else None."""
    return next((get(h, "video_config") for h in configs(config)
                 if get(h, "video_config") is not None), None)


def _clip_beside(model, batch_size):
    """{"pixel_values_videos": a clip} where the forward of an audio model takes a video beside
    its audio and the configuration has a video tower (Perception Encoder's audio-video encoder
    encodes both in one embedder: without the clip it fails before its layers), else {}."""
    video = _video_part(model.config)
    if video is None or not accepts(model, "pixel_values_videos"):
        return {}
    return {"pixel_values_videos": _pixel_values(video, batch_size, video=True)}


def _media_beside_text(model, inputs, batch_size):
    """inputs, with audio or a clip where the forward takes text and audio or a video beside it
    and refuses the text alone (Perception Encoder's PeVideoModel: "missing 1 required
    positional argument: 'pixel_values_videos'"; PeAudioVideoModel: "At least two of input_ids,
    pixel_values_videos, or input_values must be provided"): tried on fake tensors, the text
    alone first, then raw samples (mono, then with a channel axis), then a clip of the video
    tower's size. Models that splice media in at placeholder tokens are left as they are: their
    text holds no such token."""
    config = model.config
    if ("input_ids" not in inputs or placeholder_tokens(config)
            or any(n in inputs for n in ("input_values", "pixel_values_videos"))):
        return inputs
    layouts = []
    if accepts(model, "input_values"):
        layouts += [dict(inputs, input_values=torch.randn(batch_size, *channel, SAMPLES))
                    for channel in ((), (1,))]
    if accepts(model, "pixel_values_videos"):
        clip = _pixel_values(_video_part(config) or config, batch_size, video=True)
        layouts.append(dict(inputs, pixel_values_videos=clip))
    if not layouts:
        return inputs
    return first_taken(model, [inputs] + layouts) or inputs


def transformers_inputs(model, batch_size, max_seq_length):
    """The keyword arguments of one forward of `model` (a transformers PreTrainedModel): its main
    input, then the other arguments its forward needs (required.with_required); a forward that
    still lacks its first parameter gets it as its main input (unnamed)."""
    grid = grid_inputs(model, batch_size)
    if grid is not None:  # a vision tower fed patches and their grid (Qwen2-VL's kind)
        return grid
    inputs = with_required(model, _main_inputs(model, _main_input(model), batch_size,
                                               max_seq_length), batch_size)
    inputs = _media_beside_text(model, _image_beside_text(model, inputs, batch_size), batch_size)
    if "input_ids" in inputs and "pixel_values" not in inputs:
        vision = getattr(model.config, "vision_config", None) or model.config
        inputs = with_image_tokens(model, inputs, _pixel_values(vision, batch_size))
    inputs = with_drawn_noise(model, inputs)
    # A forward whose first parameter is none of the names its class declares, the modalities
    # use or with_required makes (VibeVoice's tokenizers declare `input_values` and take
    # `hidden_states`) takes it as its main input.
    first = first_required(model)
    if first is not None and first not in inputs:
        unnamed = unnamed_main_inputs(model, first, _pixel_values(model.config, batch_size),
                                      batch_size, max_seq_length)
        if unnamed is not None:
            return with_required(model, unnamed, batch_size)
    return inputs
