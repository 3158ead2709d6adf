# labels: test_group::transformers_like name::whisper_tiny_encoder author::openai task::Audio license::mit
"""
Whisper-tiny's audio encoder (Radford et al. 2022, https://arxiv.org/abs/2212.04356;
configuration of https://github.com/openai/whisper, model "tiny"): an 80-bin log-mel spectrogram
of 30 s (3000 frames) goes through two Conv1d + GELU layers (the second with stride 2, giving
1500 positions), fixed sinusoidal positions, 4 pre-LayerNorm layers (width 384, 6 heads, MLP
1536, GELU) and a final LayerNorm. Differs from the published model in one detail: the key
projection has a bias (Whisper's has none).

Re-implemented from torch.nn modules (nn.Conv1d + nn.TransformerEncoder), random weights: the
architecture and sizes of the published encoder (about 8M parameters), not its weights. Whisper
always encodes 30 s windows, so the input length is fixed (no --max_audio_seq_length).
"""
import math

from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size = parse(["batch_size"])[0]

CONFIG = dict(n_mels=80, n_audio_ctx=1500, width=384, heads=6, layers=4)
MEL_FRAMES = 3000  # 30 s at a 10 ms hop


def sinusoids(length, channels, max_timescale=10000):
    """Whisper's fixed positional embedding."""
    increment = math.log(max_timescale) / (channels // 2 - 1)
    inverse = torch.exp(-increment * torch.arange(channels // 2))
    scaled = torch.arange(length)[:, None] * inverse[None, :]
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=1)


class AudioEncoder(torch.nn.Module):
    def __init__(self, n_mels, n_audio_ctx, width, heads, layers):
        super().__init__()
        self.conv1 = torch.nn.Conv1d(n_mels, width, kernel_size=3, padding=1)
        self.conv2 = torch.nn.Conv1d(width, width, kernel_size=3, stride=2, padding=1)
        self.gelu = torch.nn.GELU()
        self.register_buffer("positional_embedding", sinusoids(n_audio_ctx, width))
        block = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, 0.0, activation="gelu",
                                                 batch_first=True, norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.ln_post = torch.nn.LayerNorm(width)

    def forward(self, mel):
        x = self.gelu(self.conv2(self.gelu(self.conv1(mel)))).transpose(1, 2)  # batch, time, width
        return self.ln_post(self.blocks(x + self.positional_embedding))


model = AudioEncoder(**CONFIG)
model.eval()
inputs = {"mel": torch.randn(batch_size, CONFIG["n_mels"], MEL_FRAMES)}

with torch.no_grad():
    audio_features = model(**inputs)
print("parameters: %.1fM" % (sum(p.numel() for p in model.parameters()) / 1e6))
print("audio features:", tuple(audio_features.shape))
