"""Inputs for the scripts of models/transformers/: what a model built from its configuration
takes, by the modality its class declares (`main_input_name`), with the configuration's sizes.

    inputs = corpus_inputs.transformers_inputs(model, batch_size, max_seq_length)
    outputs = model(**inputs)

Token ids and an attention mask for text; decoder token ids too for encoder-decoders; pixel values
at the configuration's image size for vision (clips of frames for video); both for a dual encoder (CLIP-like: a text and an
image tower); log-mel features (Whisper-like) or raw samples for audio; token ids and audio for a
model with an audio tower beside its text (speech LLMs: one audio token per embedding the tower
makes, counted on fake tensors; text-audio dual encoders). Random values from torch's generator
(the script seeds it). A model this cannot feed raises ValueError naming what it takes, so the
script fails in one line.

The package's rooms: `inputs` (the dispatch by modality, images, dual encoders), `text` (token
ids), `audio` (audio beside text), `series` (time series and trajectories), `required` (forward
arguments beside the main input: patches with their grid, Q-Former queries, boxes), `fitting`
(configurations cut to this machine's budget), `defaults` (values the class defaults leave
unset), `published` (those of them the published checkpoints give), `rotary` (multimodal rotary
sections made to fit their width), `sound` (audio as the main input, in the layout the forward
takes), `unnamed` (a main input under a name of its own, in the first of the corpus's layouts
the forward takes) and `config` (reading configurations and forwards), which the others share.
"""

from .fitting import MAX_PARAMETERS, fitted
from .inputs import transformers_inputs

__all__ = ["MAX_PARAMETERS", "fitted", "transformers_inputs"]
