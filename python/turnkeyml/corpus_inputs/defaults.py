"""Configurations whose class defaults leave out a value their model cannot be built without:
the published checkpoints always give it, the class's defaults do not (transformers raises, or
builds an embedding of `None` rows). The corpus builds from defaults, so it gives the value."""

import copy

from .config import configs, get


# The forecast horizon a time series configuration leaves unset (Time Series Transformer,
# Informer, Autoformer: "The `prediction_length` config needs to be specified"); 24 steps, the
# value the classes' own documentation uses, and the context as long (what their __post_init__
# makes of an unset context_length once prediction_length is given).
_PREDICTION_LENGTH = 24


# A vocabulary the defaults leave unset, with its tokenizer's padding and mask ids (ESM:
# `vocab_size=None`, and its forward finds padding by `input_ids.ne(pad_token_id)`); the values
# of ESM-2's published tokenizer: 33 tokens, padding 1, mask 32.
_TOKENIZER = (("vocab_size", 33), ("pad_token_id", 1), ("mask_token_id", 32))


# Mixture-of-experts sizes the class defaults leave None and the published checkpoints give
# (their config.json): dots.llm1 (rednote-hilab/dots.llm1.base: 128 routed experts, 6 a token, 2
# shared; "empty() takes 1 positional argument but 3 were given"), DeepSeek-V2 and V2-Lite (6 a
# token; "topk(): argument 'k' must be int, not NoneType").
_PUBLISHED_EXPERTS = {
    "dots1": (("n_routed_experts", 128), ("num_experts_per_tok", 6), ("n_shared_experts", 2)),
    "deepseek_v2": (("num_experts_per_tok", 6),),
    "deepseek_ocr2_text": (("num_experts_per_tok", 6),),  # deepseek-community/DeepSeek-OCR-2
}


# Values the class defaults do set, to what no published checkpoint of theirs has and this
# machine cannot run, (field, the defaults' value, the published one): DeepSeek-OCR 2's experts
# 1407 wide (DeepSeek-V2-Lite's), rows torch's CPU grouped_mm refuses ("strides should be
# multiple of 16 bytes"); its config.json has 896.
_PUBLISHED_OVER_DEFAULTS = {"deepseek_ocr2_text": (("moe_intermediate_size", 1407, 896),)}


# Per-layer MLP kinds the class defaults leave None and their model reads per layer ("'NoneType'
# object is not subscriptable", which also kept fitted from counting the model: it was built
# whole, 8 GB and more); DeepSeek-OCR 2's published text model: its first layer dense, the others
# sparse.
_PUBLISHED_MLP_KINDS = {"deepseek_ocr2_text": ("dense", "sparse")}


# Multimodal rotary sections the class defaults leave out and the published checkpoints give
# (HunYuanVL's text model reads them in its rotary embedding: "object of type 'NoneType' has no
# len()"): tencent/HunyuanOCR's config.json, xdrope_section [16, 16, 16, 16] of a 128-wide head,
# the width of the defaults' heads too (4096 / 32).
_PUBLISHED_ROTARY_SECTIONS = {"hunyuan_vl_text": [16, 16, 16, 16]}


# Model types whose forward builds a sliding-window mask whether or not a layer slides, while
# their defaults leave the window unset and no layer sliding (Step 3.7's text model: "Could not
# find a `sliding_window` argument in the config"). No layer reads that mask, so the window does
# not change the model: the whole context (max_position_embeddings), what an unset window means.
_MASK_BUILT_UNREAD = ("step3p5",)


