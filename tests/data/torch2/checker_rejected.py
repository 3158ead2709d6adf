"""A tiny Parakeet TDT speech recogniser (transformers 5.23) whose dynamo-exported graph the ONNX
checker's strict shape inference rejects (torch 2.15, onnxscript 0.7.2, pinned in
scripts/pypi/requirements.txt): a Squeeze of a dimension of 8 ("Dimension of input 2 must be 1
instead of 8"). turnkey asks the TorchScript exporter after the dynamo exporter's graph is
rejected; its graph passes."""
import torch
import transformers

torch.manual_seed(0)

config = transformers.ParakeetTDTConfig(
    vocab_size=32, blank_token_id=31, decoder_hidden_size=32,
    encoder_config=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        num_key_value_heads=2, intermediate_size=64,
                        subsampling_conv_channels=8))
model = transformers.ParakeetForTDT(config).eval()
with torch.no_grad():
    model(input_features=torch.randn(1, 200, 80), decoder_input_ids=torch.randint(0, 31, (1, 8)))
