"""Inputs for the scripts of models/transformers/: what a model built from its configuration
takes, by the modality its class declares (`main_input_name`), with the configuration's sizes.

    inputs = corpus_inputs.transformers_inputs(model, batch_size, max_seq_length)
    outputs = model(**inputs)

Token ids and an attention mask for text; decoder token ids too for encoder-decoders; pixel values
at the configuration's image size for vision; both for a dual encoder (CLIP-like: a text and an
image tower); log-mel features (Whisper-like) or raw samples for audio; token ids and audio for a
model with an audio tower beside its text (speech LLMs: one audio token per embedding the tower
makes, counted on fake tensors; text-audio dual encoders). Random values from torch's generator
(the script seeds it). A model this cannot feed raises ValueError naming what it takes, so the
script fails in one line.
"""

import copy
import inspect
import logging

import torch


def _get(holder, name):
    """holder.name, or None: also where transformers refuses to give one value for an attribute
    that may differ per layer (AmbiguousGlobalPerLayerAttributeError, Gemma 4)."""
    try:
        return getattr(holder, name, None)
    except Exception:
        return None


def _sub(config, name):
    """`name` from the configuration or one of its sub-configurations (vision_config, ...)."""
    for holder in (config, getattr(config, "vision_config", None),
                   getattr(config, "encoder", None), getattr(config, "text_config", None)):
        value = _get(holder, name) if holder is not None else None
        if value is not None:
            return value
    return None


def _size(value, default):
    if isinstance(value, (list, tuple)):
        return int(value[0]) if value else default
    if isinstance(value, dict):
        return int(value.get("height") or value.get("shortest_edge") or default)
    return int(value) if value else default


# Token ids with a meaning of their own, which random text must not hold.
_ORDINARY_TOKENS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id",
                    "sep_token_id", "cls_token_id", "unk_token_id", "mask_token_id")


def _token_fields(config):
    """(configuration, field name, token id) of every token id the configuration and its
    sub-configurations name (`*_token_id`, `*_token_index`)."""
    for holder in _configs(config):
        for name, value in sorted(vars(holder).items()):
            if (name.endswith(("_token_id", "_token_index")) and isinstance(value, int)
                    and not isinstance(value, bool)):
                yield holder, name, value


def _placeholder_tokens(config):
    """The ids of the placeholder tokens a model splices its towers' embeddings in at (image,
    audio, video tokens, and their begin and end markers), in the configuration and its parts."""
    return {value for _, name, value in _token_fields(config) if name not in _ORDINARY_TOKENS}


def _token_ids(config, batch_size, length, avoid=()):
    vocab = _sub(config, "vocab_size") or 1000
    ids = torch.randint(0, max(2, min(int(vocab), 32000)), (batch_size, length))
    for token in avoid:  # a random placeholder would ask for an image or audio not given
        ids[ids == token] = 0 if token != 0 else 1
    return ids


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
    return {"input_ids": _token_ids(text, batch_size, length, _placeholder_tokens(config)),
            "attention_mask": torch.ones(batch_size, length, dtype=torch.long)}


def transformers_inputs(model, batch_size, max_seq_length):
    """The keyword arguments of one forward of `model` (a transformers PreTrainedModel)."""
    config = model.config
    main = getattr(model, "main_input_name", "input_ids")
    if main in ("input_ids", "pixel_values") and _dual_encoder(model):
        inputs = _text_inputs(config, batch_size, max_seq_length)
        inputs["pixel_values"] = _pixel_values(config.vision_config, batch_size)
        return inputs
    if main == "input_ids" and _audio_tower(model):
        audio = _audio_inputs(model, batch_size, max_seq_length)
        if audio is not None:
            return _with_audio(model, audio, batch_size)
    if main == "input_ids":
        length = _sequence_length(config, max_seq_length)
        avoid = _placeholder_tokens(config)
        inputs = {"input_ids": _token_ids(config, batch_size, length, avoid),
                  "attention_mask": torch.ones(batch_size, length, dtype=torch.long)}
        if getattr(config, "is_encoder_decoder", False):
            inputs["decoder_input_ids"] = _token_ids(config, batch_size, length, avoid)
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


