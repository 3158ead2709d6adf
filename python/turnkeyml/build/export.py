"""The reference tool's built-in stages (`turnkeyml.build.export`), each standing for one of
turnkey's C++ tools. Their keyword arguments are that tool's options (`turnkey -h`)."""

from .stage import Stage


class ExportPytorchModel(Stage):
    """export-pytorch: torch.onnx.export of the discovered model (options: opset, exporter)."""

    tool = "export-pytorch"

    def __init__(self, **options):
        super().__init__("export_pytorch", "Exporting PyTorch to ONNX", **options)


class OptimizeOnnxModel(Stage):
    """optimize-ort: ONNX Runtime offline optimization (option: level)."""

    tool = "optimize-ort"

    def __init__(self, **options):
        super().__init__("optimize_onnx", "Optimizing ONNX file", **options)


class ConvertOnnxToFp16(Stage):
    """convert-fp16: float16 conversion (option: no_keep_io_types)."""

    tool = "convert-fp16"

    def __init__(self, **options):
        super().__init__("fp16_conversion", "Converting to FP16", **options)


class CheckOnnx(Stage):
    """check-onnx: checker, strict shape inference and an ONNX Runtime session."""

    tool = "check-onnx"

    def __init__(self):
        super().__init__("check_onnx", "Checking ONNX file")


class SuccessStage(Stage):
    """set_success: kept for the reference tool's sequences; turnkey marks a build successful
    by itself, so this stage runs nothing."""

    skip = True

    def __init__(self):
        super().__init__("set_success", "Finishing up")

    def fire(self, input_onnx, output_onnx):  # never called: tool_calls() leaves it out
        return input_onnx
