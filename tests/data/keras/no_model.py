"""Imports TensorFlow and calls no model: under an interpreter without TensorFlow, one line says
what to install; under the Keras interpreter, zero models."""
import tensorflow as tf

print("tensorflow", tf.__version__)
