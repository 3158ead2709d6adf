# labels: test_group::keras author::turnkey
"""The Keras export's pieces in-process (python/turnkeyml/discovery/keras_tf2onnx.py and
keras_intermediates.py), on tiny models, with the real TensorFlow, Keras and tf2onnx.

Run by the Keras interpreter (ctest does, label keras, with PYTHONPATH set):
`.deps/keras/bin/python3 tests/python/test_keras_export.py`. What the export stage makes of them
through the binary is tested by tests/e2e/test_keras.cpp.
"""

import os
import shutil
import tempfile
import unittest

import keras
import numpy as np
import onnx
import onnx.numpy_helper
import onnx.reference
import tensorflow as tf

from turnkeyml.discovery import keras_intermediates as kmid
from turnkeyml.discovery import keras_tf2onnx


def _traced(model, shape):
    specs = [tf.TensorSpec(shape, tf.float32, name="inputs")]
    function = tf.function(lambda x: model(x, training=False), input_signature=specs,
                           autograph=False)
    return function, specs


class Conversion(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tk-keras-export-")
        keras.utils.set_random_seed(0)
        # The first kernel (2560 elements) is over tf2onnx's external storage's threshold (1024).
        self.model = keras.Sequential([keras.Input((40,)),
                                       keras.layers.Dense(64, activation="relu"),
                                       keras.layers.Dense(3)])
        self.x = np.random.default_rng(0).standard_normal((2, 40)).astype(np.float32)
        self.expected = self.model(self.x, training=False).numpy()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def _run(self, path):
        session = onnx.reference.ReferenceEvaluator(path)
        return session.run(None, {"inputs": self.x})[0]

    def test_weights_at_most_the_limit_stay_in_the_file(self):
        path = os.path.join(self.dir, "m.onnx")
        function, specs = _traced(self.model, (2, 40))
        model = keras_tf2onnx.convert(function, specs, 17, path, [])
        self.assertEqual(os.listdir(self.dir), ["m.onnx"])
        self.assertFalse(any(t.data_location == onnx.TensorProto.EXTERNAL
                             for t in model.graph.initializer))
        onnx.checker.check_model(path)
        np.testing.assert_allclose(self._run(path), self.expected, rtol=1e-5, atol=1e-6)

    def test_weights_over_the_limit_go_to_one_data_file_named_after_the_model(self):
        path = os.path.join(self.dir, "m.onnx")
        function, specs = _traced(self.model, (2, 40))
        log = []
        keras_tf2onnx.convert(function, specs, 17, path, log, external_bytes=0)
        self.assertEqual(sorted(os.listdir(self.dir)), ["m.onnx", "m.onnx.data"])
        self.assertIn("written to m.onnx.data", "\n".join(log))
        stored = onnx.load(path, load_external_data=False)
        external = [t for t in stored.graph.initializer
                    if t.data_location == onnx.TensorProto.EXTERNAL]
        self.assertEqual([list(t.dims) for t in external], [[40, 64]])
        self.assertEqual({e.value for t in external for e in t.external_data
                          if e.key == "location"}, {"m.onnx.data"})
        onnx.checker.check_model(path)
        np.testing.assert_allclose(self._run(path), self.expected, rtol=1e-5, atol=1e-6)

    def test_tf2onnx_is_left_as_it_was(self):
        from tf2onnx import graph, optimizer

        before = (optimizer._get_optimizers(), graph.Node.update_proto)
        function, specs = _traced(self.model, (2, 40))
        keras_tf2onnx.convert(function, specs, 17, os.path.join(self.dir, "m.onnx"), [])
        self.assertIs(graph.Node.update_proto, before[1])
        self.assertEqual(list(optimizer._get_optimizers().values()), list(before[0].values()))


class Layouts(unittest.TestCase):
    def setUp(self):
        self.nhwc = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)

    def test_equal_shapes_keep_the_value(self):
        np.testing.assert_array_equal(kmid._as_graph_holds(self.nhwc, [2, 3, 4, 5]), self.nhwc)

    def test_a_channels_first_tensor_gets_the_value_transposed(self):
        got = kmid._as_graph_holds(self.nhwc, [2, 5, 3, 4])
        np.testing.assert_array_equal(got, np.transpose(self.nhwc, [0, 3, 1, 2]))

    def test_unit_axes_only_reshape(self):
        pooled = np.arange(8, dtype=np.float32).reshape(1, 8)
        np.testing.assert_array_equal(kmid._as_graph_holds(pooled, [1, 8, 1, 1]),
                                      pooled.reshape(1, 8, 1, 1))

    def test_other_shapes_unknown_dims_and_ambiguous_layouts_are_skipped(self):
        self.assertIsNone(kmid._as_graph_holds(self.nhwc, [2, 4, 3, 5]))
        self.assertIsNone(kmid._as_graph_holds(self.nhwc, [2, None, 4, 5]))
        self.assertIsNone(kmid._as_graph_holds(self.nhwc, None))
        cube = np.arange(2 * 3 * 3 * 3, dtype=np.float32).reshape(2, 3, 3, 3)
        self.assertIsNone(kmid._as_graph_holds(cube, [2, 3, 3, 3]))

    def test_signal(self):
        self.assertFalse(kmid.has_signal([np.full((2, 3), 0.1), np.zeros(0), [np.nan, np.nan]]))
        self.assertTrue(kmid.has_signal([np.full(3, 0.1), np.array([0.0, np.nan, 1.0])]))
        # Subnormal float32 numbers read as zero, as the core's comparison reads them.
        self.assertFalse(kmid.has_signal([np.array([2.5e-39, -1e-40, 0.0], np.float32)]))
        self.assertTrue(kmid.has_signal([np.array([np.finfo(np.float32).tiny, 0], np.float32)]))


