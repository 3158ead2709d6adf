"""Token ids and attention masks: random text within the configuration's vocabulary and
positions, never holding a placeholder token."""

import torch

from .config import placeholder_tokens, sub


def token_ids(config, batch_size, length, avoid=()):
    vocab = sub(config, "vocab_size") or 1000
    ids = torch.randint(0, max(2, min(int(vocab), 32000)), (batch_size, length))
    for token in avoid:  # a random placeholder would ask for an image or audio not given
        ids[ids == token] = 0 if token != 0 else 1
    return ids


def sequence_length(config, max_seq_length):
    limit = sub(config, "max_position_embeddings")
    if isinstance(limit, int) and limit > 0:
        return min(max_seq_length, limit)
    return max_seq_length


def text_inputs(config, batch_size, max_seq_length):
    text = getattr(config, "text_config", None) or config  # a dual encoder's text tower
    length = sequence_length(text, max_seq_length)
    return {"input_ids": token_ids(text, batch_size, length, placeholder_tokens(config)),
            "attention_mask": torch.ones(batch_size, length, dtype=torch.long)}
