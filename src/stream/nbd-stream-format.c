/* ferry: the NBD stream format (doc/nbd-stream.md). */
#include "nbd-stream-format.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>

/* CRC32C, reflected polynomial 0x82F63B78, one table built on first use.
 * Only headers are checksummed, so a byte at a time is fast enough. */
uint32_t
stream_crc32c (const void *buf, size_t len)
{
  static uint32_t table[256];
  static bool ready;
  const uint8_t *p = buf;
  uint32_t crc = 0xFFFFFFFFu;

  if (!__atomic_load_n (&ready, __ATOMIC_ACQUIRE)) {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++)
        c = (c >> 1) ^ (0x82F63B78u & -(c & 1));
      table[i] = c;
    }
    __atomic_store_n (&ready, true, __ATOMIC_RELEASE);
  }
  while (len--)
    crc = table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

static void
put32 (uint8_t *p, uint32_t v)
{
  for (int i = 3; i >= 0; i--, v >>= 8)
    p[i] = v & 0xFF;
}

static void
put64 (uint8_t *p, uint64_t v)
{
  for (int i = 7; i >= 0; i--, v >>= 8)
    p[i] = v & 0xFF;
}

static uint32_t
get32 (const uint8_t *p)
{
  return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static uint64_t
get64 (const uint8_t *p)
{
  return (uint64_t) get32 (p) << 32 | get32 (p + 4);
}

void
stream_encode_header (uint8_t *out, const struct stream_header *header)
{
  stream_encode_header_version (out, header, STREAM_VERSION);
}

void
stream_encode_header_version (uint8_t *out, const struct stream_header *header,
                              uint32_t version)
{
  memcpy (out, STREAM_MAGIC, 8);
  put32 (out + 8, version);
  put32 (out + 12, header->flags);
  put64 (out + 16, header->size);
  put32 (out + 24, header->block_size);
  put32 (out + 28, 0);
  put32 (out + 32, stream_crc32c (out, 32));
}

void
stream_encode_record (uint8_t *out, enum stream_record_type type,
                      uint64_t offset, uint64_t length)
{
  put32 (out, type);
  put64 (out + 4, offset);
  put64 (out + 12, length);
  put32 (out + 20, stream_crc32c (out, 20));
}

static void
encode_end_as (uint8_t *out, enum stream_record_type type, uint64_t offset,
               const struct stream_end *end)
{
  uint8_t *body = out + STREAM_RECORD_SIZE;

  stream_encode_record (out, type, offset, STREAM_END_BODY_SIZE);
  put64 (body, end->data_records);
  put64 (body + 8, end->zero_records);
  put64 (body + 16, end->data_bytes);
  put64 (body + 24, end->zero_bytes);
  memcpy (body + 32, end->digest, STREAM_DIGEST_SIZE);
  put32 (body + 64, stream_crc32c (body, 64));
}

void
stream_encode_cdata (uint8_t *out, uint64_t offset, uint64_t length, uint32_t packed)
{
  stream_encode_record (out, STREAM_CDATA, offset, length);
  put32 (out + STREAM_RECORD_SIZE, packed);
  put32 (out + STREAM_RECORD_SIZE + 4, stream_crc32c (out + STREAM_RECORD_SIZE, 4));
}

void
stream_encode_end (uint8_t *out, uint64_t size, const struct stream_end *end)
{
  encode_end_as (out, STREAM_END, size, end);
}

void
stream_encode_range_end (uint8_t *out, uint64_t offset, const struct stream_end *end)
{
  encode_end_as (out, STREAM_RANGE_END, offset, end);
}

bool
stream_decode_record (const uint8_t *in, uint32_t *type, uint64_t *offset, uint64_t *length)
{
  if (get32 (in + 20) != stream_crc32c (in, 20))
    return false;
  *type = get32 (in);
  *offset = get64 (in + 4);
  *length = get64 (in + 12);
  return true;
}

void
stream_parser_init (struct stream_parser *p)
{
  memset (p, 0, sizeof *p);
  p->state = STREAM_IN_HEADER;
}

static size_t __attribute__ ((format (printf, 3, 4)))
fail (struct stream_parser *p, struct stream_event *ev, const char *fmt, ...);

/* Every message ends with where it happened: the stream byte at which the
 * offending part began, and the export offset the stream had reached. */
static size_t
fail (struct stream_parser *p, struct stream_event *ev, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start (ap, fmt);
  n = vsnprintf (p->error, sizeof p->error, fmt, ap);
  va_end (ap);
  if (n >= 0 && (size_t) n < sizeof p->error)
    snprintf (p->error + n, sizeof p->error - n,
              " (stream byte %" PRIu64 ", export offset %" PRIu64 ")",
              p->position - p->have, p->next_offset);
  p->state = STREAM_IN_FAILED;
  ev->kind = STREAM_EVENT_ERROR;
  return 0;
}

static bool
block_size_allowed (uint32_t b)
{
  return b >= 4096 && b <= 16777216 && (b & (b - 1)) == 0;
}

static size_t
parse_header (struct stream_parser *p, struct stream_event *ev)
{
  const uint8_t *b = p->buf;

  if (memcmp (b, STREAM_MAGIC, 8) != 0)
    return fail (p, ev, "not a ferry NBD stream (bad magic)");
  if (get32 (b + 32) != stream_crc32c (b, 32))
    return fail (p, ev, "stream header checksum mismatch");
  p->ranged = p->accept_ranges && get32 (b + 8) == STREAM_VERSION_RANGES;
  if (get32 (b + 8) != STREAM_VERSION && !p->ranged)
    return fail (p, ev, "unsupported stream version %" PRIu32 " (this ferry reads %d%s)",
                 get32 (b + 8), STREAM_VERSION,
                 get32 (b + 8) == STREAM_VERSION_RANGES
                 ? "; version 2 is the ranged stream of --streams" : "");
  p->header.flags = get32 (b + 12);
  p->header.size = get64 (b + 16);
  p->header.block_size = get32 (b + 24);
  if (p->header.flags & ~(STREAM_FLAG_DIGEST | STREAM_FLAG_DELTA | STREAM_FLAG_COMPRESS))
    return fail (p, ev, "unknown stream flags 0x%" PRIx32, p->header.flags);
  if (p->header.flags & STREAM_FLAG_DELTA && !p->allow_delta)
    return fail (p, ev, "a delta stream (flag DELTA), which this reader was not asked to apply");
  if (!block_size_allowed (p->header.block_size) || get32 (b + 28) != 0)
    return fail (p, ev, "invalid stream block size %" PRIu32, p->header.block_size);
  p->state = STREAM_IN_RECORD;
  p->have = 0;
  ev->kind = STREAM_EVENT_HEADER;
  return 0;
}

/* END and RANGE_END: the body that follows. */
static size_t
expect_end_body (struct stream_parser *p, struct stream_event *ev, const char *name,
                 uint64_t length)
{
  if (length != STREAM_END_BODY_SIZE)
    return fail (p, ev, "%s record length %" PRIu64 ", expected %d", name, length,
                 STREAM_END_BODY_SIZE);
  p->state = STREAM_IN_END_BODY;
  p->have = 0;
  return 0;
}

/* @what's [@offset, +@length) must be inside an export of @size bytes,
 * not empty, and on block boundaries (its end may be the export's); false
 * (the parser failed) if not. */
static bool
check_extent (struct stream_parser *p, struct stream_event *ev, const char *what,
              uint64_t offset, uint64_t length, uint64_t size)
{
  uint64_t block = p->header.block_size;

  if (length == 0) {
    fail (p, ev, "%s at offset %" PRIu64 " is empty (a record covers at least one byte)",
          what, offset);
    return false;
  }
  if (offset > size || length > size - offset) {
    fail (p, ev, "%s [%" PRIu64 ", +%" PRIu64 ") outside the export of %" PRIu64 " bytes",
          what, offset, length, size);
    return false;
  }
  if (offset % block || (length % block && offset + length != size)) {
    fail (p, ev, "%s [%" PRIu64 ", +%" PRIu64 ") not aligned to the %" PRIu64 "-byte block",
          what, offset, length, block);
    return false;
  }
  return true;
}

static size_t parse_image_record (struct stream_parser *p, struct stream_event *ev,
                                  uint32_t type, uint64_t offset, uint64_t length,
                                  uint64_t size);

/* Version 2: RANGE, its DATA and ZERO records in order, RANGE_END; then
 * another range, or END (outside any range, counts zero). */
static size_t
parse_ranged_record (struct stream_parser *p, struct stream_event *ev, uint32_t type,
                     uint64_t offset, uint64_t length)
{
  uint64_t size = p->header.size;

  if (!p->in_range && type == STREAM_RANGE) {
    if (!check_extent (p, ev, "RANGE", offset, length, size))
      return 0;
    p->in_range = true;
    p->next_offset = offset;
    p->range_end = offset + length;
    p->have = 0;
    ev->kind = STREAM_EVENT_RANGE;
    ev->offset = offset;
    ev->length = length;
    return 0;
  }
  if (!p->in_range && type == STREAM_END) {
    p->next_offset = size;
    return parse_image_record (p, ev, type, offset, length, size);
  }
  if (!p->in_range)
    return fail (p, ev, "record type %" PRIu32 " outside a range", type);
  if (type == STREAM_RANGE_END) {
    /* The records must have covered the range: no gap before its end. */
    if (offset != p->next_offset || offset != p->range_end)
      return fail (p, ev, "RANGE_END at offset %" PRIu64 ", expected %" PRIu64,
                   offset, p->next_offset);
    return expect_end_body (p, ev, "RANGE_END", length);
  }
  if (type != STREAM_DATA && type != STREAM_ZERO && type != STREAM_SAME &&
      type != STREAM_CDATA)
    return fail (p, ev, "record type %" PRIu32 " inside a range", type);
  return parse_image_record (p, ev, type, offset, length, p->range_end);
}

/* STOP: wherever a record may start, in or out of a range. */
static size_t
parse_stop (struct stream_parser *p, struct stream_event *ev, uint64_t offset,
            uint64_t signum)
{
  if (offset != p->next_offset)
    return fail (p, ev, "STOP at offset %" PRIu64 ", expected %" PRIu64, offset,
                 p->next_offset);
  /* What a sender stops for (SIGQUIT cuts it, with no STOP). */
  if (signum != SIGHUP && signum != SIGINT && signum != SIGTERM)
    return fail (p, ev, "STOP record with signal %" PRIu64 ", not SIGHUP, SIGINT or SIGTERM",
                 signum);
  p->have = 0;
  p->stop_signal = signum;
  p->state = STREAM_IN_STOPPED;
  ev->kind = STREAM_EVENT_STOP;
  ev->offset = offset;
  ev->length = signum;
  return 0;
}

static size_t
parse_record (struct stream_parser *p, struct stream_event *ev)
{
  const uint8_t *b = p->buf;
  uint32_t type = get32 (b);
  uint64_t offset = get64 (b + 4), length = get64 (b + 12);
  uint64_t size = p->header.size;

  if (get32 (b + 20) != stream_crc32c (b, 20))
    return fail (p, ev, "record header checksum mismatch");
  if (type == STREAM_SAME && !(p->header.flags & STREAM_FLAG_DELTA))
    return fail (p, ev, "SAME record in a stream without the DELTA flag");
  if (type == STREAM_CDATA && !(p->header.flags & STREAM_FLAG_COMPRESS))
    return fail (p, ev, "CDATA record in a stream without the COMPRESS flag");
  if (type == STREAM_STOP)
    return parse_stop (p, ev, offset, length);
  if (p->ranged)
    return parse_ranged_record (p, ev, type, offset, length);
  if (type != STREAM_DATA && type != STREAM_ZERO && type != STREAM_END &&
      type != STREAM_SAME && type != STREAM_CDATA)
    return fail (p, ev, "unknown record type %" PRIu32, type);
  return parse_image_record (p, ev, type, offset, length, size);
}

/* DATA, CDATA, ZERO and SAME records (and v1's END) within [next_offset, @size). */
static size_t
parse_image_record (struct stream_parser *p, struct stream_event *ev, uint32_t type,
                    uint64_t offset, uint64_t length, uint64_t size)
{
  if (offset != p->next_offset)
    return fail (p, ev, "record at offset %" PRIu64 ", expected %" PRIu64,
                 offset, p->next_offset);
  if (type == STREAM_END) {
    if (offset != size)
      return fail (p, ev, "END at offset %" PRIu64 " before the export's end %" PRIu64,
                   offset, size);
    return expect_end_body (p, ev, "END", length);
  }
  if (!check_extent (p, ev, "record", offset, length, size))
    return 0;
  p->have = 0;
  p->next_offset = offset + length;
  if (type == STREAM_SAME) {
    ev->kind = STREAM_EVENT_SAME;
    ev->offset = offset;
    ev->length = length;
    return 0;
  }
  if (type == STREAM_ZERO) {
    p->counted.zero_records++;
    p->counted.zero_bytes += length;
    ev->kind = STREAM_EVENT_ZERO;
    ev->offset = offset;
    ev->length = length;
    return 0;
  }
  if (length > STREAM_MAX_DATA)
    return fail (p, ev, "%s record of %" PRIu64 " bytes, more than %u",
                 type == STREAM_CDATA ? "CDATA" : "DATA", length, STREAM_MAX_DATA);
  /* A CDATA record counts as the DATA it holds. */
  p->counted.data_records++;
  p->counted.data_bytes += length;
  p->record_offset = offset;
  p->record_length = length;
  p->payload_left = length;
  p->packed_length = 0;
  p->state = type == STREAM_CDATA ? STREAM_IN_CDATA_TRAILER : STREAM_IN_PAYLOAD;
  return 0;
}

/* The compressed payload's size: at least 1 byte, and fewer than the
 * record's (a record that does not shrink goes as DATA), so that a reader
 * holds at most the record's length for it.  The message stays short
 * enough for the position that fail adds, with any offset. */
static size_t
parse_cdata_trailer (struct stream_parser *p, struct stream_event *ev)
{
  const uint8_t *b = p->buf;
  uint32_t packed = get32 (b);

  if (get32 (b + 4) != stream_crc32c (b, 4))
    return fail (p, ev, "CDATA record's size checksum mismatch");
  if (packed == 0 || packed >= p->record_length)
    return fail (p, ev, "CDATA record at offset %" PRIu64 ": compressed size %" PRIu32
                 " of %" PRIu64, p->record_offset, packed, p->record_length);
  p->packed_length = packed;
  p->payload_left = packed;
  p->have = 0;
  p->state = STREAM_IN_PAYLOAD;
  return 0;
}

static size_t
parse_end_body (struct stream_parser *p, struct stream_event *ev)
{
  const uint8_t *b = p->buf;
  struct stream_end *e = &p->end;

  if (get32 (b + 64) != stream_crc32c (b, 64))
    return fail (p, ev, "END record checksum mismatch");
  e->data_records = get64 (b);
  e->zero_records = get64 (b + 8);
  e->data_bytes = get64 (b + 16);
  e->zero_bytes = get64 (b + 24);
  memcpy (e->digest, b + 32, STREAM_DIGEST_SIZE);
  if (e->data_records != p->counted.data_records ||
      e->zero_records != p->counted.zero_records ||
      e->data_bytes != p->counted.data_bytes || e->zero_bytes != p->counted.zero_bytes)
    return fail (p, ev, "END counts (%" PRIu64 " DATA, %" PRIu64 " ZERO records) do not "
                 "match the stream's (%" PRIu64 ", %" PRIu64 ")", e->data_records,
                 e->zero_records, p->counted.data_records, p->counted.zero_records);
  p->have = 0;
  if (p->in_range) {
    /* A range's counts are its own; END's, outside all ranges, are zero. */
    memset (&p->counted, 0, sizeof p->counted);
    p->in_range = false;
    p->state = STREAM_IN_RECORD;
    ev->kind = STREAM_EVENT_RANGE_END;
    return 0;
  }
  if (p->ranged) {
    static const uint8_t no_digest[STREAM_DIGEST_SIZE];
    if (memcmp (e->digest, no_digest, sizeof no_digest) != 0)
      return fail (p, ev, "END of a ranged stream with a digest (each range has its own)");
  }
  p->state = STREAM_IN_DONE;
  ev->kind = STREAM_EVENT_END;
  return 0;
}

/* Collect @want bytes of a fixed-size part into p->buf; true once whole. */
static bool
collect (struct stream_parser *p, size_t want, const uint8_t **buf, size_t *len)
{
  size_t n = want - p->have;

  if (n > *len)
    n = *len;
  memcpy (p->buf + p->have, *buf, n);
  p->have += n;
  p->position += n;
  *buf += n;
  *len -= n;
  return p->have == want;
}

size_t
stream_parser_feed (struct stream_parser *p, const uint8_t *buf, size_t len,
                    struct stream_event *ev)
{
  const uint8_t *start = buf;

  memset (ev, 0, sizeof *ev);
  while (len > 0 || p->state == STREAM_IN_FAILED) {
    switch (p->state) {
    case STREAM_IN_HEADER:
      if (collect (p, STREAM_HEADER_SIZE, &buf, &len))
        parse_header (p, ev);
      break;
    case STREAM_IN_RECORD:
      if (collect (p, STREAM_RECORD_SIZE, &buf, &len))
        parse_record (p, ev);
      break;
    case STREAM_IN_END_BODY:
      if (collect (p, STREAM_END_BODY_SIZE, &buf, &len))
        parse_end_body (p, ev);
      break;
    case STREAM_IN_CDATA_TRAILER:
      if (collect (p, STREAM_CDATA_TRAILER_SIZE, &buf, &len))
        parse_cdata_trailer (p, ev);
      break;
    case STREAM_IN_PAYLOAD: {
      size_t n = len < p->payload_left ? len : (size_t) p->payload_left;
      ev->kind = p->packed_length ? STREAM_EVENT_CDATA : STREAM_EVENT_DATA;
      ev->offset = p->packed_length ? p->packed_length - p->payload_left
                                    : p->record_offset + (p->record_length - p->payload_left);
      ev->length = n;
      ev->data = buf;
      ev->record_offset = p->record_offset;
      ev->record_length = p->record_length;
      ev->packed_length = p->packed_length;
      p->payload_left -= n;
      p->position += n;
      buf += n;
      if (p->payload_left == 0)
        p->state = STREAM_IN_RECORD;
      return buf - start;
    }
    case STREAM_IN_DONE:
    case STREAM_IN_STOPPED:
      fail (p, ev, "%zu unexpected bytes after the %s record", len,
            p->state == STREAM_IN_DONE ? "END" : "STOP");
      return buf - start;
    case STREAM_IN_FAILED:
      ev->kind = STREAM_EVENT_ERROR;
      return buf - start;
    }
    if (ev->kind != STREAM_EVENT_NONE)
      return buf - start;
  }
  return buf - start;
}

bool
stream_parser_eof (struct stream_parser *p)
{
  struct stream_event ev;

  if (p->state == STREAM_IN_DONE)
    return true;
  if (p->state == STREAM_IN_STOPPED)
    fail (p, &ev, "the sender was stopped by SIG%s", sigabbrev_np (p->stop_signal));
  else if (p->state != STREAM_IN_FAILED) {
    const char *where = p->state == STREAM_IN_HEADER ? "in the stream header"
                      : p->state == STREAM_IN_PAYLOAD && p->packed_length
                      ? "in a CDATA payload"
                      : p->state == STREAM_IN_PAYLOAD ? "in a DATA payload"
                      : p->state == STREAM_IN_CDATA_TRAILER ? "in a CDATA record header"
                      : p->state == STREAM_IN_END_BODY ? "in the END record"
                      : p->have ? "in a record header" : "before the END record";
    fail (p, &ev, "stream truncated %s", where);
  }
  return false;
}
