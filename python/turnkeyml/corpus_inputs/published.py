"""Values a configuration's class defaults leave out (or set to what no checkpoint has) that
its model needs, as the published checkpoints of the model give them (their config.json): the
corpus builds from the defaults, which would otherwise not build or not run. Part of
defaults.completed."""

import copy

from .config import get


# Mixture-of-experts sizes the class defaults leave None and the published checkpoints give
# (their config.json): dots.llm1 (rednote-hilab/dots.llm1.base: 128 routed experts, 6 a token, 2
# shared; "empty() takes 1 positional argument but 3 were given"), DeepSeek-V2 and V2-Lite (6 a
# token; "topk(): argument 'k' must be int, not NoneType").
_PUBLISHED_EXPERTS = {
    "dots1": (("n_routed_experts", 128), ("num_experts_per_tok", 6), ("n_shared_experts", 2)),
    "deepseek_v2": (("num_experts_per_tok", 6),),
    "deepseek_ocr2_text": (("num_experts_per_tok", 6),),  # deepseek-community/DeepSeek-OCR-2
    # google/diffusiongemma-26B-A4B-it, whose router the defaults build of None experts ("empty():
    # argument 'size' ... found element of type NoneType"): 128 experts 704 wide, 8 a token.
    "diffusion_gemma_text": (("num_experts", 128), ("top_k_experts", 8),
                             ("moe_intermediate_size", 704)),
}


# Fields the class defaults lack altogether (not even None) and their model reads, as the
# published checkpoints' config.json give them: Qwen2.5-Omni's and Qwen3-Omni's thinkers read
# `vision_start_token_id` in their rotary index ("'Qwen2_5OmniThinkerConfig' object has no
# attribute 'vision_start_token_id'"); the thinker_config of Qwen/Qwen2.5-Omni-7B and of
# Qwen/Qwen3-Omni-30B-A3B-Instruct give 151652, the Qwen2 tokenizer's <|vision_start|> (the
# talkers' defaults have it too).
_PUBLISHED_MISSING = {"qwen2_5_omni_thinker": (("vision_start_token_id", 151652),),
                      "qwen3_omni_moe_thinker": (("vision_start_token_id", 151652),)}


# The same by configuration class, for parts whose model type is empty. DBRX's attention reads
# `attn_config.rope_theta`, which DbrxAttentionConfig lacks since transformers moved the rotary
# base to the whole configuration's rope_parameters ("'DbrxAttentionConfig' object has no
# attribute 'rope_theta'"; the attention keeps it, the rotary embedding reads rope_parameters,
# so it changes no output), and clamps its projections to `clip_qkv`, which the defaults leave
# None ("torch.clamp: At least one of 'min' or 'max' must not be None").
# databricks/dbrx-base's config.json: rope_theta 500000, clip_qkv 8.
_PUBLISHED_MISSING_BY_CLASS = {"DbrxAttentionConfig": (("rope_theta", 500000), ("clip_qkv", 8))}


# Values the class defaults do set, to what no published checkpoint of theirs has and this
# machine cannot run, (field, the defaults' value, the published one): experts 1407 wide
# (DeepSeek-V2's and DeepSeek-OCR 2's defaults; DeepSeek-V2-Lite's are 1408), rows torch's CPU
# grouped_mm refuses ("strides should be multiple of 16 bytes"); DeepSeek-V2-Lite's and
# DeepSeek-OCR 2's config.json have 1408 and 896.
_PUBLISHED_OVER_DEFAULTS = {"deepseek_v2": (("moe_intermediate_size", 1407, 1408),),
                            "deepseek_ocr2_text": (("moe_intermediate_size", 1407, 896),)}


def _lw_detr_scales(holder):
    """LW-DETR's defaults give its projector no scale (`projector_scale_factors=()`: no feature
    map, "torch.cat(): expected a non-empty list of Tensors"); AnnaZhang/lwdetr_small_60e_coco,
    the checkpoint its configuration class names, has one at 1.0 (transformers'
    convert_lw_detr_to_hf.py: tiny, small and medium), with the two fields the class derives
    from the scales when it is made (one level of d_model channels)."""
    if get(holder, "model_type") != "lw_detr" or tuple(vars(holder).get(
            "projector_scale_factors", (None,))) != ():
        return
    yield "projector_scale_factors", [1.0]
    yield "projector_in_channels", [get(holder, "d_model")]
    yield "num_feature_levels", 1


# timm vision towers the class defaults leave without the arguments their model reads
# (PerceptionLM's projector reads `vision_config.model_args["embed_dim"]`: "'NoneType' object is
# not subscriptable"; the defaults name timm's resnet50), as the published checkpoints give them:
# facebook/Perception-LM-1B's and -3B's Perception Encoder, vit_pe_core_large_patch14_336 at 448
# (transformers' convert_perception_lm_weights_to_hf.py: width 1024, 23 layers, 32 patches a
# side, no norm after the blocks, layer scale 0.1, no pooling).
_PUBLISHED_TIMM_TOWERS = {
    "perception_lm": ("vit_pe_core_large_patch14_336", {
        "embed_dim": 1024, "depth": 23, "img_size": (448, 448), "global_pool": "",
        "use_post_transformer_norm": False, "init_values": 0.1, "ref_feat_shape": (32, 32)}),
}


