/* sg_kv_proto.c: LMCache's remote protocol headers and keys (see the
 * header). Pure: no I/O, no allocation. */
#include "kvstore/sg_kv_proto.h"

#include <stdbool.h>
#include <string.h>

static int32_t get_i32(const uint8_t *p) {
  uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
               (uint32_t)p[3] << 24;
  return (int32_t)v;
}

static void put_i32(uint8_t *p, int32_t x) {
  uint32_t v = (uint32_t)x;
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

/* ---- keys ---- */

/* Strict UTF-8 as Python's bytes.decode() accepts it: no overlong forms, no
 * surrogates, nothing above U+10FFFF. */
static bool utf8_ok(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t len;
    unsigned min, cp;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, min = 0x10000, cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i < len)
      return false;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80)
        return false;
      cp = cp << 6 | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

/* The ASCII characters Python's str.strip() removes (non-ASCII whitespace
 * is left in place: see docs/kvstore.md). */
static bool py_space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Python's int(text, base) for base 10 or 16, printed back the way Python
 * prints the number (str() or format(x, "x")): surrounding whitespace, a
 * sign, a 0x prefix (base 16) and single underscores between digits are
 * accepted; leading zeros and "+" dropped; -0 is 0. Appends to out at *o.
 * The text is never longer than what it produces, so out cannot overflow. */
static bool py_int(const unsigned char *s, size_t n, int base, char *out,
                   size_t *o) {
  while (n && py_space(s[0]))
    s++, n--;
  while (n && py_space(s[n - 1]))
    n--;
  bool neg = false;
  if (n && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s++, n--;
  }
  bool prefix = false;
  if (base == 16 && n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s += 2, n -= 2;
    prefix = true;
  }
  char digits[SG_KV_KEY_MAX];
  size_t nd = 0;
  bool prev_digit = prefix; /* "0x_1" is valid: _ may follow the prefix */
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '_') {
      if (!prev_digit)
        return false;
      prev_digit = false;
      continue;
    }
    int v = base == 16 ? hexval(s[i]) : (s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : -1);
    if (v < 0)
      return false;
    digits[nd++] = "0123456789abcdef"[v];
    prev_digit = true;
  }
  if (nd == 0 || !prev_digit)
    return false;
  size_t first = 0;
  while (first + 1 < nd && digits[first] == '0')
    first++;
  bool zero = nd - first == 1 && digits[first] == '0';
  if (neg && !zero)
    out[(*o)++] = '-';
  memcpy(out + *o, digits + first, nd - first);
  *o += nd - first;
  return true;
}

/* LMCache's TORCH_DTYPE_TO_STR_DTYPE values, the dtype names a key may
 * carry. */
static const char *const key_dtypes[] = {
    "half",  "bfloat16",   "float",        "double",   "int8",
    "uint8", "int16",      "int32",        "int64",    "bool",
    "fp8_e4m3fn", "fp8_e4m3fnuz", "fp8_e5m2", "fp8_e5m2fnuz"};

static bool key_dtype_ok(const char *s, size_t n) {
  for (size_t i = 0; i < sizeof key_dtypes / sizeof key_dtypes[0]; i++)
    if (strlen(key_dtypes[i]) == n && memcmp(key_dtypes[i], s, n) == 0)
      return true;
  return false;
}

typedef struct part {
  const char *s;
  size_t n;
} part;

static void emit(char *out, size_t *o, const char *s, size_t n) {
  memcpy(out + *o, s, n);
  *o += n;
}

/* Tags "name%value" after the fixed parts, merged as LMCache's dict does: a
 * repeated name keeps its first position and takes the last value. */
static int emit_tags(const part *p, size_t np, char *out, size_t *o,
                     sg_err *err) {
  for (size_t i = 0; i < np; i++) {
    const char *pct = memchr(p[i].s, '%', p[i].n);
    if (!pct)
      return sg_err_set(err, SG_EPROTO, "key: tag \"%.*s\" has no '%%'",
                        (int)p[i].n, p[i].s);
  }
  for (size_t i = 0; i < np; i++) {
    size_t name_n = (size_t)((const char *)memchr(p[i].s, '%', p[i].n) - p[i].s);
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++)
      seen = p[j].n > name_n && p[j].s[name_n] == '%' &&
             memcmp(p[j].s, p[i].s, name_n) == 0;
    if (seen)
      continue;
    size_t last = i; /* the last tag with this name gives the value */
    for (size_t j = i + 1; j < np; j++)
      if (p[j].n > name_n && p[j].s[name_n] == '%' &&
          memcmp(p[j].s, p[i].s, name_n) == 0)
        last = j;
    out[(*o)++] = '@';
    emit(out, o, p[i].s, name_n);
    emit(out, o, p[last].s + name_n, p[last].n - name_n);
  }
  return 0;
}