# Audio towers: the names their forwards give the features, a mask over the features' frames, and
# the sizes of a frame in their configurations.
_AUDIO_INPUTS = ("input_features", "input_values")
_AUDIO_MASKS = ("input_features_mask", "feature_attention_mask", "input_features_attention_mask",
                "padding_mask", "audio_attention_mask")
_MEL_SIZES = ("num_mel_bins", "n_mels", "feature_size", "input_feat_per_channel", "input_dim",
              "num_mel_filters", "input_feature_size")


def _audio_tower(model):
    """A model with an audio tower beside its text (an `audio_config`) whose forward takes both
    token ids and audio: speech LLMs (Qwen2-Audio, Voxtral: audio embeddings spliced in at audio
    tokens) and text-audio dual encoders (CLAP)."""
    return (getattr(model.config, "audio_config", None) is not None
            and any(_accepts(model, name) for name in _AUDIO_INPUTS))


def _audio_token(config):
    for holder in (config, getattr(config, "audio_config", None)):
        for name in ("audio_token_id", "audio_token_index"):
            value = _get(holder, name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def _audio_layouts(model, batch_size):
    """Candidate audio inputs, most likely first: Whisper-like log-mel features (mel bins by
    frames, 2 frames per encoder position, which those encoders require), the same frames first,
    or raw samples; each with a mask over its frames where the forward takes one (bool, then
    integer)."""
    audio = model.config.audio_config
    name = next(n for n in _AUDIO_INPUTS if _accepts(model, n))
    masks = [m for m in _AUDIO_MASKS if _accepts(model, m)]
    if name == "input_values":
        candidates = [(torch.randn(batch_size, 16000), 16000)]
    else:
        mel = next((int(_get(audio, m)) for m in _MEL_SIZES if isinstance(_get(audio, m), int)),
                   128)
        positions = _get(audio, "max_source_positions")
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


def _on_fake_tensors(function, kwargs):
    """function(**kwargs) on fake tensors: shapes only, no compute, and not an execution for
    turnkey's discovery. Raises what the function raises."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    accepted = inspect.signature(function).parameters
    if not any(p.kind == p.VAR_KEYWORD for p in accepted.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in accepted}
    log = logging.getLogger("torch._subclasses.fake_tensor")  # logs each failed try as an error
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        with FakeTensorMode(allow_non_fake_inputs=True):
            return function(**kwargs)
    finally:
        log.setLevel(level)


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


def _audio_inputs(model, batch_size, max_seq_length):
    """(audio inputs, audio tokens per sample, text length): the first candidate audio input the
    model takes, the number of audio embeddings its audio tower makes per sample where audio
    tokens stand for them (else None), and the text's length; None when no candidate fits.
    Tried on fake tensors: the audio tower where there are audio tokens to count, else the
    whole forward with text beside the audio."""
    encoder = _audio_encoder(model)
    token = _audio_token(model.config)
    # The tries run where the weights are (a model on the meta device: bench/transformers_dry_run).
    device = next(model.parameters(), torch.empty(0)).device

    def on_weights(values):
        return {k: v.to(device) for k, v in values.items()}

    for inputs in _audio_layouts(model, batch_size):
        count = None
        try:
            if encoder is not None:
                count = _embeddings_count(_on_fake_tensors(encoder, on_weights(inputs)))
                count = count // batch_size if count and count % batch_size == 0 else None
        except Exception:  # not this layout
            pass
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
                    text = _text_inputs(model.config, batch_size, length)
                    _on_fake_tensors(model.forward, on_weights(dict(text, **inputs)))
                    return inputs, None, length
            except Exception:  # not this layout or length
                continue
    return None


def _with_audio(model, audio, batch_size):
    """Token ids with one audio token per audio embedding (first, then text), and the audio."""
    inputs, per_sample, text_length = audio
    config = model.config
    text = getattr(config, "text_config", None) or config
    length = _sequence_length(text, text_length)
    ids = _token_ids(text, batch_size, length, _placeholder_tokens(config))
    token = _audio_token(config)
    if per_sample:
        ids = torch.cat([torch.full((batch_size, per_sample), token, dtype=ids.dtype), ids], 1)
    result = {"input_ids": ids,
              "attention_mask": torch.ones(batch_size, ids.shape[1], dtype=torch.long)}
    result.update(inputs)
    return result


# Budget of a models/transformers script's model. Its weights are held twice while turnkey
# benchmarks (the script's process keeps its model for the export; ONNX Runtime loads its own
# copy), plus the exporter's graph. Measured under an 8 GB --memory-limit: RemBERT's question
# answering (0.57 B parameters) is benchmarked; timm's eva_giant_patch14_560 (1.0 B) ends
# out_of_memory while ONNX Runtime loads it.
MAX_PARAMETERS = 600_000_000

# How far over MAX_PARAMETERS a model may stay to keep one layer of each kind (1.5 x 0.6 B = 0.9 B;
# axk1_causal_lm at 0.96 B was benchmarked under 8 GB, timm's 1.0 B eva_giant was not).
_OVER_BUDGET_TO_KEEP_KINDS = 1.5

# How many layers a configuration has, under the names transformers' configurations use.
_LAYER_COUNTS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
                 "decoder_layers", "num_decoder_layers")
# Per-layer lists that must keep one entry per layer.
_LAYER_LISTS = ("layer_types", "mlp_layer_types", "layers_block_type", "no_rope_layers",
                "layer_rope_theta")
# Routed experts of a mixture-of-experts layer, and how many each token takes.
_EXPERTS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
_EXPERTS_PER_TOKEN = ("num_experts_per_tok", "moe_topk", "top_k", "num_experts_per_token")


def _configs(config, depth=0):
    """The configuration and its sub-configurations (text_config, vision_config, encoder, ...)."""
    from transformers import PretrainedConfig  # only the transformers scripts come here

    yield config
    if depth < 3:
        for value in list(vars(config).values()):
            if isinstance(value, PretrainedConfig) and value is not config:
                yield from _configs(value, depth + 1)


def _parameters(cls, config):
    """Parameters of cls(config), built on the meta device (no memory); None if it fails."""
    try:
        with torch.device("meta"):
            return sum(p.numel() for p in cls(config).parameters())
    except Exception:  # the real build raises it again, in the script's own words
        return None


def _layers_kept(holder, layers):
    """The layers to keep, as indices into the per-layer lists: the first layer of each kind (a
    hybrid model whose attention layers are every fourth keeps a linear-attention and a full-
    attention layer, not four), then the first others up to `layers`."""
    for name in _LAYER_LISTS:
        values = _get(holder, name)
        if isinstance(values, (list, tuple)) and len(set(map(repr, values))) > 1:
            first = {}
            for i, value in enumerate(values):
                first.setdefault(repr(value), i)
            kept = set(first.values())
            kept.update(i for i in range(len(values)) if len(kept) < layers)
            return sorted(kept)
    indices = _get(holder, "attn_layer_indices")  # Bamba: where the attention layers are
    if isinstance(indices, (list, tuple)) and indices:
        return list(range(max(layers, 2)))
    return list(range(layers))


def _keep_layers(holder, kept, changed):
    """Cuts the layer counts of holder to len(kept) and its per-layer lists to the kept layers."""
    n = len(kept)
    cut = False
    for name in _LAYER_COUNTS:
        cut = _cap(holder, name, n, changed) or cut
    if not cut:
        return
    for list_name in _LAYER_LISTS:
        values = _get(holder, list_name)
        if isinstance(values, (list, tuple)) and len(values) > n:
            setattr(holder, list_name, type(values)(values[i] for i in kept if i < len(values)))
    indices = _get(holder, "attn_layer_indices")
    if isinstance(indices, (list, tuple)) and indices and all(i >= n for i in indices):
        setattr(holder, "attn_layer_indices", [n - 1])  # the last kept layer attends


def _cap(holder, name, limit, changed):
    """Sets the integer `name` of holder to `limit` where it is larger; says so in `changed`."""
    value = _get(holder, name)
    if not isinstance(value, int) or isinstance(value, bool) or value <= limit:
        return False
    setattr(holder, name, limit)
    changed.append("%s %d -> %d" % (name, value, limit))
    return True


def _shrink(config, layers, experts, vocab, keep_kinds):
    """Cut every layer count of config (and its sub-configurations) to `layers` (with keep_kinds,
    to the first layer of each kind and others up to `layers`), the routed experts to `experts`
    and the vocabulary to `vocab` (the token ids of transformers_inputs are below 32000 anyway);
    returns what changed."""
    changed = []
    for holder in _configs(config):
        if _cap(holder, "vocab_size", vocab, changed):
            for name in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
                _cap(holder, name, vocab - 1, [])
            _renumber_special_tokens(config, vocab)
        _keep_layers(holder, _layers_kept(holder, layers) if keep_kinds else
                     list(range(layers)), changed)
        for name in _EXPERTS:
            if _cap(holder, name, experts, changed):
                for per_token in _EXPERTS_PER_TOKEN:
                    _cap(holder, per_token, experts, [])
    return changed


def _renumber_special_tokens(config, vocab):
    """Gives the placeholder tokens past a cut vocabulary (audio, image, video tokens: a model
    splices its towers' embeddings in where they stand) distinct ids at its end, in every
    configuration that names them."""
    renumbered = {}  # old id -> new id: a token named in two configurations stays one token
    for holder, name, value in list(_token_fields(config)):
        if value >= vocab:  # vocab - 1 is where pad, bos and eos went
            setattr(holder, name, renumbered.setdefault(value, vocab - 2 - len(renumbered)))


# The steps fitted() takes until the model fits: (layers, routed experts, vocabulary, keep one
# layer of each kind). Each step is tried on a fresh copy of the caller's configuration.
_STEPS = ((2, None, None, True), (2, 8, None, True), (1, 4, None, True), (1, 4, 32000, True),
          (1, 4, 32000, False), (1, 2, 32000, False))


def fitted(config, cls, max_parameters=MAX_PARAMETERS):
    """`config`, or where cls(config) has more than max_parameters, a copy made smaller by the
    steps of _STEPS until it fits (or the smallest that builds): the same architecture, widths
    and heads as given, at a size this machine can export and benchmark. Prints what it
    changed. The configuration is used as is where the model cannot be counted."""
    before = _parameters(cls, config)
    if before is None or before <= max_parameters:
        return config
    best = None  # (parameters, configuration, what changed)
    best_whole = None  # the same, among the steps that keep one layer of each kind
    for layers, experts, vocab, keep_kinds in _STEPS:
        smaller = copy.deepcopy(config)
        changed = _shrink(smaller, layers, experts or 1 << 62, vocab or 1 << 62, keep_kinds)
        after = _parameters(cls, smaller) if changed else None
        if after is not None and (best is None or after < best[0]):
            best = (after, smaller, changed)
        if after is not None and keep_kinds and (best_whole is None or after < best_whole[0]):
            best_whole = (after, smaller, changed)
        if best is not None and best[0] <= max_parameters:
            break
    # A hybrid model cut to one layer of one kind is another model (a Jamba or Qwen3.5 of linear
    # attention only fails in its forward): keeping every kind is worth going over the budget,
    # up to what still fits in memory.
    if (best_whole is not None and best[0] < best_whole[0]
            and best_whole[0] <= max_parameters * _OVER_BUDGET_TO_KEEP_KINDS):
        best = best_whole
    if best is None:
        print("corpus_inputs: %s's configuration has %.2f B parameters and could not be made "
              "smaller; built as given" % (cls.__name__, before / 1e9))
        return config
    after, smaller, changed = best
    print("corpus_inputs: %s's configuration has %.2f B parameters, over %.2f B: built with %s "
          "(%.3f B parameters%s)" % (cls.__name__, before / 1e9, max_parameters / 1e9,
                                     ", ".join(changed), after / 1e9,
                                     "" if after <= max_parameters else ", still over"))
    return smaller
