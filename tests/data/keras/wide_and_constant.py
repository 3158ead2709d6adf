"""Two Keras models for the export's limits (tests/e2e/test_keras.cpp):

`wide`: 33.6 M parameters (134 MB) in four Dense layers, a model tf2onnx 1.17 as it comes needs
about 10 GB to convert (75 times its weights), under the test's 3 GB data limit.
`constant`: a convolution, a pooling and a softmax classifier whose zero kernel makes every
output 0.1 whatever the input, as random weights make the MobileNets' softmax constant: the
outputs carry no signal, and the correctness check compares an intermediate tensor instead.
"""
import keras

keras.utils.set_random_seed(0)

wide = keras.Sequential([
    keras.Input((2048,)),
    keras.layers.Dense(4096, activation="relu"),
    keras.layers.Dense(4096, activation="relu"),
    keras.layers.Dense(2048, activation="relu"),
    keras.layers.Dense(16),
], name="wide")
wide(keras.random.uniform((1, 2048), seed=0))

images = keras.Input((16, 16, 3))
features = keras.layers.Conv2D(8, 3, activation="relu", name="conv")(images)
pooled = keras.layers.GlobalAveragePooling2D(name="pool")(features)
scores = keras.layers.Dense(10, activation="softmax", kernel_initializer="zeros",
                            name="classifier")(pooled)
constant = keras.Model(images, scores, name="constant")
print("scores:", constant(keras.random.uniform((1, 16, 16, 3), seed=0))[0, :3])
