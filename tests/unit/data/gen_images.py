#!/usr/bin/env python3
"""Writes the small images test_image_decode.c decodes, and what PIL decodes them to.

    .venv/bin/python tests/unit/data/gen_images.py

For every <case>.<ext> it writes <case>.ppm: PIL's RGB decode (what onnx's reference
ImageDecoder returns for pixel_format="RGB"), and <case>.pgm: PIL's img.convert("L")
(pixel_format="Grayscale").  The images are deterministic; rerunning rewrites the same bytes
as long as the encoders do not change.
"""

import io
import os

import numpy as np
from PIL import Image

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "images")


def picture(h, w, alpha=False):
    y, x = np.mgrid[0:h, 0:w]
    r = (x * 255 // max(w - 1, 1)).astype(np.uint8)
    g = (y * 255 // max(h - 1, 1)).astype(np.uint8)
    b = (((x // 3 + y // 3) % 2) * 200 + 30).astype(np.uint8)
    ch = [r, g, b]
    if alpha:
        ch.append(((x + y) * 13 % 256).astype(np.uint8))
    return np.stack(ch, axis=2)


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def case(name, img, fmt, ext, **kw):
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    data = buf.getvalue()
    write(name + "." + ext, data)
    dec = Image.open(io.BytesIO(data))
    rgb = np.array(dec.convert("RGB"))
    gray = np.array(dec.convert("L"))
    h, w = gray.shape
    write(name + ".ppm", b"P6\n%d %d\n255\n" % (w, h) + rgb.tobytes())
    write(name + ".pgm", b"P5\n%d %d\n255\n" % (w, h) + gray.tobytes())


def main():
    os.makedirs(OUT, exist_ok=True)
    rgb = Image.fromarray(picture(17, 23))
    rgba = Image.fromarray(picture(17, 23, alpha=True), "RGBA")
    gray = rgb.convert("L")
    case("jpeg_420", rgb, "JPEG", "jpg", quality=80)
    case("jpeg_444", rgb, "JPEG", "jpg", quality=90, subsampling=0)
    case("jpeg_422_progressive", rgb, "JPEG", "jpg", quality=75, subsampling=1, progressive=True)
    case("jpeg_gray", gray, "JPEG", "jpg", quality=85)
    case("jp2_rgb", rgb, "JPEG2000", "jp2")
    case("j2k_gray", gray, "JPEG2000", "j2k", irreversible=True)
    case("webp_lossy", rgb, "WEBP", "webp", quality=70)
    case("webp_lossless", rgb, "WEBP", "webp", lossless=True)
    case("webp_alpha", rgba, "WEBP", "webp", quality=80)


if __name__ == "__main__":
    main()
