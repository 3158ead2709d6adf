"""Configurations made to fit this machine: where a class's defaults are a model over the
budget, the same architecture with fewer layers, experts and vocabulary."""

import copy

import torch

from .config import configs, get, token_fields
from .defaults import completed
from .rotary import rotary_sections_fitted


# Budget of a models/transformers script's model. Its weights are held twice while turnkey
# benchmarks (the script's process keeps its model for the export; ONNX Runtime loads its own
# copy), plus the exporter's graph. Measured under an 8 GB --memory-limit: RemBERT's question
# answering (0.57 B parameters) is benchmarked; timm's eva_giant_patch14_560 (1.0 B) ends
# out_of_memory while ONNX Runtime loads it.
MAX_PARAMETERS = 600_000_000


# How far over MAX_PARAMETERS a model may stay to keep one layer of each kind (1.6 x 0.6 B = 0.96 B;
# axk1_causal_lm at 0.96 B was benchmarked under 8 GB, timm's 1.0 B eva_giant was not).
_OVER_BUDGET_TO_KEEP_KINDS = 1.6


# How many layers a configuration has, under the names transformers' configurations use.
# xLSTM builds num_blocks blocks beside a num_hidden_layers of the same value (cut alone: a model
# of 6.6 B parameters, whose cache has one layer: "KeyError 1").
_LAYER_COUNTS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
                 "decoder_layers", "num_decoder_layers", "num_blocks")


# Per-layer lists that must keep one entry per layer.
_LAYER_LISTS = ("layer_types", "mlp_layer_types", "layers_block_type", "no_rope_layers",
                "layer_rope_theta", "activation_sparsity_pattern")


# Routed experts of a mixture-of-experts layer, and how many each token takes.
_EXPERTS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")


_EXPERTS_PER_TOKEN = ("num_experts_per_tok", "moe_topk", "top_k", "num_experts_per_token",
                      "top_k_experts")


def _parameters(cls, config, errors=None):
    """Parameters of cls(config), built on the meta device (no memory); None if it fails (the
    error's line appended to `errors` where one is given)."""
    try:
        with torch.device("meta"):
            return sum(p.numel() for p in cls(config).parameters())
    except Exception as error:  # the real build raises it again, in the script's own words
        if errors is not None:
            errors.append("%s: %s" % (type(error).__name__, str(error).strip().split("\n")[0]))
        return None


def _layers_kept(holder, layers, per_kind=1):
    """The layers to keep, as indices into the per-layer lists: the first layer (or `per_kind`
    layers) of each kind (a hybrid model whose attention layers are every fourth keeps a linear-
    attention and a full-attention layer, not four), then the first others up to `layers`."""
    cycle = _one_cycle(holder, layers)
    if cycle is not None:
        return cycle
    for name in _LAYER_LISTS:
        values = get(holder, name)
        if isinstance(values, (list, tuple)) and len(set(map(repr, values))) > 1:
            first = {}
            for i, value in enumerate(values):
                if len(first.setdefault(repr(value), [])) < per_kind:
                    first[repr(value)].append(i)
            kept = {i for indices in first.values() for i in indices}
            kept.update(i for i in range(len(values)) if len(kept) < layers)
            return sorted(kept)
    indices = get(holder, "attn_layer_indices")  # Bamba: where the attention layers are
    if isinstance(indices, (list, tuple)) and indices:
        return list(range(max(layers, 2)))
    return list(range(layers))


def _one_cycle(holder, layers):
    """The first `layers` layers, at least one whole cycle of a model whose layer kinds repeat
    (RecurrentGemma's `block_types`: two recurrent layers, then attention; its per-layer kinds
    are derived from the cycle); None for other models."""
    cycle = get(holder, "block_types")
    if isinstance(cycle, (list, tuple)) and len(set(map(repr, cycle))) > 1:
        return list(range(max(layers, len(cycle))))
    return None


# Layer kinds that attend: transformers 5's cache needs one ("`get_seq_length` can only be
# called on Attention layers, and the current Cache seem to only contain LinearAttention layers").
_ATTENDING = ("full_attention", "attention", "sliding_attention")