def _uvdoc_bridges(holder):
    """UVDoc's head reads every bridge stage of its backbone (its connector is one 128-channel
    map per stage wide: "weight of size [128, 768, 1, 1], expected input[1, 128, 14, 14] to have
    768 channels"), while the backbone's defaults put out only the last, as any backbone's do:
    every stage out, which a checkpoint whose head builds has."""
    stages = get(holder, "stage_names")
    if (get(holder, "model_type") != "uvdoc_backbone" or not isinstance(stages, list)
            or list(get(holder, "out_features") or ()) != stages[-1:]):
        return
    yield "out_features", stages[1:]


def _timm_tower(holder):
    """(field, value) of a vision tower given its published timm architecture and arguments."""
    published_tower = _PUBLISHED_TIMM_TOWERS.get(get(holder, "model_type"))
    tower = get(holder, "vision_config")
    if published_tower is None or tower is None or get(tower, "model_args") is not None:
        return
    tower = copy.deepcopy(tower)
    tower.architecture, tower.model_args = published_tower[0], dict(published_tower[1])
    yield "vision_config", tower


# Head counts (and head widths, where the published checkpoint sets them) of published models, by
# (model type, width), for class defaults whose heads do not divide their width: Aya Vision's
# SigLIP defaults, 1152 wide in 14 heads ("embed_dim must be divisible by num_heads"), get SigLIP
# So400m's 16 (google/siglip-so400m-patch14-384's config.json, the tower
# CohereLabs/aya-vision-8b's config.json gives); Qwen3-Omni's thinker text defaults, 2048 wide in
# 28 heads (rotary over 73-wide heads: "The size of tensor a (73) must match the size of tensor b
# (74)"), get Qwen/Qwen3-Omni-30B-A3B-Instruct's 32 heads of 128.
_PUBLISHED_HEADS = {("siglip_vision_model", 1152): (16, None),
                    ("qwen3_omni_moe_text", 2048): (32, 128)}


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


def published(holder):
    """(field, value) of each value `holder` takes from its model's published checkpoints."""
    layers = get(holder, "num_hidden_layers")
    sections, rope = _PUBLISHED_ROTARY_SECTIONS.get(get(holder, "model_type")), get(
        holder, "rope_parameters")
    if sections and isinstance(rope, dict) and rope.get("mrope_section") is None:
        yield "rope_parameters", dict(rope, mrope_section=sections)
    # EdgeTAM's defaults name their timm backbone under a misspelt key ("archirecture":
    # "repvit_m1", transformers 5.23): timm builds its default ResNet-50 instead, whose features
    # (256 to 2048 channels) the neck made for RepViT's (48 to 384) refuses ("expected input[1,
    # 1024, 14, 14] to have 384 channels"). The architecture they name is given.
    misspelt = vars(holder).get("archirecture")
    if isinstance(misspelt, str) and get(holder, "architecture") != misspelt:
        yield "architecture", misspelt
    yield from _pp_ocr_detector(holder)
    yield from _timm_tower(holder)
    yield from _lw_detr_scales(holder)
    first, rest = _PUBLISHED_MLP_KINDS.get(get(holder, "model_type"), (None, None))
    if first and "mlp_layer_types" in vars(holder) and vars(holder)["mlp_layer_types"] is None \
            and isinstance(layers, int):
        yield "mlp_layer_types", [first] + [rest] * (layers - 1)
    width, heads = get(holder, "hidden_size"), get(holder, "num_attention_heads")
    if isinstance(width, int) and isinstance(heads, int) and heads > 0 and width % heads:
        published_heads, head_width = _PUBLISHED_HEADS.get((get(holder, "model_type"), width),
                                                           (None, None))
        if published_heads:
            yield "num_attention_heads", published_heads
        if head_width and get(holder, "head_dim") is None:
            yield "head_dim", head_width
    for name, value in _PUBLISHED_EXPERTS.get(get(holder, "model_type"), ()):
        if name in vars(holder) and vars(holder)[name] is None:
            yield name, value
    for name, value in _PUBLISHED_MISSING.get(get(holder, "model_type"), ()) + \
            _PUBLISHED_MISSING_BY_CLASS.get(type(holder).__name__, ()):
        if get(holder, name) is None:
            yield name, value
    yield from _uvdoc_bridges(holder)
    for name, default, value in _PUBLISHED_OVER_DEFAULTS.get(get(holder, "model_type"), ()):
        if vars(holder).get(name) == default:
            yield name, value
