"""Token ids and attention masks: random text within the configuration's vocabulary and
positions, never holding a placeholder token, each row ending as a tokenizer ends it."""

import torch

from .config import placeholder_tokens, sub


def token_ids(config, batch_size, length, avoid=()):
    vocab = sub(config, "vocab_size") or 1000
    high = max(2, min(int(vocab), 32000))
    ids = torch.randint(0, high, (batch_size, length))
    # A random placeholder would ask for an image or audio not given: the lowest id that is none
    # takes its place.
    instead = next((i for i in range(high) if i not in avoid), 0)
    for token in avoid:
        ids[ids == token] = instead
    return ids


def _end_of_sequence(config, avoid):
    """The configuration's end-of-sequence token id (the first of a list), or None where it
    names none, one outside its vocabulary, or a placeholder."""
    eos = sub(config, "eos_token_id")
    if isinstance(eos, (list, tuple)):
        eos = eos[0] if eos else None
    vocab = sub(config, "vocab_size")
    if (not isinstance(eos, int) or isinstance(eos, bool) or eos < 0 or eos in avoid
            or (isinstance(vocab, int) and eos >= vocab)):
        return None
    return eos


def text(config, batch_size, length, avoid=()):
    """Random text whose rows end with the end-of-sequence token where the configuration names
    one, as tokenizers write it: BART-like sequence classifiers pool on that token and refuse
    text without it ("Each example must contain at least one <eos> token"), which a call on fake
    tensors cannot see. The token ends the text and appears nowhere else in it: BART's also
    refuses rows of different counts ("All examples must have the same number of <eos> tokens")."""
    eos = _end_of_sequence(config, avoid)
    if eos is None or length < 1:
        return token_ids(config, batch_size, length, avoid)
    ids = token_ids(config, batch_size, length, set(avoid) | {eos})
    ids[:, -1] = eos
    return ids


def question_and_context(config, ids, avoid=()):
    """ids as a question and a context, joined as RoBERTa-like tokenizers join a pair: the
    question (an eighth of the row), two separators, the context, a separator. A question-answering
    head reads its question by them: Longformer's gives the question global attention and
    asserts three separators a row ("There should be exactly three separator tokens"), BigBird's
    measures the question to the first. ids as given where the configuration names no separator
    within its vocabulary, or the row is too short for a pair."""
    sep = sub(config, "sep_token_id")
    vocab = sub(config, "vocab_size")
    length = ids.shape[-1]
    if (not isinstance(sep, int) or isinstance(sep, bool) or sep < 0 or sep in avoid
            or (isinstance(vocab, int) and sep >= vocab) or length < 4):
        return ids
    ids = ids.clone()
    ids[ids == sep] = next(i for i in range(sep + 2 + len(avoid)) if i != sep and i not in avoid)
    question = max(1, length // 8)
    ids[:, [question, question + 1, length - 1]] = sep
    return ids


def sequence_length(config, max_seq_length):
    limit = sub(config, "max_position_embeddings")
    if isinstance(limit, int) and limit > 0:
        return min(max_seq_length, limit)
    return max_seq_length


def text_inputs(config, batch_size, max_seq_length):
    tower = getattr(config, "text_config", None) or config  # a dual encoder's text tower
    length = sequence_length(tower, max_seq_length)
    return {"input_ids": text(tower, batch_size, length, placeholder_tokens(config)),
            "attention_mask": torch.ones(batch_size, length, dtype=torch.long)}
