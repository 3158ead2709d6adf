"""Token ids and attention masks: random text within the configuration's vocabulary and
positions, never holding a placeholder token, each row ending as a tokenizer ends it."""

import torch

from .config import placeholder_tokens, sub


def token_ids(config, batch_size, length, avoid=()):
    vocab = sub(config, "vocab_size") or 1000
    high = max(2, min(int(vocab), 32000))
    return _without(torch.randint(0, high, (batch_size, length)), avoid, high)


def _without(ids, tokens, high):
    """ids with each of `tokens` replaced by the lowest id below `high` that is none of them: a
    random placeholder would ask for an image or audio not given, a random separator would
    split a question elsewhere."""
    instead = next((i for i in range(high) if i not in tokens), 0)
    for token in tokens:
        ids[ids == token] = instead
    return ids


def _special_token(config, name, avoid):
    """The configuration's token id `name` (the first of a list), or None where it names none,
    one outside its vocabulary, or a placeholder."""
    token = sub(config, name)
    if isinstance(token, (list, tuple)):
        token = token[0] if token else None
    vocab = sub(config, "vocab_size")
    if (not isinstance(token, int) or isinstance(token, bool) or token < 0 or token in avoid
            or (isinstance(vocab, int) and token >= vocab)):
        return None
    return token


def text(config, batch_size, length, avoid=()):
    """Random text whose rows end with the end-of-sequence token where the configuration names
    one, as tokenizers write it: BART-like sequence classifiers pool on that token and refuse
    text without it ("Each example must contain at least one <eos> token"), which a call on fake
    tensors cannot see. The token ends the text and appears nowhere else in it: BART's also
    refuses rows of different counts ("All examples must have the same number of <eos> tokens")."""
    eos = _special_token(config, "eos_token_id", avoid)
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
    sep = _special_token(config, "sep_token_id", avoid)
    length = ids.shape[-1]
    if sep is None or length < 4:
        return ids
    ids = _without(ids.clone(), set(avoid) | {sep}, sep + 2 + len(avoid))
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
