"""The ONNX files bench/peers measures, made from configurations with random weights (no
download): torchvision's resnet50 and mobilenet_v2 (1x3x224x224), a BERT-base encoder
(transformers' BertModel(BertConfig()), input_ids and attention_mask 1x128, fixed), and the same
encoder exported with dynamic batch and sequence dims (the dynamic-shape model; bench/peers runs
it at 1x128). TorchScript exporter, opset 17. Run by the PyPI interpreter (.deps/pypi):
    python peers_models.py OUT_DIR [NAME...]
Writes OUT_DIR/<name>.onnx for each model not already there."""
import os
import sys
import warnings

import torch

warnings.filterwarnings("ignore")


def vision(name):
    import torchvision

    model = getattr(torchvision.models, name)(weights=None).eval()
    return model, (torch.randn(1, 3, 224, 224),), ["input"], None


def bert(dynamic):
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig()).eval()
    ids = torch.randint(0, 30000, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)
    axes = None
    if dynamic:
        axes = {n: {0: "batch", 1: "sequence"} for n in ("input_ids", "attention_mask")}
    return model, (ids, mask), ["input_ids", "attention_mask"], axes


MODELS = {
    "resnet50": lambda: vision("resnet50"),
    "mobilenet_v2": lambda: vision("mobilenet_v2"),
    "bert_base": lambda: bert(False),
    "bert_base_dynamic": lambda: bert(True),
}


def main():
    out = sys.argv[1]
    names = sys.argv[2:] or list(MODELS)
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name in names:
        path = os.path.join(out, name + ".onnx")
        if os.path.exists(path):
            continue
        model, args, inputs, axes = MODELS[name]()

        class Outputs(torch.nn.Module):  # BERT returns a ModelOutput: keep its first tensor
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, *a):
                y = self.inner(*a)
                return y[0] if isinstance(y, (tuple, list)) or hasattr(y, "last_hidden_state") else y

        tmp = path + ".tmp"
        torch.onnx.export(Outputs(model), args, tmp, opset_version=17, dynamo=False,
                          input_names=inputs, output_names=["output"], dynamic_axes=axes)
        os.replace(tmp, path)
        print(f"made {path}")


if __name__ == "__main__":
    main()
