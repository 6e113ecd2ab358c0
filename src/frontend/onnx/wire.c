/* A guard run before protobuf-c parses untrusted bytes: walks the protobuf wire format of a
 * ModelProto using the generated descriptors and rejects malformed streams and messages
 * nested deeper than GE_ONNX_MAX_MESSAGE_DEPTH (protobuf-c recurses once per nesting level
 * with no limit of its own, so a hostile file could otherwise exhaust the stack). */
#include <string.h>

#include "frontend/onnx/onnx.h"
#include "ge_onnx.pb-c.h"

typedef struct wire_cur {
  const uint8_t *p, *end;
} wire_cur;

static bool wire_varint(wire_cur *c, uint64_t *out) {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (c->p >= c->end) return false;
    uint8_t b = *c->p++;
    if (shift == 63 && (b & 0x7e)) return false;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

/* 0 ok, 1 malformed, 2 too deep */
static int wire_walk(const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *d,
                     int depth) {
  if (depth > GE_ONNX_MAX_MESSAGE_DEPTH) return 2;
  wire_cur c = {p, end};
  while (c.p < c.end) {
    uint64_t key;
    if (!wire_varint(&c, &key)) return 1;
    uint64_t num = key >> 3;
    unsigned wt = (unsigned)(key & 7);
    if (num == 0 || num > 536870911u) return 1;
    switch (wt) {
      case 0: {
        uint64_t v;
        if (!wire_varint(&c, &v)) return 1;
        break;
      }
      case 1:
        if ((size_t)(c.end - c.p) < 8) return 1;
        c.p += 8;
        break;
      case 5:
        if ((size_t)(c.end - c.p) < 4) return 1;
        c.p += 4;
        break;
      case 2: {
        uint64_t len;
        if (!wire_varint(&c, &len)) return 1;
        if (len > (uint64_t)(c.end - c.p)) return 1;
        const ProtobufCFieldDescriptor *f =
            d ? protobuf_c_message_descriptor_get_field(d, (unsigned)num) : NULL;
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
          int r = wire_walk(c.p, c.p + len, (const ProtobufCMessageDescriptor *)f->descriptor,
                            depth + 1);
          if (r) return r;
        }
        c.p += len;
        break;
      }
      default:
        return 1; /* groups (3, 4) and invalid wire types */
    }
  }
  return 0;
}

ge_status ge_onnx_check_wire(const void *data, size_t size, const char *label) {
  const uint8_t *p = data;
  int r = wire_walk(p, p + size, &ge_onnx__model_proto__descriptor, 0);
  if (r == 1)
    return ge_error(GE_ERR_PARSE, "%s: not a valid ONNX model (protobuf parse failed)", label);
  if (r == 2)
    return ge_error(GE_ERR_PARSE,
                    "%s: not a valid ONNX model (messages nested deeper than %d levels)", label,
                    GE_ONNX_MAX_MESSAGE_DEPTH);
  return GE_OK;
}

bool ge_onnx_wire_fields(const void *data, size_t size, uint64_t *varint_fields,
                         uint64_t *len_fields) {
  wire_cur c = {data, (const uint8_t *)data + size};
  *varint_fields = *len_fields = 0;
  while (c.p < c.end) {
    uint64_t key, v;
    if (!wire_varint(&c, &key)) return false;
    uint64_t num = key >> 3;
    unsigned wt = (unsigned)(key & 7);
    if (num == 0 || num > 536870911u) return false;
    uint64_t bit = num < 64 ? (uint64_t)1 << num : 0;
    switch (wt) {
      case 0:
        if (!wire_varint(&c, &v)) return false;
        *varint_fields |= bit;
        break;
      case 1:
        if ((size_t)(c.end - c.p) < 8) return false;
        c.p += 8;
        break;
      case 5:
        if ((size_t)(c.end - c.p) < 4) return false;
        c.p += 4;
        break;
      case 2:
        if (!wire_varint(&c, &v) || v > (uint64_t)(c.end - c.p)) return false;
        c.p += v;
        *len_fields |= bit;
        break;
      default:
        return false;
    }
  }
  return true;
}
