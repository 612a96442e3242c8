"""Keras 3 on the jax backend: a small Sequential model, compiled and fitted for one epoch."""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")  # before keras is imported

import keras  # noqa: E402
import numpy as np  # noqa: E402

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse", jit_compile=True)
rng = np.random.RandomState(0)
x, y = rng.normal(size=(64, 8)).astype("float32"), rng.normal(size=(64, 1)).astype("float32")
history = model.fit(x, y, batch_size=32, epochs=1, verbose=0)
print("loss", history.history["loss"][-1])