def _first_layers(holder, layers):
    """The first `layers` layers, where kinds are not kept; an attending layer in place of the last
    of them where none of them attends and a later one does (GraniteMoE-Hybrid's defaults
    attend in their last layer only)."""
    kept = _one_cycle(holder, layers) or list(range(layers))
    for name in _LAYER_LISTS:
        values = get(holder, name)
        if isinstance(values, (list, tuple)) and len(values) > layers and kept:
            if not any(values[i] in _ATTENDING for i in kept):
                later = next((i for i, v in enumerate(values) if v in _ATTENDING), None)
                if later is not None:
                    kept[-1] = later
            break
    return kept


def _keep_layers(holder, kept, changed):
    """Cuts the layer counts of holder to len(kept) and its per-layer lists to the kept layers."""
    n = len(kept)
    if _cut_stacks(holder, n, changed):
        return
    cut = False
    for name in _LAYER_COUNTS:
        cut = _cap(holder, name, n, changed) or cut
    if not cut:
        return
    derived = _derived_indices(holder)
    for list_name in _LAYER_LISTS:
        values = get(holder, list_name)
        if isinstance(values, (list, tuple)) and len(values) > n:
            setattr(holder, list_name, type(values)(values[i] for i in kept if i < len(values)))
    for name, list_name, kind in derived:
        setattr(holder, name, [i for i, v in enumerate(get(holder, list_name)) if v == kind])
    _share_within(holder, n, changed)
    indices = get(holder, "attn_layer_indices")
    if isinstance(indices, (list, tuple)) and indices and all(i >= n for i in indices):
        setattr(holder, "attn_layer_indices", [n - 1])  # the last kept layer attends
    # Jamba: layer i attends where i % period == offset (8 and 4): none of the first layers.
    period, offset = get(holder, "attn_layer_period"), get(holder, "attn_layer_offset")
    if (isinstance(period, int) and isinstance(offset, int) and period > 0 and n > 1
            and not any(i % period == offset for i in range(n))):
        holder.attn_layer_period, holder.attn_layer_offset = n, n - 1
        changed.append("attention at layer %d" % (n - 1))


def _share_within(holder, n, changed):
    """Gemma 3n's and Gemma 4's last `num_kv_shared_layers` layers reuse the cache of an earlier
    layer of their kind: cut to n layers, as many of the last as still leave a layer of every
    kind before them (15 of 2 layers: "The set of layer types producing a cache is different
    than the set of layer types using them")."""
    shared, kinds = get(holder, "num_kv_shared_layers"), get(holder, "layer_types")
    if not (isinstance(shared, int) and shared > 0 and isinstance(kinds, (list, tuple))):
        return
    fits = min(shared, n - 1)
    while fits > 0 and set(kinds[:n - fits]) != set(kinds[:n]):
        fits -= 1
    if fits != shared:
        holder.num_kv_shared_layers = fits
        changed.append("num_kv_shared_layers %d -> %d" % (shared, fits))


def _derived_indices(holder):
    """(field, per-layer list, kind) of each list of layer indices that a configuration derives
    from its per-layer kinds when it is made (Zamba2's `hybrid_layer_ids`: where its layers are
    "hybrid"): cutting the kinds leaves it naming the uncut model's layers, which the model then
    looks up by the cut model's indices ("KeyError: 1"). Recomputed from the cut kinds."""
    found = []
    for list_name in _LAYER_LISTS:
        values = get(holder, list_name)
        if not isinstance(values, (list, tuple)):
            continue
        for name, indices in vars(holder).items():
            if (name not in _LAYER_LISTS and isinstance(indices, list) and indices
                    and all(isinstance(i, int) and not isinstance(i, bool) for i in indices)):
                kinds = {repr(values[i]) for i in indices if 0 <= i < len(values)}
                kind = values[indices[0]] if len(kinds) == 1 and indices[0] < len(values) else None
                if kind is not None and indices == [i for i, v in enumerate(values) if v == kind]:
                    found.append((name, list_name, kind))
    return found


