"""Configurations whose class defaults leave out a value their model cannot be built without:
the published checkpoints always give it, the class's defaults do not (transformers raises, or
builds an embedding of `None` rows). The corpus builds from defaults, so it gives the value."""

import copy

from .config import MEDIA_TOKENS, configs, get
from .image_tokens import image_token
from .published import published


# The forecast horizon a time series configuration leaves unset (Time Series Transformer,
# Informer, Autoformer: "The `prediction_length` config needs to be specified"); 24 steps, the
# value the classes' own documentation uses, and the context as long (what their __post_init__
# makes of an unset context_length once prediction_length is given).
_PREDICTION_LENGTH = 24


# A vocabulary the defaults leave unset, with its tokenizer's padding and mask ids (ESM:
# `vocab_size=None`, and its forward finds padding by `input_ids.ne(pad_token_id)`); the values
# of ESM-2's published tokenizer: 33 tokens, padding 1, mask 32.
_TOKENIZER = (("vocab_size", 33), ("pad_token_id", 1), ("mask_token_id", 32))


# Model types whose forward builds a sliding-window mask whether or not a layer slides, while
# their defaults leave the window unset and no layer sliding (Step 3.7's text model: "Could not
# find a `sliding_window` argument in the config"). No layer reads that mask, so the window does
# not change the model: the whole context (max_position_embeddings), what an unset window means.
_MASK_BUILT_UNREAD = ("step3p5",)


# Attention sizes a class's layers read that its configuration class lacks altogether
# (Moonshine Streaming's decoder, transformers 5.23: "'MoonshineStreamingConfig' object has no
# attribute 'num_key_value_heads'"; Moonshine's own configuration derives its decoder's from its
# heads, as the rule below does).
_READ_ABSENT = {"moonshine_streaming": ("num_key_value_heads",)}


