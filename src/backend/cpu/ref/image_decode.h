/* Small image decoders for ImageDecoder (text family): BMP (uncompressed 8/24/32-bit),
 * binary PNM (P5/P6) and baseline uncompressed TIFF (8-bit RGB/RGBA/grayscale).  Other
 * formats (JPEG, JPEG 2000, PNG, WebP) are recognised and declined with their name. */
#ifndef GE_BACKEND_CPU_REF_IMAGE_DECODE_H
#define GE_BACKEND_CPU_REF_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>

/* Decodes data[0..n) into a malloc'd H x W x 3 RGB buffer.  Returns NULL with *why set
 * (a static string) when the data is not an image it decodes; *why is "out of memory" when
 * an allocation failed. */
uint8_t *ge_image_decode_rgb(const uint8_t *data, size_t n, int64_t *h, int64_t *w,
                             const char **why);

#endif
