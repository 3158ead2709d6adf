"""Audio as a model's main input, in the layout its forward takes. The corpus's first guess (log-
mel frames of the configuration's size; 16,000 raw samples) fits the Whisper and wav2vec 2.0
kinds; other encoders want other frame sizes (Parakeet's kind, LASR, Gemma 4: 128 mel bins held
in a part of the configuration; Granite Speech 5: 4 stacked frames of 80), frames along the last
axis, or a channel axis (codecs: EnCodec, Mimi, DAC: (batch, 1, samples)); some require a mask
over the frames. Each candidate is tried on fake tensors, the guess first, and the first the
forward takes is given."""

import torch

from .config import accepts, configs, first_taken, get
from .required import required

# The frames of the corpus's log-mel features where the configuration does not fix them.
FRAMES = 584

# The raw samples of the corpus's waveforms: one second at 16 kHz.
SAMPLES = 16000

# The sizes of a feature frame under the names transformers' configurations give them.
_FRAME_SIZES = ("num_mel_bins", "n_mels", "feature_size", "input_feat_per_channel", "input_dim",
                "num_mel_filters", "input_feature_size", "model_in_dim",
                "feature_projection_input_dim")

# Main inputs of log-mel frames: Gemma 3n's audio encoder calls them `audio_mel`.
FEATURES = ("input_features", "audio_mel")

# Masks that mark the padded frames, not the valid ones (Gemma 3n's audio encoder is handed the
# negation of its feature extractor's mask): no frame is padded.
_PADDING_MASKS = ("audio_mel_mask",)

# Masks over the frames a forward may require beside its audio.
_MASKS = ("input_features_mask", "feature_attention_mask", "input_features_attention_mask",
          "padding_mask", "audio_attention_mask", "attention_mask") + _PADDING_MASKS


def _ints(values):
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0]


def first_layer_sizes(model):
    """What the model's first linear and 1-D convolution layers take per frame: the frame size of
    an encoder whose features are stacked or widened before them (Granite Speech 5's
    `input_linear` takes 4 frames of 80 mel bins)."""
    sizes = []
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            sizes.append(module.in_features)
        elif isinstance(module, torch.nn.Conv1d):
            sizes.append(module.in_channels)
        if len(sizes) == 2:
            break
    return sizes


def sizes(model, names, then=()):
    """Candidate sizes of a vector per step, each once: the values of `names` in the
    configuration and its parts, what the first layers take, then `then`."""
    found = [get(holder, name) for holder in configs(model.config) for name in names]
    return list(dict.fromkeys(_ints(found + first_layer_sizes(model) + list(then))))


def _frame_sizes(model):
    """Candidate sizes of a feature frame, then the two common mel sizes."""
    return sizes(model, _FRAME_SIZES, then=(80, 128))


def _frame_counts(model):
    """Candidate numbers of frames: the corpus's, the configuration's fixed length (the Audio
    Spectrogram Transformer's position table: `max_length` 1024), and the corpus's rounded up
    to whole chunks where the encoder takes its frames in chunks (Qwen3-ASR: of 2 * `n_window`)."""
    holders = list(configs(model.config))
    counts = [FRAMES] + _ints(get(h, "max_length") for h in holders)
    counts += [-(-FRAMES // (2 * n)) * 2 * n for n in _ints(get(h, "n_window") for h in holders)]
    return list(dict.fromkeys(counts))


def _candidates(model, main, guess, batch_size):
    """The guess, then the other layouts of `main`: raw samples of whole tokens, with a channel
    axis, mono or of the configuration's channels; frames of each candidate size and count,
    frames first or last (the Audio Spectrogram Transformer takes them as `input_values`)."""
    yield guess
    if main == "input_values":
        # Samples of whole tokens where the encoder makes a token of a fixed count of them
        # (Muse Spark's audio encoder: "`input_values` length 16000 is not a multiple of 1920").
        for per in _ints(get(h, "samples_per_token") for h in configs(model.config)):
            yield dict(guess, **{main: torch.randn(batch_size, -(-SAMPLES // per) * per)})
        channels = _ints(get(h, "audio_channels") for h in configs(model.config))
        for count in dict.fromkeys([1] + channels):
            yield dict(guess, **{main: torch.randn(batch_size, count, SAMPLES)})
    for frames in _frame_counts(model):
        for size in _frame_sizes(model):
            yield dict(guess, **{main: torch.randn(batch_size, frames, size)})
            yield dict(guess, **{main: torch.randn(batch_size, size, frames)})


def _frames(values):
    """How many frames a mask over `values` has: its time axis (the longer of the last two)."""
    if values.dim() == 2:
        return values.shape[-1]
    return max(values.shape[-2:])


def _with_masks(model, inputs, main, batch_size, every=False):
    """inputs with the masks over the frames the forward requires (no default), all ones; with
    `every`, each mask it takes."""
    frames = _frames(inputs[main])
    needed = [m for m in _MASKS if (m in required(model) or every and accepts(model, m))
              and m not in inputs]
    return dict(inputs, **{m: torch.zeros(batch_size, frames, dtype=torch.bool)
                           if m in _PADDING_MASKS else torch.ones(batch_size, frames, dtype=torch.long)
                           for m in needed})


def _with_features(model, main, guess, batch_size):
    """guess, with log-mel features beside raw samples where the forward requires both (NeuCodec:
    samples for its acoustic encoder, features for its semantic one, "missing 1 required
    positional argument: 'input_features'"; X-Codec 2): frames of the first candidate size, one
    per code the encoder makes of the samples (its hop, in input samples: NeuCodec's
    `encoder_hop_length`, X-Codec 2's `hop_length`; X-Codec 2 refuses other counts), else the
    corpus's count."""
    needed = [n for n in FEATURES if n in required(model) and n not in guess]
    if main != "input_values" or not needed:
        return guess
    hop = get(model.config, "encoder_hop_length") or get(model.config, "hop_length")
    frames = SAMPLES // hop if isinstance(hop, int) and 0 < hop <= SAMPLES else FRAMES
    return dict(guess, **{needed[0]: torch.randn(batch_size, frames, _frame_sizes(model)[0])})


def audio_main_inputs(model, main, guess, batch_size):
    """The first of the candidate layouts of the audio input `main` (one of FEATURES, or
    "input_values") that the forward takes, with the masks it requires; else the first that
    only a real run can judge; else the guess (with its masks), so that the script fails in the
    forward's own words."""
    if not accepts(model, main):
        return guess
    guess = _with_features(model, main, guess, batch_size)
    return (first_taken(model, _layouts(model, main, guess, batch_size))
            or _with_masks(model, dict(guess), main, batch_size))


def _layouts(model, main, guess, batch_size):
    """The candidates with the masks the forward requires; the guess also with every mask it
    takes, as a forward may read one it has a default for (AudioFlamingo 3's encoder:
    "'NoneType' object has no attribute 'sum'" without `input_features_mask`)."""
    decoder = "decoder_" + main
    for n, inputs in enumerate(_candidates(model, main, guess, batch_size)):
        if accepts(model, decoder) and decoder not in guess:
            # An encoder-decoder over values (SpeechT5's bare model: hidden states in and out,
            # no prenets) feeds its decoder values of its encoder's layout; without them the
            # decoder gets None.
            inputs = dict(inputs, **{decoder: torch.randn_like(inputs[main])})
        yield _with_masks(model, dict(inputs), main, batch_size)
        if n == 0:
            yield _with_masks(model, dict(inputs), main, batch_size, every=True)