def _missing(holder):
    """(field, value) of each value `holder` leaves unset that its model needs."""
    layers = get(holder, "num_hidden_layers")
    if "prediction_length" in vars(holder) and get(holder, "prediction_length") is None:
        yield "prediction_length", _PREDICTION_LENGTH
        if get(holder, "context_length") is None:
            yield "context_length", _PREDICTION_LENGTH
    # Attention sizes left None (Ministral, HunYuan: `head_dim`; Nemotron: `num_key_value_heads`),
    # or absent from a class whose layers read them (_READ_ABSENT), that their attention divides
    # by: the values every other configuration derives, a head the width over the heads, and as
    # many key-value heads as heads.
    width, heads = get(holder, "hidden_size"), get(holder, "num_attention_heads")
    if isinstance(width, int) and isinstance(heads, int) and heads > 0:
        absent = _READ_ABSENT.get(get(holder, "model_type"), ())
        for name, value in (("head_dim", width // heads), ("num_key_value_heads", heads)):
            if name in vars(holder):  # the stored value: get() is None on a per-layer one too
                unset = vars(holder)[name] is None
            else:
                unset = name in absent and get(holder, name) is None
            if unset:
                yield name, value
    if "vocab_size" in vars(holder) and get(holder, "vocab_size") is None:
        yield from ((name, value) for name, value in _TOKENIZER if get(holder, name) is None)
    # Hybrid classes whose defaults attend nowhere (Bamba: no attn_layer_indices; GraniteMoe-
    # Hybrid: every layer linear attention): transformers' own forward then fails ("get_seq_length
    # can only be called on Attention layers"); every published checkpoint of theirs attends in
    # some layers. The last layer attends here (fitted keeps it as a kind of its own).
    if "attn_layer_indices" in vars(holder) and get(holder, "attn_layer_indices") is None \
            and isinstance(layers, int):
        yield "attn_layer_indices", [layers - 1]
    kinds = vars(holder).get("layer_types")  # a stored list, not one derived (Bamba's)
    if isinstance(kinds, list) and kinds and set(kinds) == {"linear_attention"}:
        yield "layer_types", kinds[:-1] + ["full_attention"]
    kinds = get(holder, "layer_types") or ()
    if (get(holder, "model_type") in _MASK_BUILT_UNREAD and "sliding_window" in vars(holder)
            and get(holder, "sliding_window") is None
            and "sliding_attention" not in kinds):
        yield "sliding_window", get(holder, "max_position_embeddings")
    yield from published(holder)
    # TimmBackbone wraps the timm model its configuration names, and its defaults name none
    # ("backbone is not set in the config"); ResNet-50, what transformers' documentation of the
    # class builds and what DETR's and Table Transformer's timm backbones are.
    if get(holder, "model_type") == "timm_backbone" and get(holder, "backbone") is None:
        yield "backbone", "resnet50"
    # Emu3 and Chameleon map their image tokens to their vocabulary through a map their
    # defaults leave None, which they read when built ("'NoneType' object has no attribute
    # 'get'"; fitted could not count the model either, built whole: out of memory). The
    # published map is the tokenizer's; the corpus's text holds no image token, so an empty map
    # builds the same text model.
    if "vocabulary_map" in vars(holder) and vars(holder)["vocabulary_map"] is None \
            and get(holder, "model_type") in ("emu3", "chameleon"):
        yield "vocabulary_map", {}
    # Rotary parameters a model reads per layer kind (Cohere Compass: rope_parameters[kind])
    # left empty by the defaults ("KeyError: 'full_attention'"): transformers' default rotary
    # embedding for each kind, at the configuration's rope_theta or transformers' 10000.
    rope, kinds = vars(holder).get("rope_parameters"), vars(holder).get("layer_types")
    if rope == {} and isinstance(kinds, list) and kinds:
        theta = get(holder, "rope_theta") or 10000.0
        yield "rope_parameters", {kind: {"rope_type": "default", "rope_theta": theta}
                                  for kind in dict.fromkeys(kinds)}
    # X-MOD's adapters are per language, and its forward refuses to guess one ("Input language
    # unknown. Please call `XmodPreTrainedModel.set_default_language()`"): the published
    # checkpoints leave default_language unset too, their users set it; the first of the
    # configuration's languages here.
    languages = get(holder, "languages")
    if ("default_language" in vars(holder) and get(holder, "default_language") is None
            and isinstance(languages, (list, tuple)) and languages):
        yield "default_language", languages[0]
    # LFM2-MoE reads layer_types[i] for every layer but leaves it None; LFM2's own configuration
    # makes every layer full attention when none are named, which is the rule taken here.
    if ("layer_types" in vars(holder) and get(holder, "layer_types") is None
            and isinstance(layers, int) and "full_attn_idxs" not in vars(holder)
            and holder.model_type.startswith("lfm2")):
        yield "layer_types", ["full_attention"] * layers


def _query_image_token(config):
    """(holder, field, id) where a Q-Former model (BLIP-2, InstructBLIP, InstructBLIPVideo:
    `num_query_tokens`) leaves the token its queries' embeddings are spliced in at unset: its
    forward compares the text to None ("'bool' object has no attribute 'unsqueeze'"). The
    published checkpoints add the token at the end of the tokenizer (blip2-opt-2.7b: 50265 of
    50272); here the text vocabulary's last id."""
    text = get(config, "text_config")
    vocab = get(text, "vocab_size") if text is not None else None
    if not isinstance(get(config, "num_query_tokens"), int) or not isinstance(vocab, int):
        return None
    for name in MEDIA_TOKENS:
        if name in vars(config) and vars(config)[name] is None:
            return config, name, vocab - 1
    return None


def _vocabulary_holding_image_token(config):
    """(text holder, "vocab_size", size) where the text vocabulary ends at or before the token
    image features are spliced in at (LLaVA's defaults: token 32000 of 32000 rows, "index out of
    range in self" once the text holds it): the published checkpoints add the token after the
    tokenizer's and pad the embedding to a multiple of 64 (llava-1.5-7b-hf: 32,064 rows)."""
    token, text = image_token(config), get(config, "text_config")
    vocab = get(text, "vocab_size") if text is not None else None
    if token is None or not isinstance(vocab, int) or token < vocab:
        return None
    return text, "vocab_size", (token // 64 + 1) * 64


def completed(config):
    """`config`, or a copy with the values its model needs and its defaults leave unset (see
    _missing); prints what it gave."""
    if (not any(True for holder in configs(config) for _ in _missing(holder))
            and _query_image_token(config) is None
            and _vocabulary_holding_image_token(config) is None):
        return config
    from transformers import PretrainedConfig  # only the transformers scripts come here

    config = copy.deepcopy(config)
    given = []
    for fix in (_query_image_token(config), _vocabulary_holding_image_token(config)):
        if fix is not None:
            setattr(*fix)
            given.append("%s=%r" % fix[1:])
    for holder in configs(config):
        for name, value in list(_missing(holder)):
            setattr(holder, name, value)
            given.append("%s=%s" % (name, type(value).__name__ + "(...)" if isinstance(
                value, PretrainedConfig) else repr(value)))
    print("corpus_inputs: %s leaves unset what its model needs: given %s"
          % (type(config).__name__, ", ".join(given)))
    return config
