"""Inputs for the scripts of models/transformers/: what a model built from its configuration
takes, by the modality its class declares (`main_input_name`), with the configuration's sizes.

    inputs = corpus_inputs.transformers_inputs(model, batch_size, max_seq_length)
    outputs = model(**inputs)

Token ids and an attention mask for text; decoder token ids too for encoder-decoders; pixel values
at the configuration's image size for vision; both for a dual encoder (CLIP-like: a text and an
image tower); log-mel features (Whisper-like) or raw samples for
audio. Random values from torch's generator (the script seeds it). A model this cannot feed raises
ValueError naming what it takes, so the script fails in one line.
"""

import inspect

import torch


def _sub(config, name):
    """`name` from the configuration or one of its sub-configurations (vision_config, ...)."""
    for holder in (config, getattr(config, "vision_config", None),
                   getattr(config, "encoder", None), getattr(config, "text_config", None)):
        value = getattr(holder, name, None) if holder is not None else None
        if value is not None:
            return value
    return None


def _size(value, default):
    if isinstance(value, (list, tuple)):
        return int(value[0]) if value else default
    if isinstance(value, dict):
        return int(value.get("height") or value.get("shortest_edge") or default)
    return int(value) if value else default


def _token_ids(config, batch_size, length):
    vocab = _sub(config, "vocab_size") or 1000
    return torch.randint(0, max(2, min(int(vocab), 32000)), (batch_size, length))


def _sequence_length(config, max_seq_length):
    limit = _sub(config, "max_position_embeddings")
    if isinstance(limit, int) and limit > 0:
        return min(max_seq_length, limit)
    return max_seq_length


def _accepts(model, name):
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _dual_encoder(model):
    """A text tower and an image tower side by side (CLIP, SigLIP, ALIGN, BLIP, OWL-ViT): its
    forward needs both. Models that splice image features into the text at image tokens (Llava,
    Idefics: an `image_token_id`) need those tokens counted per image, which this does not do."""
    config = model.config
    return (getattr(config, "text_config", None) is not None
            and getattr(config, "vision_config", None) is not None
            and _accepts(model, "input_ids") and _accepts(model, "pixel_values")
            and not any(getattr(config, key, None) is not None
                        for key in ("image_token_id", "image_token_index")))


def _pixel_values(config, batch_size):
    size = _size(_sub(config, "image_size"), 224)
    channels = _sub(config, "num_channels") or 3
    return torch.rand(batch_size, int(channels), size, size)


def _text_inputs(config, batch_size, max_seq_length):
    text = getattr(config, "text_config", None) or config  # a dual encoder's text tower
    length = _sequence_length(text, max_seq_length)
    return {"input_ids": _token_ids(text, batch_size, length),
            "attention_mask": torch.ones(batch_size, length, dtype=torch.long)}


def transformers_inputs(model, batch_size, max_seq_length):
    """The keyword arguments of one forward of `model` (a transformers PreTrainedModel)."""
    config = model.config
    main = getattr(model, "main_input_name", "input_ids")
    if main in ("input_ids", "pixel_values") and _dual_encoder(model):
        inputs = _text_inputs(config, batch_size, max_seq_length)
        inputs["pixel_values"] = _pixel_values(config.vision_config, batch_size)
        return inputs
    if main == "input_ids":
        length = _sequence_length(config, max_seq_length)
        inputs = {"input_ids": _token_ids(config, batch_size, length),
                  "attention_mask": torch.ones(batch_size, length, dtype=torch.long)}
        if getattr(config, "is_encoder_decoder", False):
            inputs["decoder_input_ids"] = _token_ids(config, batch_size, length)
        return inputs
    if main == "pixel_values":
        return {"pixel_values": _pixel_values(config, batch_size)}
    if main == "input_features":
        mel = _sub(config, "num_mel_bins")
        positions = _sub(config, "max_source_positions")
        if mel and positions:  # Whisper-like: the encoder takes 2 frames per position
            features = {"input_features": torch.randn(batch_size, int(mel), 2 * int(positions))}
        else:
            per_frame = (_sub(config, "input_feat_per_channel") or _sub(config, "feature_size")
                         or 80) * (_sub(config, "input_channels") or 1)
            features = {"input_features": torch.randn(batch_size, 584, int(per_frame))}
        if getattr(config, "is_encoder_decoder", False):
            features["decoder_input_ids"] = _token_ids(config, batch_size, 8)
        return features
    if main == "input_values":
        return {"input_values": torch.randn(batch_size, 16000)}
    raise ValueError("%s takes %r as its main input, which models/transformers does not make"
                     % (type(model).__name__, main))
