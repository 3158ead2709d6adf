"""A tiny Idefics3 vision tower (transformers 5.23) whose ONNX graphs the checker's strict shape
inference rejects from both exporters (torch 2.15, onnxscript 0.7.2, pinned in
scripts/pypi/requirements.txt): the dynamo exporter's optimizer folds a position lookup into a
shape that differs from the one it annotated ("Inferred shape and existing shape differ in
dimension 0: (6) vs (7)"), the TorchScript exporter gathers with float indices. turnkey asks the
TorchScript exporter after the dynamo exporter's graph is rejected, and the build's one line
names both reasons."""
import torch
import transformers

torch.manual_seed(0)

config = transformers.Idefics3VisionConfig(
    hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
    image_size=224, patch_size=32)
model = transformers.Idefics3VisionTransformer(config).eval()
with torch.no_grad():
    model(pixel_values=torch.rand(1, 3, 224, 224))
