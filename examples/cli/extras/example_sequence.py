"""
This script is an example of a sequence.py file. Such a sequence.py file can be used to redefine
the build phase of the `turnkey`/`benchit` CLI (`--sequence-file`), `benchmark_files()`,
`benchmark_model()` and `build_model()` (`sequence=`) to have any custom behavior.

In this example sequence.py file we are setting the build sequence to simply export from PyTorch
to ONNX, then to run a custom stage written in Python that stamps the ONNX file with metadata.
This differs from the default build sequence, which exports to ONNX, optimizes, and converts to
float16. From examples/cli:

    turnkey benchmark scripts/hello_world.py --sequence-file extras/example_sequence.py --build-only
    turnkey cache stats hello_world_<hash8>      # sequence: export-pytorch, add-metadata

A custom stage (docs/sequences.md) subclasses Stage and implements fire(input_onnx, output_onnx):
read the ONNX file turnkey hands it, write the transformed model to output_onnx. What it prints
goes to its log (log_add-metadata.txt in the build directory); its output is reused from the
cache until the input model, this class's source or its options change.
"""

from turnkeyml.build.stage import Sequence, Stage
import turnkeyml.build.export as export


class AddMetadata(Stage):
    """Writes key=value pairs into the model's metadata_props."""

    def __init__(self, **metadata):
        super().__init__(unique_name="add-metadata", monitor_message="Adding metadata",
                         **metadata)

    def fire(self, input_onnx, output_onnx):
        import onnx  # imported when the stage runs, so reading this file stays fast

        model = onnx.load(input_onnx)
        for key, value in sorted(self.options.items()):
            entry = model.metadata_props.add()
            entry.key, entry.value = key, str(value)
            print("metadata %s = %s" % (key, value))
        onnx.save(model, output_onnx)


def get_sequence():
    return Sequence(
        unique_name="example_sequence",
        monitor_message="Example pytorch sequence that only exports ONNX",
        stages=[
            export.ExportPytorchModel(),
            AddMetadata(built_with="turnkey", sequence="example_sequence"),
            export.SuccessStage(),
        ],
        enable_model_validation=True,
    )
