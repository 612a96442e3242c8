"""TensorFlow: a Keras model whose training step compiles with XLA (jit_compile=True), on the CPU."""

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
model = tf.keras.Sequential(
    [tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)]
)
model.compile(optimizer="adam", loss="mse", jit_compile=True)
rng = np.random.RandomState(0)
history = model.fit(
    rng.normal(size=(64, 8)).astype("float32"),
    rng.normal(size=(64, 1)).astype("float32"),
    batch_size=32,
    epochs=1,
    verbose=0,
)
print("loss", history.history["loss"][-1])
