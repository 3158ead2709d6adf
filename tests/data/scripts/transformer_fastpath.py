# labels: test_group::export
"""An eval-mode nn.TransformerEncoder called under torch.no_grad(): PyTorch runs its fused fast
path (aten::_transformer_encoder_layer_fwd), which has no ONNX export; the export must still
succeed and match."""
import torch

torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
encoder = torch.nn.TransformerEncoder(layer, 2).eval()
with torch.no_grad():
    encoder(torch.randn(1, 6, 32))
