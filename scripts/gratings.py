"""A synthetic image-classification task, so that a CNN can be trained here in minutes and its
predictions have the margins of a trained network (a random-weight network's top-1 is chaotic:
bench/cnn_sensitivity.py).  Used by gen_models.py (to train resnet50_gratings) and by
bench/precision.py (to draw the inputs on which bf16 and float32 top-1 are compared).

Each image is a sine grating with additive noise.  The class is the grating's orientation,
quantised into CLASSES equal bins over [0, pi); the orientation itself is drawn uniformly, so
some images lie near a class boundary and are genuinely ambiguous, as in real data.  Spatial
frequency, phase, colour and contrast are drawn at random too.  Needs only numpy."""
import numpy as np

CLASSES = 16


def images(n, rng, size=224):
    """n images [n, 3, size, size] float32 and their labels [n] int64, from a numpy RandomState."""
    theta = rng.uniform(0.0, np.pi, n)
    label = np.minimum((theta / (np.pi / CLASSES)).astype(np.int64), CLASSES - 1)
    freq = rng.uniform(0.04, 0.12, n)            # cycles per pixel
    phase = rng.uniform(0.0, 2 * np.pi, n)
    contrast = rng.uniform(0.5, 1.5, n)
    colour = 1.0 + 0.3 * rng.standard_normal((n, 3))
    coords = np.arange(size, dtype=np.float64)
    out = np.empty((n, 3, size, size), np.float32)
    for i in range(n):
        ramp = (coords[None, :] * np.cos(theta[i]) + coords[:, None] * np.sin(theta[i]))
        g = contrast[i] * np.sin(2 * np.pi * freq[i] * ramp + phase[i])
        out[i] = (g[None] * colour[i][:, None, None]
                  + 0.5 * rng.standard_normal((3, size, size))).astype(np.float32)
    return out, label
