/* Image decoders for ImageDecoder (text family).  BMP (uncompressed 8/24/32-bit), binary PNM
 * (P5/P6), PNG (8-bit, not interlaced) and baseline uncompressed TIFF are decoded here; JPEG,
 * JPEG 2000 and WebP through Debian's libjpeg-turbo, libopenjp2 and libwebp, with the settings
 * PIL uses by default (so outputs match onnx's PIL-based reference). */
#ifndef GE_BACKEND_CPU_REF_IMAGE_DECODE_H
#define GE_BACKEND_CPU_REF_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>

typedef enum ge_image_status {
  GE_IMAGE_OK = 0,
  GE_IMAGE_INVALID,     /* malformed or truncated data, or not an image at all */
  GE_IMAGE_UNSUPPORTED, /* a well-formed image using a variant ge does not decode */
  GE_IMAGE_NO_MEMORY,
} ge_image_status;

typedef struct ge_image_error {
  ge_image_status status;
  const char *format; /* static: "JPEG", "JPEG 2000", "WebP", "PNG", ... or "unknown" */
  char msg[256];      /* what went wrong, without the format name */
} ge_image_error;

/* Decodes data[0..n) into a malloc'd H x W x 3 RGB buffer (alpha dropped, grayscale
 * replicated).  Returns NULL with *err filled when it cannot; err->status is GE_IMAGE_OK and
 * err->format names the format on success. */
uint8_t *ge_image_decode_rgb(const uint8_t *data, size_t n, int64_t *h, int64_t *w,
                             ge_image_error *err);

#endif