def _missing(holder):
    """(field, value) of each value `holder` leaves unset that its model needs."""
    layers = get(holder, "num_hidden_layers")
    if "prediction_length" in vars(holder) and get(holder, "prediction_length") is None:
        yield "prediction_length", _PREDICTION_LENGTH
        if get(holder, "context_length") is None:
            yield "context_length", _PREDICTION_LENGTH
    # Attention sizes left None (Ministral, HunYuan: `head_dim`; Nemotron: `num_key_value_heads`)
    # that their attention divides by: the values every other configuration derives, a head the
    # width over the heads, and as many key-value heads as heads.
    width, heads = get(holder, "hidden_size"), get(holder, "num_attention_heads")
    if isinstance(width, int) and isinstance(heads, int) and heads > 0:
        for name, value in (("head_dim", width // heads), ("num_key_value_heads", heads)):
            if name in vars(holder) and vars(holder)[name] is None:
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
    sections, rope = _PUBLISHED_ROTARY_SECTIONS.get(get(holder, "model_type")), get(
        holder, "rope_parameters")
    if sections and isinstance(rope, dict) and rope.get("mrope_section") is None:
        yield "rope_parameters", dict(rope, mrope_section=sections)
    kinds = get(holder, "layer_types") or ()
    if (get(holder, "model_type") in _MASK_BUILT_UNREAD and "sliding_window" in vars(holder)
            and get(holder, "sliding_window") is None
            and "sliding_attention" not in kinds):
        yield "sliding_window", get(holder, "max_position_embeddings")
    # EdgeTAM's defaults name their timm backbone under a misspelt key ("archirecture":
    # "repvit_m1", transformers 5.23): timm builds its default ResNet-50 instead, whose features
    # (256 to 2048 channels) the neck made for RepViT's (48 to 384) refuses ("expected input[1,
    # 1024, 14, 14] to have 384 channels"). The architecture they name is given.
    misspelt = vars(holder).get("archirecture")
    if isinstance(misspelt, str) and get(holder, "architecture") != misspelt:
        yield "architecture", misspelt
    yield from _pp_ocr_detector(holder)
    first, rest = _PUBLISHED_MLP_KINDS.get(get(holder, "model_type"), (None, None))
    if first and "mlp_layer_types" in vars(holder) and vars(holder)["mlp_layer_types"] is None \
            and isinstance(layers, int):
        yield "mlp_layer_types", [first] + [rest] * (layers - 1)
    # Emu3 maps its image tokens to its vocabulary through a map its defaults leave None, which
    # it reads when built ("'NoneType' object has no attribute 'get'"; fitted could not count
    # the model either, built whole: out of memory). The published map is its tokenizer's; the
    # corpus's text holds no image token, so an empty map builds the same text model.
    if "vocabulary_map" in vars(holder) and vars(holder)["vocabulary_map"] is None \
            and get(holder, "model_type") == "emu3":
        yield "vocabulary_map", {}
    for name, value in _PUBLISHED_EXPERTS.get(get(holder, "model_type"), ()):
        if name in vars(holder) and vars(holder)[name] is None:
            yield name, value
    for name, default, value in _PUBLISHED_OVER_DEFAULTS.get(get(holder, "model_type"), ()):
        if vars(holder).get(name) == default:
            yield name, value
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


# PP-OCRv6's text detectors as released (their config.json, which PaddleX's configuration
# classes mirror): PP-LCNetV4 backbones of their own (stem, stage widths), all four stages out.
# The class defaults build PP-LCNetV4's recognition backbone instead (strides [2, 1], 96 to 384
# channels) and leave the medium's neck unset ("'NoneType' object is not subscriptable") or give
# the small's neck placeholder channels ("expected input[1, 384, 14, 56] to have 12 channels").
_PP_OCR_DETECTORS = {"pp_ocrv6_small_det": ((3, 24, 48), (48, 96, 192, 384)),
                     "pp_ocrv6_medium_det": ((3, 64, 128), (128, 256, 512, 896))}


def _lcnet_blocks(widths):
    """PP-LCNetV4's detection stages: (kernel, in, out, stride, squeeze-excitation) per block; each
    stage after the first halves the resolution in its first block, squeeze-excitation in every
    other block after it (2, 3, 5 and 3 blocks)."""
    blocks = [[[3, widths[0], widths[0], 1, True], [3, widths[0], widths[0], 1, False]]]
    for before, width, pairs in zip(widths, widths[1:], (1, 2, 1)):
        blocks.append([[3, before, width, 2, False]]
                      + [[3, width, width, 1, i % 2 == 0] for i in range(2 * pairs)])
    return blocks


def _intraclass_blocks():
    """The medium detector's intra-class blocks: 1x1 convolutions in and out, and vertical,
    horizontal and square convolutions of 7, 5 and 3 (long, mid, short), each padded to keep
    the size: (kernel, stride, padding)."""
    config = {"reduce_channel": [1, 1, 0], "return_channel": [1, 1, 0]}
    for ratio, k in (("longratio", 7), ("midratio", 5), ("shortratio", 3)):
        config["vertical_long_to_small_conv_" + ratio] = [[k, 1], [1, 1], [k // 2, 0]]
        config["horizontal_small_to_long_conv_" + ratio] = [[1, k], [1, 1], [0, k // 2]]
        config["symmetric_conv_long_" + ratio] = [[k, k], [1, 1], [k // 2, k // 2]]
    return config


def _pp_ocr_detector(holder):
    """(field, value) of a PP-OCRv6 detector whose backbone is not its released one."""
    released = _PP_OCR_DETECTORS.get(get(holder, "model_type"))
    backbone = get(holder, "backbone_config")
    if released is None or backbone is None:
        return
    stem, widths = released
    if list(get(backbone, "stage_out_channels") or ()) == list(widths):
        return
    yield "backbone_config", type(backbone)(
        stem_channels=list(stem), stem_type="large", block_configs=_lcnet_blocks(widths),
        out_features=["stage%d" % i for i in range(1, len(widths) + 1)])
    if "layer_list_out_channels" in vars(holder):
        yield "layer_list_out_channels", list(widths)
    for name, value in (("intraclass_block_config", _intraclass_blocks()),
                        ("scale_factor_list", [1, 2, 4, 8]), ("kernel_list", [3, 2, 2])):
        if name in vars(holder) and vars(holder)[name] is None:
            yield name, value


def _query_image_token(config):
    """(holder, field, id) where a Q-Former model (BLIP-2, InstructBLIP: `num_query_tokens`)
    leaves the token its queries' embeddings are spliced in at unset: its forward compares the
    text to None ("'bool' object has no attribute 'unsqueeze'"). The published checkpoints add
    the token at the end of the tokenizer (blip2-opt-2.7b: 50265 of 50272); here the text
    vocabulary's last id."""
    text = get(config, "text_config")
    vocab = get(text, "vocab_size") if text is not None else None
    if not isinstance(get(config, "num_query_tokens"), int) or not isinstance(vocab, int):
        return None
    for name in ("image_token_index", "image_token_id"):
        if name in vars(config) and vars(config)[name] is None:
            return config, name, vocab - 1
    return None


def completed(config):
    """`config`, or a copy with the values its model needs and its defaults leave unset (see
    _missing); prints what it gave."""
    if (not any(True for holder in configs(config) for _ in _missing(holder))
            and _query_image_token(config) is None):
        return config
    from transformers import PretrainedConfig  # only the transformers scripts come here

    config = copy.deepcopy(config)
    given = []
    token = _query_image_token(config)
    if token is not None:
        setattr(*token)
        given.append("%s=%r" % token[1:])
    for holder in configs(config):
        for name, value in list(_missing(holder)):
            setattr(holder, name, value)
            given.append("%s=%s" % (name, type(value).__name__ + "(...)" if isinstance(
                value, PretrainedConfig) else repr(value)))
    print("corpus_inputs: %s leaves unset what its model needs: given %s"
          % (type(config).__name__, ", ".join(given)))
    return config
