"""A vision-language-action model's inputs (π0: `PI0Model`): what its cameras see, with which of
them a sample has; its instruction, after one image token per feature vector of each camera's
image; and the embeddings of the robot's state and of the chunk of actions it denoises, which its
forward requires ("missing 1 required positional argument: 'action_embeds'") and reads in the
width of its action expert. Without the images and the text its forward fails in its prefix
("'NoneType' object has no attribute 'get_seq_length'")."""

import torch

from .config import as_size, configs, first_taken, get, on_fake_tensors, on_weights
from .image_tokens import image_token
from .text import sequence_length, token_ids

# The cameras of a sample: π0's robots have a base camera and one on each wrist (openpi's
# base_0_rgb, left_wrist_0_rgb, right_wrist_0_rgb), all present here.
_CAMERAS = 3

# Actions a chunk holds where the configuration names no `chunk_size` (π0's is 50).
_CHUNK = 50


def _tokens_per_image(model, image):
    """The feature vectors the model's vision tower makes of one image (its `get_image_features`,
    on fake tensors: patches, pooled and projected as the class does), else None."""
    tower = next((m for m in model.modules()
                  if m is not model and hasattr(m, "get_image_features")), None)
    if tower is None:
        return None
    try:
        features = on_fake_tensors(tower.get_image_features,
                                   on_weights(model, {"pixel_values": image[None]}))
    except Exception:  # noqa: BLE001 (no count: the caller counts patches)
        return None
    features = getattr(features, "pooler_output", features)
    return int(features.shape[1]) if isinstance(features, torch.Tensor) else None


def _vision(config):
    """The part of the configuration that describes the vision tower (π0's is a part of a part:
    `vlm_config.vision_config`), else the configuration."""
    return next((get(h, "vision_config") for h in configs(config)
                 if get(h, "vision_config") is not None), config)


def _camera_image(vision, pixels):
    """One image at the vision tower's size, where the main input's images took the default."""
    size = get(vision, "image_size")
    return torch.rand(pixels.shape[1], *(as_size(size, 224) if size else pixels.shape[-2:]))


def _patches(vision, image):
    patch = get(vision, "patch_size")
    patch = patch if isinstance(patch, int) and patch > 0 else 14
    return (image.shape[-2] // patch) * (image.shape[-1] // patch)


def _widths(config):
    """The widths the configuration's parts name, the last part's first (π0's action expert comes
    after its vision-language model)."""
    widths = [get(h, "hidden_size") for h in configs(config)]
    widths = [w for w in widths if isinstance(w, int) and w > 0]
    return list(dict.fromkeys(reversed(widths)))


def with_actions(model, given, needed, batch_size):
    """`given` (images from the main input) completed for a forward that requires
    `action_embeds`: images of _CAMERAS cameras a sample and their mask, token ids with each
    image's tokens before the instruction, and the state and a chunk of actions as embeddings of
    the first width the forward takes on fake tensors."""
    config, pixels = model.config, given.get("pixel_values")
    token = image_token(config)
    if ("action_embeds" not in needed or "action_embeds" in given or token is None
            or not isinstance(pixels, torch.Tensor) or pixels.dim() != 4):
        return
    vision = _vision(config)
    image = _camera_image(vision, pixels)
    per_image = _tokens_per_image(model, image) or _patches(vision, image)
    text = next((get(h, "text_config") for h in configs(config)
                 if get(h, "text_config") is not None), config)
    words = token_ids(text, batch_size, sequence_length(text, 16), [token])
    ids = torch.cat([torch.full((batch_size, per_image * _CAMERAS), token, dtype=words.dtype),
                     words], 1)
    chunk = get(config, "chunk_size")
    steps = (chunk if isinstance(chunk, int) and chunk > 0 else _CHUNK) + 1  # the state first
    prefix = dict(given, pixel_values=torch.rand(batch_size, _CAMERAS, *image.shape),
                  pixel_attention_mask=torch.ones(batch_size, _CAMERAS, dtype=torch.bool),
                  input_ids=ids, attention_mask=torch.ones(ids.shape, dtype=torch.long))
    layouts = [dict(prefix, action_embeds=torch.randn(batch_size, steps, width))
               for width in _widths(config)]
    if layouts:
        given.update(first_taken(model, layouts) or layouts[0])
