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


def _missing(holder):
    """(field, value) of each value `holder` leaves unset that its model needs."""
    layers = get(holder, "num_hidden_layers")
    if "prediction_length" in vars(holder) and get(holder, "prediction_length") is None:
        yield "prediction_length", _PREDICTION_LENGTH
        if get(holder, "context_length") is None:
            yield "context_length", _PREDICTION_LENGTH
    if "vocab_size" in vars(holder) and get(holder, "vocab_size") is None:
        yield from ((name, value) for name, value in _TOKENIZER if get(holder, name) is None)
    # LFM2-MoE reads layer_types[i] for every layer but leaves it None; LFM2's own configuration
    # makes every layer full attention when none are named, which is the rule taken here.
    if ("layer_types" in vars(holder) and get(holder, "layer_types") is None
            and isinstance(layers, int) and "full_attn_idxs" not in vars(holder)
            and holder.model_type.startswith("lfm2")):
        yield "layer_types", ["full_attention"] * layers


def completed(config):
    """`config`, or a copy with the values its model needs and its defaults leave unset (see
    _missing); prints what it gave."""
    if not any(True for holder in configs(config) for _ in _missing(holder)):
        return config
    config = copy.deepcopy(config)
    given = []
    for holder in configs(config):
        for name, value in list(_missing(holder)):
            setattr(holder, name, value)
            given.append("%s=%r" % (name, value))
    print("corpus_inputs: %s leaves unset what its model needs: given %s"
          % (type(config).__name__, ", ".join(given)))
    return config
