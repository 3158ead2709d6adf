"""Forward arguments beyond the main input: a forward that has no default for them fails without
them ("missing 1 required positional argument: 'grid_thw'"), or raises in its body (BROS: "You
have to specify bbox"). Each is made by its name, with the configuration's sizes."""

import inspect

import torch

from .actions import with_actions
from .config import MEDIA_TOKENS, accepts, first_run, first_taken, get, sub
from .text import sequence_length, text_inputs, token_ids


def required(model):
    """The names of the forward's parameters without a default."""
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.default is inspect.Parameter.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _first_int(config, names, default):
    for name in names:
        value = sub(config, name)
        if isinstance(value, (list, tuple)) and value:
            value = value[0]
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return default


# Patches per side of a grid image: a multiple of every merge size in use (2, 4), and within the
# position tables of the towers in the corpus (32 x 32 and more).
_GRID_SIDE = 16


def _grid_layouts(model, batch_size, patches_name):
    """Candidate inputs of a tower that takes an image as a grid of patches (Qwen2-VL's and its
    kind's vision towers: `grid_thw` rows of (frames, height, width) in patches, the patches
    flattened one per row): flattened patches with a temporal patch, without one, whole images,
    each with the grid; last, Inkling 2's, whose grid counts merged patches (its language
    model's image tokens) and whose rows are merged patches of pixels, channels last."""
    config = model.config
    patch = _first_int(config, ("patch_size",), 14)
    channels = _first_int(config, ("in_channels", "num_channels", "in_chans"), 3)
    temporal = _first_int(config, ("temporal_patch_size", "patch_temporal"), 1)
    merge = _first_int(config, ("spatial_merge_size", "merge_size", "merge_kernel_size"), 1)
    side = _GRID_SIDE
    grid = torch.tensor([[1, side, side]] * batch_size)
    rows = batch_size * side * side
    candidates = [(torch.randn(rows, channels * t * patch * patch), grid) for t in (temporal, 1)]
    candidates += [(torch.randn(rows, channels, patch, patch), grid),
                   (torch.randn(batch_size, channels, side * patch, side * patch), grid)]
    merged = side // merge
    candidates.append((torch.randn(batch_size * merged * merged, patch * merge, patch * merge,
                                   channels), torch.tensor([[1, merged, merged]] * batch_size)))
    for patches, thw in candidates[:1] + candidates[2 if temporal == 1 else 1:]:
        inputs = {patches_name: patches}
        for name in ("grid_thw", "image_grid_thw"):
            if accepts(model, name):
                inputs[name] = thw
        if accepts(model, "merge_sizes"):  # VideoLLaMA 3: the merge of each image
            inputs["merge_sizes"] = torch.full((batch_size,), merge, dtype=torch.long)
        yield inputs


def grid_inputs(model, batch_size):
    """The first grid layout the tower's forward takes (config.first_run), else the first; None
    for a model that takes no grid."""
    if not any(accepts(model, n) and n in required(model) for n in ("grid_thw", "image_grid_thw")):
        return None
    names = [n for n in ("hidden_states", "pixel_values") if accepts(model, n)]
    if not names:
        return None
    layouts = list(_grid_layouts(model, batch_size, names[0]))
    # The towers read the grid's values for their position tables, some before the patches:
    # where several layouts reach that, a real forward tells them apart.
    return first_run(model, layouts) or layouts[0]


def _query_former(model, batch_size, given):
    """BLIP-2's Q-Former alone: its learnt queries come from outside (`query_embeds`), and the
    image features its cross-attention reads (`encoder_hidden_states`) too."""
    config = model.config
    queries = _first_int(config, ("num_query_tokens",), 32)
    given["query_embeds"] = torch.randn(batch_size, queries,
                                        _first_int(config, ("hidden_size",), 768))
    given["encoder_hidden_states"] = torch.randn(
        batch_size, 257, _first_int(config, ("encoder_hidden_size", "hidden_size"), 768))
    for name in ("input_ids", "attention_mask"):  # the Q-Former's own text is optional
        given.pop(name, None)


def _boxes(batch_size, length, dtype):
    """One box per token, (x0, y0, x1, y1) with x0 <= x1 and y0 <= y1, in 0..1000 (LayoutLM's
    scale, within its 1024-entry position tables)."""
    corners = torch.randint(0, 1001, (batch_size, length, 2, 2)).sort(dim=2).values
    return corners.reshape(batch_size, length, 4).to(dtype)  # (x0, y0), then (x1, y1)


def _document_boxes(model, given, batch_size):
    """Document models (LayoutLM, BROS: "You have to specify bbox"): a box per token, as indices
    of their 2-D position tables where they have them, else as coordinates. UDOP's tables are
    indexed by coordinates normalized to 0..1 times their size (integer boxes: "mean(): could
    not infer output dtype ... Got: torch.int64"): those where the forward refuses indices, on
    fake tensors."""
    boxes = _boxes(batch_size, given["input_ids"].shape[1], torch.float)
    if not sub(model.config, "max_2d_position_embeddings"):
        given["bbox"] = boxes
        return
    indices, normalized = dict(given, bbox=boxes.long()), dict(given, bbox=boxes / 1000)
    given["bbox"] = (first_taken(model, [indices, normalized]) or indices)["bbox"]


