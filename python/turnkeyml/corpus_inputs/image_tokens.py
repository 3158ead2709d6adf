"""Images for models that splice image features into their text at image tokens (LLaVA, Gemma 3,
PaliGemma, Aya Vision, Mistral 3, ...: an `image_token_id` or `image_token_index`): the text
holds as many image tokens as the model makes feature vectors of the images, which is per class
(patches per side squared, less a class token, pooled, merged, tiled). The model counts them
itself: its forward, run on fake tensors with the images, hands the features to
`get_placeholder_mask` (transformers' check that tokens and features match), where the count is
read and the run stops. Where no count comes out or the forward refuses the spliced text, the
text goes alone, as before."""

import inspect

import torch

from .config import MEDIA_TOKENS, accepts, configs, get, on_fake_tensors, on_weights, taken

# The fields of config.MEDIA_TOKENS that name an image's token.
_IMAGE_TOKENS = tuple(name for name in MEDIA_TOKENS if name.startswith("image_"))


class _Counted(Exception):
    def __init__(self, features):
        super().__init__(features)
        self.features = features


def _counting(method):
    """`method` (a bound get_placeholder_mask) that raises _Counted with the number of image
    feature vectors it is given, instead of checking them."""
    signature = inspect.signature(method)

    def count(*args, **kwargs):
        given = signature.bind_partial(*args, **kwargs).arguments
        features, embeds = given.get("image_features"), given.get("inputs_embeds")
        if features is None or embeds is None:
            return method(*args, **kwargs)
        raise _Counted(int(features.numel()) // int(embeds.shape[-1]))
    return count


def _feature_count(model, inputs):
    """The image feature vectors model's forward makes of inputs' images, or None."""
    patched = [m for m in model.modules() if hasattr(type(m), "get_placeholder_mask")]
    for m in patched:
        m.get_placeholder_mask = _counting(m.get_placeholder_mask)
    try:
        on_fake_tensors(model.forward, on_weights(model, inputs))
    except _Counted as counted:
        return counted.features
    except Exception:  # noqa: BLE001 (no count: the text goes alone)
        return None
    finally:
        for m in patched:
            del m.get_placeholder_mask
    return None


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
        count = _feature_count(model, dict(inputs, **layout))
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
