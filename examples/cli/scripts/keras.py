# labels: name::keras_hello_world test_group::b
"""
hello_world.py with a TensorFlow Keras model: turnkey discovers `keras_model` (a subclassed
tf.keras.Model) when the script calls it, exports it to ONNX with tf2onnx and benchmarks it.
It needs the Keras interpreter (scripts/setup-keras):

    turnkey examples/cli/scripts/keras.py --python .deps/keras/bin/python3
"""
import tensorflow as tf

tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow seeds (Keras 3 draws its own)


class SmallKerasModel(tf.keras.Model):
    """One fully connected layer with a ReLU."""

    def __init__(self, output_size):
        super().__init__()
        self.dense = tf.keras.layers.Dense(output_size, activation="relu")

    def call(self, x):
        return self.dense(x)


batch_size = 1
input_size = 10
output_size = 5

keras_model = SmallKerasModel(output_size)
inputs = tf.random.uniform((batch_size, input_size), dtype=tf.float32)

keras_outputs = keras_model(inputs, training=False)

print(f"keras_outputs: {keras_outputs}")