class Intermediates(unittest.TestCase):
    def test_a_constant_softmax_is_checked_on_the_classifiers_input_in_the_graphs_layout(self):
        keras.utils.set_random_seed(0)
        images = keras.Input((8, 8, 3))
        features = keras.layers.Conv2D(4, 3, activation="relu", name="conv")(images)
        pooled = keras.layers.GlobalAveragePooling2D(name="pool")(features)
        scores = keras.layers.Dense(5, activation="softmax", kernel_initializer="zeros",
                                    name="classifier")(pooled)
        model = keras.Model(images, scores)
        x = np.random.default_rng(0).uniform(size=(1, 8, 8, 3)).astype(np.float32)
        folder = tempfile.mkdtemp(prefix="tk-keras-mid-")
        self.addCleanup(shutil.rmtree, folder)
        path = os.path.join(folder, "m.onnx")
        function, specs = _traced(model, (1, 8, 8, 3))
        traced, eager = [], []
        with kmid.layer_inputs(model, traced):
            converted = keras_tf2onnx.convert(function, specs, 17, path, [])
        with kmid.layer_inputs(model, eager):
            outputs = model(x, training=False).numpy()
        self.assertFalse(kmid.has_signal([outputs]))
        saved = {}
        found = kmid.capture(converted, eager, traced, folder,
                             lambda p, name, a: saved.update({name: (p, a)}))
        self.assertEqual(len(found), 1)
        self.assertEqual(found[0]["module"], "classifier")
        tensor = found[0]["tensor"]
        # The graph computes that tensor, and Keras's value laid out as the graph holds it.
        checked = onnx.load(path)
        checked.graph.output.append(onnx.helper.make_empty_tensor_value_info(tensor))
        value = onnx.reference.ReferenceEvaluator(checked).run([tensor], {"inputs": x})[0]
        np.testing.assert_allclose(value, saved[tensor][1], rtol=1e-5, atol=1e-6)
        self.assertTrue(kmid.has_signal([value]))


if __name__ == "__main__":
    unittest.main()
