"""A main input under a name the modalities do not use (Perceiver's `inputs`, Mimi's and Pocket
TTS's `latents`, VibeVoice's tokenizers' `hidden_states`, `inputs_embeds`): its
layout is found by trying the corpus's layouts on fake tensors: raw samples, token ids, images,
then vectors of each width the configuration names or the first layer takes, along the last axis
(embeddings) or the middle one (latent frames)."""

import inspect

import torch

from .config import first_taken
from .required import required
from .sound import SAMPLES, sizes
from .text import sequence_length, text

# The widths of a vector per step under the names transformers' configurations give them.
_WIDTHS = ("d_model", "hidden_size", "d_latents", "latent_dim", "vae_dim", "codebook_dim",
           "embed_dim", "hidden_dim", "input_dim", "dimension")


def _layouts(model, main, images, batch_size, max_seq_length):
    config = model.config
    length = sequence_length(config, max_seq_length)
    yield {main: torch.randn(batch_size, SAMPLES)}
    yield {main: torch.randn(batch_size, 1, SAMPLES)}
    yield {main: text(config, batch_size, length), "attention_mask":
           torch.ones(batch_size, length, dtype=torch.long)}
    yield {main: images}
    if images.dim() == 5:  # a clip where the configuration counts frames (Perceiver's 16)
        yield {main: images[:, 0]}
    for width in sizes(model, _WIDTHS):
        yield {main: torch.randn(batch_size, length, width)}
        yield {main: torch.randn(batch_size, width, length)}


def first_required(model):
    """The forward's first parameter without a default, or None: the main input of a forward that
    takes none of the names its class declares or the modalities use."""
    return next(iter(required(model)), None)


def unnamed_main_inputs(model, main, images, batch_size, max_seq_length):
    """The first layout of `main` the forward takes on fake tensors (`images`: the configuration's
    pixel values), or None."""
    accepted = inspect.signature(model.forward).parameters
    layouts = ({k: v for k, v in inputs.items() if k == main or k in accepted}
               for inputs in _layouts(model, main, images, batch_size, max_seq_length))
    return first_taken(model, layouts)
