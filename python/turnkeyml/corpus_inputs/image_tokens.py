"""Images for models that splice image features into their text at image tokens (LLaVA, Gemma 3,
PaliGemma, Aya Vision, Mistral 3, ...: an `image_token_id` or `image_token_index`): the text
holds as many image tokens as the model makes feature vectors of the images, which is per class
(patches per side squared, less a class token, pooled, merged, tiled). The model counts them
itself (placeholders.feature_count). Where no count comes out or the forward refuses the
spliced text, the text goes alone, as before."""

import torch

from .config import MEDIA_TOKENS, accepts, configs, get, taken
from .placeholders import feature_count

# The fields of config.MEDIA_TOKENS that name an image's token.
_IMAGE_TOKENS = tuple(name for name in MEDIA_TOKENS if name.startswith("image_"))


def image_token(config):
    """The id of the token a model splices image features in at, or None."""
    for holder in configs(config):
        for name in _IMAGE_TOKENS:
            value = get(holder, name)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
    return None


def with_image_tokens(model, inputs, images):
    """inputs (token ids and their mask) with `images` as pixel values and, before the text, one
    image token per feature vector the model makes of them; inputs as given where the model
    splices no images, makes no count, or refuses the result."""
    token = image_token(model.config)
    if (token is None or "input_ids" not in inputs or "pixel_values" in inputs
            or not accepts(model, "pixel_values")):
        return inputs
    rows = getattr(getattr(model, "get_input_embeddings", lambda: None)(), "num_embeddings", None)
    if rows is not None and token >= rows:
        return inputs  # a token the text cannot hold (defaults.completed grows LLaVA's vocabulary)
    ids = inputs["input_ids"]
    batch = ids.shape[0]
    for layout in _layouts(model, images):
        count = feature_count(model, dict(inputs, **layout), "image_features")
        if not count or count % batch:
            continue
        spliced = torch.cat([torch.full((batch, count // batch), token, dtype=ids.dtype), ids], 1)
        given = dict(inputs, input_ids=spliced,
                     attention_mask=torch.ones(spliced.shape, dtype=torch.long), **layout)
        if taken(model, given) is not False:
            return given
    return inputs


def _layouts(model, images):
    """The images as the forward may take them: a batch of images; with each image's size
    (`image_sizes`: LLaVA-NeXT's and Pixtral's kind); one image per sample on an axis of its own
    (Idefics 3's kind)."""
    yield {"pixel_values": images}
    if accepts(model, "image_sizes"):
        sizes = torch.tensor([list(images.shape[-2:])] * images.shape[0])
        yield {"pixel_values": images, "image_sizes": sizes}
    yield {"pixel_values": images[:, None]}
