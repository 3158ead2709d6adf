"""Audio beside text: the audio inputs of a model with an audio tower next to its text tower
(speech LLMs, text-audio dual encoders), found by trying candidate layouts on fake tensors."""

import torch

from .config import accepts, get, on_fake_tensors, on_weights, placeholder_tokens
from .placeholders import feature_count
from .text import sequence_length, text_inputs, token_ids


# Audio towers: the names their forwards give the features, a mask over the features' frames, and
# the sizes of a frame in their configurations.
_AUDIO_INPUTS = ("input_features", "input_values")


_AUDIO_MASKS = ("input_features_mask", "feature_attention_mask", "input_features_attention_mask",
                "padding_mask", "audio_attention_mask")


_MEL_SIZES = ("num_mel_bins", "n_mels", "feature_size", "input_feat_per_channel", "input_dim",
              "num_mel_filters", "input_feature_size")


def audio_tower(model):
    """A model with an audio tower beside its text (an `audio_config`) whose forward takes both
    token ids and audio: speech LLMs (Qwen2-Audio, Voxtral: audio embeddings spliced in at audio
    tokens) and text-audio dual encoders (CLAP)."""
    return (getattr(model.config, "audio_config", None) is not None
            and any(accepts(model, name) for name in _AUDIO_INPUTS))


def _audio_token(config):
    for holder in (config, getattr(config, "audio_config", None)):
        for name in ("audio_token_id", "audio_token_index"):
            value = get(holder, name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def _audio_layouts(model, batch_size):
    """Candidate audio inputs, most likely first: Whisper-like log-mel features (mel bins by
    frames, 2 frames per encoder position, which those encoders require), the same frames first,
    or raw samples; each with a mask over its frames where the forward takes one (bool, then
    integer)."""
    audio = model.config.audio_config
    name = next(n for n in _AUDIO_INPUTS if accepts(model, n))
    masks = [m for m in _AUDIO_MASKS if accepts(model, m)]
    if name == "input_values":
        candidates = [(torch.randn(batch_size, 16000), 16000)]
    else:
        mel = next((int(get(audio, m)) for m in _MEL_SIZES if isinstance(get(audio, m), int)),
                   128)
        positions = get(audio, "max_source_positions")
        frames = 2 * int(positions) if isinstance(positions, int) and positions > 0 else 400
        candidates = [(torch.randn(batch_size, mel, frames), frames),
                      (torch.randn(batch_size, frames, mel), frames),
                      (torch.randn(batch_size, 1, frames, mel), frames)]  # CLAP: a channel
    for values, frames in candidates:
        for dtype in (torch.bool, torch.long) if masks else (None,):
            yield dict({name: values},
                       **{mask: torch.ones(batch_size, frames, dtype=dtype) for mask in masks})


def _embeddings_count(output):
    """How many embedding vectors an audio tower's output holds (its pooled or last hidden
    states, whatever leading dimensions they have)."""
    for name in ("pooler_output", "last_hidden_state", "audio_embeds"):
        value = getattr(output, name, None)
        if isinstance(value, torch.Tensor):
            output = value
            break
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        output = output[0]
    if not isinstance(output, torch.Tensor) or output.dim() < 2:
        return None
    return output.numel() // output.shape[-1]


def _audio_encoder(model):
    """What makes the audio embeddings: the model's `get_audio_features` where it has one, else
    its audio tower (a submodule named audio_tower, audio_encoder or audio_model)."""
    get = getattr(model, "get_audio_features", None)
    if callable(get):
        return get
    for name, module in model.named_modules():
        if name.count(".") <= 1 and name.rpartition(".")[2] in (
                "audio_tower", "audio_encoder", "audio_model"):
            return module.forward
    return None


def audio_inputs(model, batch_size, max_seq_length):
    """(audio inputs, audio tokens per sample, text length): the first candidate audio input the
    model takes, the number of audio embeddings its audio tower makes per sample where audio
    tokens stand for them (else None), and the text's length; None when no candidate fits.
    Tried on fake tensors: the audio tower where there are audio tokens to count, else the
    whole forward with text beside the audio."""
    encoder = _audio_encoder(model)
    token = _audio_token(model.config)
    # The tries run where the weights are (a model on the meta device: bench/transformers_dry_run).
    for inputs in _audio_layouts(model, batch_size):
        count = None
        try:
            if encoder is not None:
                count = _embeddings_count(on_fake_tensors(encoder, on_weights(model, inputs)))
        except Exception:  # not this layout
            pass
        if token is not None and count:
            # What the model splices in may be more than its tower makes (Gemma 3n pads its
            # audio to 188 embeddings): its own placeholder check counts, where it has one.
            text = text_inputs(model.config, batch_size, max_seq_length)
            count = feature_count(model, dict(text, **inputs), "audio_features") or count
        count = count // batch_size if count and count % batch_size == 0 else None
        if token is not None:
            if count:
                return inputs, count, max_seq_length
            continue
        # No audio tokens: a dual encoder (text beside audio), or text aligned with the audio's
        # embeddings step by step (Voxtral Realtime adds them): text of the usual length, else
        # of the audio's.
        for length in (max_seq_length, count):
            try:
                if length:
                    text = text_inputs(model.config, batch_size, length)
                    on_fake_tensors(model.forward, on_weights(model, dict(text, **inputs)))
                    return inputs, None, length
            except Exception:  # not this layout or length
                continue
    return None


def with_audio(model, audio, batch_size):
    """Token ids with one audio token per audio embedding (first, then text), and the audio."""
    inputs, per_sample, text_length = audio
    config = model.config
    text = getattr(config, "text_config", None) or config
    length = sequence_length(text, text_length)
    ids = token_ids(text, batch_size, length, placeholder_tokens(config))
    token = _audio_token(config)
    if per_sample:
        ids = torch.cat([torch.full((batch_size, per_sample), token, dtype=ids.dtype), ids], 1)
    result = {"input_ids": ids,
              "attention_mask": torch.ones(batch_size, ids.shape[1], dtype=torch.long)}
    result.update(inputs)
    return result
