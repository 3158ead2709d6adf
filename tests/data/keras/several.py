# labels: test_group::keras
"""Three tiny Keras models of the three kinds in one script: a subclassed model called twice
with one signature, a functional model with two inputs, and a Sequential stack with BatchNorm
and Dropout (inference mode matters to them). tests/e2e/test_keras.cpp runs it."""
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)


class Subclassed(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(8, activation="relu")
        self.head = tf.keras.layers.Dense(3)

    def call(self, x):
        return self.head(self.hidden(x))


a = tf.keras.Input(shape=(6,), name="a")
b = tf.keras.Input(shape=(4,), name="b")
merged = tf.keras.layers.Concatenate()([tf.keras.layers.Dense(5)(a), b])
functional = tf.keras.Model(inputs=[a, b], outputs=tf.keras.layers.Dense(2)(merged))

sequential = tf.keras.Sequential([
    tf.keras.Input(shape=(8, 8, 3)),
    tf.keras.layers.Conv2D(4, 3, activation="relu"),
    tf.keras.layers.BatchNormalization(),
    tf.keras.layers.Dropout(0.5),
    tf.keras.layers.GlobalAveragePooling2D(),
    tf.keras.layers.Dense(2, activation="softmax"),
])

subclassed = Subclassed()
x = tf.random.uniform((2, 6))
print("subclassed", subclassed(x).shape)
print("subclassed", subclassed(x + 1.0).shape)
print("functional", functional([np.ones((1, 6), "float32"), np.ones((1, 4), "float32")]).shape)
print("sequential", sequential(tf.random.uniform((1, 8, 8, 3)), training=False).shape)