int sg_kv_key_canon(const char *raw, size_t n, char *out, size_t *out_len,
                    sg_err *err) {
  const unsigned char *s = (const unsigned char *)raw;
  if (n > SG_KV_KEY_MAX)
    return sg_err_set(err, SG_EPROTO, "key: %zu bytes, over %d", n,
                      SG_KV_KEY_MAX);
  if (!utf8_ok(s, n))
    return sg_err_set(err, SG_EPROTO, "key: not UTF-8");
  while (n && py_space(s[0]))
    s++, n--;
  while (n && py_space(s[n - 1]))
    n--;
  part p[SG_KV_KEY_MAX + 1];
  size_t np = 0;
  size_t start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || s[i] == '@') {
      p[np].s = (const char *)s + start;
      p[np].n = i - start;
      np++;
      start = i + 1;
    }
  }
  bool layer = np >= 6 && p[5].n > 0;
  for (size_t i = 0; layer && i < p[5].n; i++)
    layer = p[5].s[i] >= '0' && p[5].s[i] <= '9';
  if (np < 5)
    return sg_err_set(err, SG_EPROTO,
                      "key: \"%.*s\" is not model@world_size@worker_id@"
                      "chunk_hash@dtype",
                      (int)n, (const char *)s);
  size_t o = 0;
  emit(out, &o, p[0].s, p[0].n);
  out[o++] = '@';
  if (!py_int((const unsigned char *)p[1].s, p[1].n, 10, out, &o))
    return sg_err_set(err, SG_EPROTO, "key: world_size \"%.*s\" is not an "
                      "integer", (int)p[1].n, p[1].s);
  out[o++] = '@';
  if (!py_int((const unsigned char *)p[2].s, p[2].n, 10, out, &o))
    return sg_err_set(err, SG_EPROTO, "key: worker_id \"%.*s\" is not an "
                      "integer", (int)p[2].n, p[2].s);
  out[o++] = '@';
  if (!py_int((const unsigned char *)p[3].s, p[3].n, 16, out, &o))
    return sg_err_set(err, SG_EPROTO, "key: chunk_hash \"%.*s\" is not hex",
                      (int)p[3].n, p[3].s);
  if (!key_dtype_ok(p[4].s, p[4].n))
    return sg_err_set(err, SG_EPROTO, "key: dtype \"%.*s\" is not one of "
                      "LMCache's", (int)p[4].n, p[4].s);
  out[o++] = '@';
  emit(out, &o, p[4].s, p[4].n);
  size_t first_tag = 5;
  if (layer) {
    out[o++] = '@';
    py_int((const unsigned char *)p[5].s, p[5].n, 10, out, &o);
    first_tag = 6;
  }
  if (np > first_tag) {
    int rc = emit_tags(p + first_tag, np - first_tag, out, &o, err);
    if (rc < 0)
      return rc;
  }
  if (o > SG_KV_KEY_MAX)
    return sg_err_set(err, SG_EPROTO, "key: canonical form too long");
  out[o] = 0;
  *out_len = o;
  return 0;
}

/* ---- headers ---- */

int sg_kv_req_parse(const uint8_t *buf, sg_kv_req *r, sg_err *err) {
  memset(r, 0, sizeof *r);
  r->command = get_i32(buf);
  r->length = get_i32(buf + 4);
  r->fmt = get_i32(buf + 8);
  r->dtype = get_i32(buf + 12);
  r->location = get_i32(buf + 16);
  for (int i = 0; i < 4; i++)
    r->shape[i] = get_i32(buf + 20 + 4 * i);
  if (r->command < SG_KV_PUT || r->command > SG_KV_HEALTH)
    return sg_err_set(err, SG_EPROTO, "header: command %d is not 1..5",
                      (int)r->command);
  if (r->fmt < 0 || r->fmt > SG_KV_FMT_MAX)
    return sg_err_set(err, SG_EPROTO, "header: memory format %d is not 0..%d",
                      (int)r->fmt, SG_KV_FMT_MAX);
  if (r->dtype < 0 || r->dtype > SG_KV_DTYPE_MAX)
    return sg_err_set(err, SG_EPROTO, "header: dtype %d is not 0..%d",
                      (int)r->dtype, SG_KV_DTYPE_MAX);
  if (r->location < 0 || r->location > SG_KV_LOCATION_MAX)
    return sg_err_set(err, SG_EPROTO, "header: location %d is not 0..%d",
                      (int)r->location, SG_KV_LOCATION_MAX);
  if (r->command == SG_KV_PUT && r->length < 0)
    return sg_err_set(err, SG_EPROTO, "header: PUT length %d is negative",
                      (int)r->length);
  return sg_kv_key_canon((const char *)buf + 36, SG_KV_KEY_MAX, r->key,
                         &r->key_len, err);
}

void sg_kv_req_pack(const sg_kv_req *r, uint8_t *out) {
  put_i32(out, r->command);
  put_i32(out + 4, r->length);
  put_i32(out + 8, r->fmt);
  put_i32(out + 12, r->dtype);
  put_i32(out + 16, r->location);
  for (int i = 0; i < 4; i++)
    put_i32(out + 20 + 4 * i, r->shape[i]);
  size_t n = r->key_len > SG_KV_KEY_MAX ? SG_KV_KEY_MAX : r->key_len;
  memcpy(out + 36, r->key, n);
  memset(out + 36 + n, ' ', SG_KV_KEY_MAX - n);
}

void sg_kv_reply_pack(const sg_kv_reply *r, uint8_t *out) {
  put_i32(out, r->code);
  put_i32(out + 4, r->length);
  put_i32(out + 8, r->fmt);
  put_i32(out + 12, r->dtype);
  for (int i = 0; i < 4; i++)
    put_i32(out + 16 + 4 * i, r->shape[i]);
  put_i32(out + 32, r->location);
}

void sg_kv_reply_unpack(const uint8_t *buf, sg_kv_reply *r) {
  r->code = get_i32(buf);
  r->length = get_i32(buf + 4);
  r->fmt = get_i32(buf + 8);
  r->dtype = get_i32(buf + 12);
  for (int i = 0; i < 4; i++)
    r->shape[i] = get_i32(buf + 16 + 4 * i);
  r->location = get_i32(buf + 32);
}

void sg_kv_reply_plain(sg_kv_reply *r, int32_t code) {
  memset(r, 0, sizeof *r);
  r->code = code;
  r->fmt = SG_KV_FMT_DEFAULT;
  r->dtype = SG_KV_DTYPE_F16;
}

int32_t sg_kv_dtype_echo(int32_t dtype) { return dtype == 1 ? 2 : dtype; }
