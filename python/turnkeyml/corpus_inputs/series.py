"""Values over time instead of tokens: time series (`past_values`: Time Series Transformer,
Informer, Autoformer, PatchTST, PatchTSMixer, TimesFM) and trajectories (`states`: Decision
Transformer), at the lengths their configurations give."""

import torch

from .config import accepts, get


def _int(config, name, default):
    value = get(config, name)
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else default


def _lagged(config, batch_size):
    """Time Series Transformer, Informer, Autoformer: the past holds the context plus the largest
    lag (each step sees its lagged values), the future the prediction length; time features
    (and dynamic real ones) beside both, as many as the configuration counts."""
    context = _int(config, "context_length", 0) or _int(config, "prediction_length", 24)
    future = _int(config, "prediction_length", 24)
    past = context + max(get(config, "lags_sequence") or [0])
    size = _int(config, "input_size", 1)
    features = (_int(config, "num_time_features", 0)
                + _int(config, "num_dynamic_real_features", 0))

    def values(length):  # a univariate series has no feature axis
        return torch.randn(batch_size, length, *([size] if size > 1 else []))

    inputs = {"past_values": values(past),
              "past_observed_mask": torch.ones(batch_size, past, *([size] if size > 1 else [])),
              "past_time_features": torch.randn(batch_size, past, features),
              "future_values": values(future),
              "future_time_features": torch.randn(batch_size, future, features)}
    statics = _int(config, "num_static_real_features", 0)
    if statics:
        inputs["static_real_features"] = torch.randn(batch_size, statics)
    cardinality = get(config, "cardinality") or []
    if _int(config, "num_static_categorical_features", 0):
        inputs["static_categorical_features"] = torch.zeros(
            batch_size, len(cardinality), dtype=torch.long)
    return inputs


# A series' length where the configuration allows far more (TimesFM 2.5: 16,384 steps).
_SERIES_LENGTH = 512


def _patched(model, batch_size):
    """PatchTST, PatchTSMixer: (batch, context, channels). TimesFM: (batch, steps), a whole
    number of patches, with a padding indicator and a frequency index per series."""
    config = model.config
    context = min(_int(config, "context_length", _SERIES_LENGTH), _SERIES_LENGTH)
    if not accepts(model, "past_values_padding"):
        return {"past_values": torch.randn(batch_size, context,
                                           _int(config, "num_input_channels", 1))}
    patch = _int(config, "patch_length", 1)
    length = max(patch, context // patch * patch)
    inputs = {"past_values": torch.randn(batch_size, length),
              "past_values_padding": torch.zeros(batch_size, length, dtype=torch.long)}
    if accepts(model, "freq"):
        inputs["freq"] = torch.zeros(batch_size, 1, dtype=torch.long)
    return inputs


def _trajectory(config, batch_size, max_seq_length):
    """Decision Transformer: states, actions, rewards and returns-to-go per step; each step is
    three positions of its GPT-2, so as many steps as a third of its positions allow."""
    steps = max(1, min(max_seq_length, _int(config, "n_positions", 1024) // 3,
                       _int(config, "max_ep_len", max_seq_length)))
    return {"states": torch.randn(batch_size, steps, _int(config, "state_dim", 1)),
            "actions": torch.randn(batch_size, steps, _int(config, "act_dim", 1)),
            "rewards": torch.randn(batch_size, steps, 1),
            "returns_to_go": torch.randn(batch_size, steps, 1),
            "timesteps": torch.arange(steps).repeat(batch_size, 1),
            "attention_mask": torch.ones(batch_size, steps, dtype=torch.long)}


def series_inputs(model, batch_size, max_seq_length):
    """The inputs of a model whose main input is a series (`past_values`) or a trajectory
    (`states`); None for any other."""
    main = getattr(model, "main_input_name", None)
    if main == "past_values":
        if accepts(model, "past_time_features"):
            return _lagged(model.config, batch_size)
        return _patched(model, batch_size)
    if main == "states":
        return _trajectory(model.config, batch_size, max_seq_length)
    return None