def query_token(config):
    """The token a Q-Former model splices its queries' outputs in at: its image token, else its
    video token (InstructBLIPVideo); None where it names neither."""
    return next((get(config, name) for name in MEDIA_TOKENS
                 if isinstance(get(config, name), int)), None)


def _image_queries(model, given, batch_size):
    """Text for a model that splices its Q-Former's query outputs into the text at image tokens
    (BLIP-2, InstructBLIP: `num_query_tokens` of them, then the text), given its image; for a
    clip, the queries of each frame (InstructBLIPVideo: "Videos features and video tokens do not
    match" otherwise)."""
    config = model.config
    queries, token = get(config, "num_query_tokens"), query_token(config)
    if not (isinstance(queries, int) and isinstance(token, int) and "pixel_values" in given
            and accepts(model, "input_ids") and "input_ids" not in given):
        return
    if given["pixel_values"].dim() == 5:
        queries *= given["pixel_values"].shape[1]
    text = get(config, "text_config") or config
    ids = token_ids(text, batch_size, sequence_length(text, 16), [token])
    ids = torch.cat([torch.full((batch_size, queries), token, dtype=ids.dtype), ids], 1)
    given["input_ids"] = ids
    given["attention_mask"] = torch.ones_like(ids)


def _patchified(model, given, batch_size):
    """Images as a model of native resolutions takes them: its patches flattened, one row each,
    a square grid of them, with the grid per image and a mask over the patches (SigLIP 2's
    NaFlex: `spatial_shapes`, "a and b must have same reduction dim, but got [672, 224] X [768,
    768]" for whole images; as many patches as its `num_patches`), or with each patch's (x, y)
    (Gemma 4's vision tower: `pixel_position_ids`; a side of whole pooling windows)."""
    pixels = given.get("pixel_values")
    positions = accepts(model, "pixel_position_ids")
    if not ((accepts(model, "spatial_shapes") or positions)
            and isinstance(pixels, torch.Tensor) and pixels.dim() == 4):
        return
    config = model.config
    patch = _first_int(config, ("patch_size",), 16)
    side = int(_first_int(config, ("num_patches",), _GRID_SIDE ** 2) ** 0.5)
    pool = _first_int(config, ("pooling_kernel_size",), 1)
    side = -(-side // pool) * pool
    given["pixel_values"] = torch.randn(batch_size, side * side,
                                        pixels.shape[1] * patch * patch)
    if positions:
        y, x = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
        given["pixel_position_ids"] = torch.stack([x, y], -1).reshape(1, -1, 2).repeat(
            batch_size, 1, 1)
        return
    given["spatial_shapes"] = torch.tensor([[side, side]] * batch_size)
    if accepts(model, "pixel_attention_mask"):
        given["pixel_attention_mask"] = torch.ones(batch_size, side * side, dtype=torch.long)


def with_required(model, given, batch_size):
    """`given` completed with the arguments the forward needs beside its main input."""
    needed = [n for n in required(model) if n not in given]
    if "query_embeds" in needed:
        _query_former(model, batch_size, given)
    if accepts(model, "bbox") and "bbox" not in given and "input_ids" in given:
        _document_boxes(model, given, batch_size)
    if "qformer_input_ids" in needed:  # InstructBLIP: the instruction its Q-Former reads
        qformer = get(model.config, "qformer_config") or model.config
        length = sequence_length(qformer, 16)
        given["qformer_input_ids"] = token_ids(qformer, batch_size, length)
        given["qformer_attention_mask"] = torch.ones(batch_size, length, dtype=torch.long)
    if "task_inputs" in needed:
        # OneFormer's task ("the task is semantic"): its tokenizer's ids, padded to
        # task_seq_len, within its text encoder's vocabulary.
        vocab = _first_int(model.config, ("text_encoder_vocab_size",), 1000)
        length = _first_int(model.config, ("task_seq_len",), 77)
        given["task_inputs"] = torch.randint(0, vocab, (batch_size, length))
    _texts_of_their_own(model, given, needed, batch_size)
    _patch_grid_sizes(model, given, batch_size)
    _region_features(model, given, batch_size)
    _image_prompts(model, given, needed)
    _image_positions(model, given, batch_size)
    _image_queries(model, given, batch_size)
    _patchified(model, given, batch_size)
    with_actions(model, given, needed, batch_size)
    if "input_ids" in needed and "input_ids" not in given:
        # Text a model of another main input requires beside it, where no rule above made it
        # (Grounding DINO: the phrases naming what to find in its image), from its text
        # tower's configuration.
        for name, value in text_inputs(model.config, batch_size, 16).items():
            given.setdefault(name, value)
    return given


def draft_inputs(model, batch_size, max_seq_length):
    """A speculative-decoding drafter's inputs (Muse Glimmer's assistant, a DFlash drafter, main
    input `noise_embeds`): the block of `block_size` embeddings it denoises, and the context,
    the target model's hidden states at each of its `target_layer_ids` concatenated along the
    last axis, which its forward requires beside it."""
    config = model.config
    width = _first_int(config, ("hidden_size",), 64)
    layers = get(config, "target_layer_ids") or [0]
    block = _first_int(config, ("block_size",), 16)
    length = sequence_length(config, max_seq_length)
    return {"noise_embeds": torch.randn(batch_size, block, width),
            "context_hidden_states": torch.randn(batch_size, length, width * len(layers))}


def _image_prompts(model, given, needed):
    """SegGPT's example of the task in context: an image and its mask (an image of the mask's
    colours), each as large as the image to segment ("missing 2 required positional arguments:
    'prompt_pixel_values' and 'prompt_masks'"). SegGPT stacks the example above the image, so its
    configured size (896x448) holds two: the images at the configuration's size are tried, then
    at half its height, the first the forward takes on fake tensors."""
    pixels = given.get("pixel_values")
    wanted = [n for n in ("prompt_pixel_values", "prompt_masks") if n in needed]
    if not (wanted and isinstance(pixels, torch.Tensor) and pixels.dim() == 4):
        return
    layouts = []
    for image in (pixels, pixels[:, :, : pixels.shape[2] // 2].contiguous()):
        layouts.append(dict(given, pixel_values=image,
                            **{name: torch.rand_like(image) for name in wanted}))
    given.update(first_taken(model, layouts) or layouts[0])


def _image_positions(model, given, batch_size):
    """Kosmos-2's text with its image's place marked: `latent_query_num` positions after the
    first token take the image's embeddings (its processor's layout); without the mask the forward
    fails ("'NoneType' object has no attribute 'to'")."""
    queries = sub(model.config, "latent_query_num")
    ids = given.get("input_ids")
    if (not accepts(model, "image_embeds_position_mask") or "pixel_values" not in given
            or ids is None or not isinstance(queries, int) or ids.shape[1] <= queries
            or "image_embeds_position_mask" in given):
        return
    mask = torch.zeros(batch_size, ids.shape[1], dtype=torch.long)
    mask[:, 1:1 + queries] = 1
    given["image_embeds_position_mask"] = mask


# The regions of an image a region-feature model reads (LXMERT: a detector's 36 boxes an image).
_REGIONS = 36


def _region_features(model, given, batch_size):
    """LXMERT's image as a detector gives it: features and a box per region (`visual_feats`,
    `visual_pos`: "`visual_feats` cannot be `None`"), beside its text."""
    features, corners = (sub(model.config, n) for n in ("visual_feat_dim", "visual_pos_dim"))
    if not (accepts(model, "visual_feats") and isinstance(features, int)
            and isinstance(corners, int)) or "visual_feats" in given:
        return
    given["visual_feats"] = torch.randn(batch_size, _REGIONS, features)
    given["visual_pos"] = torch.rand(batch_size, _REGIONS, corners)


# The rows of a text a sample holds several of, where the forward counts them per sample.
_ROWS_A_SAMPLE = 2


def _texts_of_their_own(model, given, needed, batch_size):
    """Texts the forward requires under names of their own beside its main input,
    `<name>_input_ids` with their `<name>_attention_mask` (OmDet-Turbo: the classes to detect and
    the task naming them, "missing 5 required positional arguments: 'classes_input_ids',
    'classes_attention_mask', 'tasks_input_ids', 'tasks_attention_mask', 'classes_structure'"),
    within the text tower's vocabulary and positions; where it requires `<name>_structure` too,
    the rows of each sample (_ROWS_A_SAMPLE), flattened, and their count per sample."""
    text = get(model.config, "text_config") or model.config
    length = sequence_length(text, 16)
    for name in needed:
        prefix = name[:-len("_input_ids")]
        if not name.endswith("_input_ids") or not prefix or name in given:
            continue
        structure = prefix + "_structure"
        rows = batch_size * (_ROWS_A_SAMPLE if structure in needed else 1)
        given[name] = token_ids(text, rows, length)
        if accepts(model, prefix + "_attention_mask"):
            given[prefix + "_attention_mask"] = torch.ones(rows, length, dtype=torch.long)
        if structure in needed:
            given[structure] = torch.full((batch_size,), rows // batch_size, dtype=torch.long)


def _patch_grid_sizes(model, given, batch_size):
    """A vision tower's images with the (height, width) of each in patches (MiniCPM-V's towers:
    `target_sizes`, which their position ids are made from: "'NoneType' object has no attribute
    'device'" without them), where the forward takes them beside images and no text."""
    pixels = given.get("pixel_values")
    if not (accepts(model, "target_sizes") and "target_sizes" not in given
            and "input_ids" not in given and isinstance(pixels, torch.Tensor)
            and pixels.dim() == 4):
        return
    patch = _first_int(model.config, ("patch_size",), 14)
    given["target_sizes"] = torch.tensor([[pixels.shape[2] // patch, pixels.shape[3] // patch]]
                                         * batch_size)
