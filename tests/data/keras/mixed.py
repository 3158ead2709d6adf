# labels: test_group::keras
"""A PyTorch model and a Keras model in one script: both are discovered and benchmarked by one
interpreter (scripts/setup-keras layers TensorFlow over the PyPI torch)."""
import tensorflow as tf
import torch

torch.manual_seed(0)
tf.keras.utils.set_random_seed(0)

torch_model = torch.nn.Sequential(torch.nn.Linear(10, 4), torch.nn.ReLU())
keras_model = tf.keras.Sequential([tf.keras.Input(shape=(10,)), tf.keras.layers.Dense(4)])

print("torch", torch_model(torch.rand(1, 10)).shape)
print("keras", keras_model(tf.random.uniform((1, 10))).shape)