def _cut_stacks(holder, n, changed):
    """HRM's blocks per stack, where num_hidden_layers counts cache slots derived from them (blocks
    x H_cycles x (L_cycles + 1)): both cut together (num_hidden_layers cut alone left 16 blocks a
    stack and a cache of 2 slots: "list index out of range"). False for other models."""
    per_stack, slots = get(holder, "num_layers_per_stack"), get(holder, "num_hidden_layers")
    if not (isinstance(per_stack, int) and isinstance(slots, int) and per_stack > n > 0
            and slots % per_stack == 0):
        return False
    holder.num_layers_per_stack, holder.num_hidden_layers = n, n * (slots // per_stack)
    changed.append("num_layers_per_stack %d -> %d" % (per_stack, n))
    return True


def _cap(holder, name, limit, changed):
    """Sets the integer `name` of holder to `limit` where it is larger; says so in `changed`."""
    value = get(holder, name)
    if not isinstance(value, int) or isinstance(value, bool) or value <= limit:
        return False
    setattr(holder, name, limit)
    changed.append("%s %d -> %d" % (name, value, limit))
    return True


# Tables of hashed ids a model keeps beside its vocabulary, cut with it: their ids are hashes
# taken modulo the table's size, which any size holds. BLT's byte n-gram hashes: 500,002 rows for
# each of 6 n-gram sizes, 3.1 B of its 4.6 B parameters (out of memory before).
_HASHED_VOCABULARIES = ("encoder_hash_byte_group_vocab",)


def _shrink(config, layers, experts, vocab, keep_kinds):
    """Cut every layer count of config (and its sub-configurations) to `layers` (with keep_kinds,
    to the first layer of each kind and others up to `layers`), the routed experts to `experts`
    and the vocabulary to `vocab` (the token ids of transformers_inputs are below 32000 anyway);
    returns what changed."""
    changed = []
    for holder in configs(config):
        whole = get(holder, "vocab_size")
        if _cap(holder, "vocab_size", vocab, changed):
            for name in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
                _cap(holder, name, vocab - 1, [])
            _renumber_special_tokens(config, whole, vocab)
        for name in _HASHED_VOCABULARIES:
            _cap(holder, name, vocab, changed)
        _keep_layers(holder, _layers_kept(holder, layers, keep_kinds) if keep_kinds else
                     _first_layers(holder, layers), changed)
        for name in _EXPERTS:
            if _cap(holder, name, experts, changed):
                for per_token in _EXPERTS_PER_TOKEN:
                    _cap(holder, per_token, experts, [])
                # Group routing (DeepSeek-V3, Beam: the experts in n_group groups, each group
                # scored by its best two) needs two experts a group.
                if _cap(holder, "n_group", max(1, experts // 2), changed):
                    _cap(holder, "topk_group", get(holder, "n_group"), changed)
    return changed


def _renumber_special_tokens(config, whole, vocab):
    """Gives the placeholder tokens past a vocabulary cut from `whole` to `vocab` ids (audio,
    image, video tokens: a model splices its towers' embeddings in where they stand) distinct
    ids within it, in every configuration that names them. Where embedders own the vocabulary's
    tail (Gemma 3n: vision and audio ids from their `vocab_offset` to `whole`, its placeholder
    tokens among them, the per-layer table below it, audio padded with the last id), the tail
    moves to the cut vocabulary's end as it was, and the other tokens past the cut go below it."""
    tail = _embedded_tail(config, whole, vocab)
    shift = vocab - whole
    below = vocab - 1 if tail is None else tail + shift  # vocab - 1: where pad, bos and eos went
    renumbered = {}  # old id -> new id: a token named in two configurations stays one token
    for holder, name, value in list(token_fields(config)):
        if tail is not None and tail <= value < whole:
            setattr(holder, name, value + shift)
        elif value >= vocab:
            setattr(holder, name, renumbered.setdefault(value, below - 1 - len(renumbered)))
    if tail is not None:
        for holder in configs(config):
            for name in ("vocab_offset", "vocab_size_per_layer_input"):
                value = get(holder, name)
                if isinstance(value, int) and tail <= value < whole:
                    setattr(holder, name, value + shift)


def _embedded_tail(config, whole, vocab):
    """The first id of the tail of a `whole`-id vocabulary that embedders of their own own
    (the lowest `vocab_offset` of the configuration's parts past the cut to `vocab`), or None."""
    offsets = [get(holder, "vocab_offset") for holder in configs(config)]
    offsets = [o for o in offsets if isinstance(o, int) and vocab <= o < whole]
    return min(offsets) if offsets and whole - min(offsets) < vocab else None


# The steps fitted() takes until the model fits: (layers, routed experts, vocabulary, layers
# kept of each kind: 0 for none). Each step is tried on a fresh copy of the caller's
# configuration. Two of each kind only where one of each does not build: Zamba's hybrid layers
# share one transformer block, tied across them, and transformers refuses to build a single one
# ("There is an issue with your definition of `tie_weights_keys`").
_STEPS = ((2, None, None, 1), (2, None, None, 2), (2, 8, None, 1), (1, 4, None, 1),
          (1, 4, 32000, 1), (1, 2, 32000, 1), (1, 4, 32000, 0), (1, 2, 32000, 0))


def fitted(config, cls, max_parameters=MAX_PARAMETERS):
    """`config`, or where cls(config) has more than max_parameters, a copy made smaller by the
    steps of _STEPS until it fits (or the smallest that builds): the same architecture, widths
    and heads as given, at a size this machine can export and benchmark. Prints what it
    changed. The configuration is used as is where the model cannot be counted. Values the
    model needs and the defaults leave unset are given first (defaults.completed), rotary
    sections that do not fit their width are made to last (rotary.rotary_sections_fitted: on
    the model as cut, which builds faster)."""
    config, before = _as_decoder(completed(config), cls)
    if before is None:
        _say_why_not_cut(config, cls)
    return rotary_sections_fitted(_cut(config, cls, max_parameters, before), cls)


def _say_why_not_cut(config, cls):
    """Prints why a model that does not build on the meta device is not cut (its build tried
    once more for the error): the script then builds it as given, whole, and where the real
    build allocates layers before it fails the same way, this line is the cause (Granite 4
    Vision's defaults lack `deepstack_layer_map`; its 8 B text model was built first, out of
    memory)."""
    errors = []
    _parameters(cls, config, errors)
    if errors:
        print("corpus_inputs: %s does not build from %s on the meta device, so it is not cut "
              "(%s)" % (cls.__name__, type(config).__name__, errors[0]))


def _as_decoder(config, cls):
    """`config`, or where cls is a causal language model (transformers' causal-LM mapping) that
    does not build from it while it says `is_decoder=False` and builds from a copy that says
    True, that copy: Reformer's defaults are its encoder's ("If you want to use
    `ReformerModelWithLMHead` make sure that `is_decoder=True`"). Prints what it changed.
    Returns (configuration, its model's parameters: None where it does not build)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    before = _parameters(cls, config)
    if (before is not None or get(config, "is_decoder") is not False
            or cls.__name__ not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values()):
        return config, before
    decoder = copy.deepcopy(config)
    decoder.is_decoder = True
    after = _parameters(cls, decoder)
    if after is None:
        return config, before
    print("corpus_inputs: %s does not build from %s as an encoder: built with is_decoder=True"
          % (cls.__name__, type(config).__name__))
    return decoder, after


def _cut(config, cls, max_parameters, before):
    """fitted's cut of an already completed configuration, whose model has `before`
    parameters."""
    if before is None or before <= max_parameters:
        return config
    best = None  # (parameters, configuration, what changed)
    best_whole = None  # the same, among the steps that keep one layer of each kind
    for layers, experts, vocab, keep_kinds in _STEPS:
        if keep_kinds == 2 and best_whole is not None:
            continue
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
