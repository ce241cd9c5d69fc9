/* Unit test of the NBD stream parser (src/stream/nbd-stream-format.c): streams
 * built with the encoders are replayed whole, in odd pieces and a byte at
 * a time, and must rebuild the same image; damaged, reordered and
 * truncated ones must fail with a message that names the offset.
 * With file arguments, replays those streams (e.g. real ones that
 * ferry --nbd-send wrote) and exits 0 if each parses to END. */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "nbd-stream-format.h"

#define B STREAM_BLOCK_SIZE

struct replay {
  GByteArray *image;          /* rebuilt: DATA copied, ZERO left zero */
  unsigned events[STREAM_EVENT_STOP + 1];
  GByteArray *packed;         /* CDATA payloads, as they came */
  char error[160];
};

/* Whether replay accepts delta streams (the delta tests set it). */
static bool replay_allow_delta;

/* Feed @stream in pieces of @piece bytes (0: all at once). */
static bool
replay (const uint8_t *stream, size_t len, size_t piece, struct replay *r)
{
  struct stream_parser p;
  struct stream_event ev;
  size_t pos = 0;

  memset (r, 0, sizeof *r);
  r->image = g_byte_array_new ();
  r->packed = g_byte_array_new ();
  stream_parser_init (&p);
  p.allow_delta = replay_allow_delta;
  while (pos < len) {
    size_t n = piece && piece < len - pos ? piece : len - pos;
    const uint8_t *chunk = stream + pos;
    while (n > 0) {
      size_t used = stream_parser_feed (&p, chunk, n, &ev);
      g_assert_cmpuint (used, <=, n);
      chunk += used;
      n -= used;
      pos += used;
      r->events[ev.kind]++;
      switch (ev.kind) {
      case STREAM_EVENT_HEADER:
        g_byte_array_set_size (r->image, p.header.size);
        if (p.header.size > 0)      /* data is NULL for a zero-size image */
          memset (r->image->data, 0xAA, p.header.size);
        break;
      case STREAM_EVENT_DATA:
        g_assert_cmpuint (ev.offset + ev.length, <=, r->image->len);
        g_assert_cmpuint (ev.offset, >=, ev.record_offset);
        memcpy (r->image->data + ev.offset, ev.data, ev.length);
        break;
      case STREAM_EVENT_ZERO:
        memset (r->image->data + ev.offset, 0, ev.length);
        break;
      case STREAM_EVENT_CDATA:
        /* Each payload's pieces in order, from its first byte. */
        g_assert_cmpuint (ev.offset + ev.length, <=, ev.packed_length);
        g_assert_cmpuint (ev.packed_length, <, ev.record_length);
        if (ev.offset == 0)
          g_byte_array_append (r->packed, (const uint8_t *) "|", 1);
        g_byte_array_append (r->packed, ev.data, ev.length);
        break;
      case STREAM_EVENT_ERROR:
        g_strlcpy (r->error, p.error, sizeof r->error);
        return false;
      default:
        break;
      }
    }
  }
  if (!stream_parser_eof (&p)) {
    g_strlcpy (r->error, p.error, sizeof r->error);
    return false;
  }
  return true;
}

static void
replay_free (struct replay *r)
{
  g_byte_array_unref (r->image);
  g_byte_array_unref (r->packed);
}

/* The blocks that a delta stream sends as SAME: 2 and 3 of every 8, and 6. */
static bool
is_same_block (uint64_t index)
{
  return index % 4 == 2 || index % 8 == 3;
}

/* A stream of an image of @size bytes: DATA for blocks whose first byte
 * is non-zero in @image, ZERO otherwise, one record per block; with
 * @delta, SAME records over the runs of is_same_block instead (counted in
 * *@same_blocks). */
static GByteArray *
encode_stream (const uint8_t *image, uint64_t size, bool delta, uint64_t *same_blocks)
{
  GByteArray *s = g_byte_array_new ();
  struct stream_header h = { STREAM_FLAG_DIGEST | (delta ? STREAM_FLAG_DELTA : 0), size, B };
  struct stream_end end = { 0 };
  uint8_t rec[STREAM_RECORD_SIZE + STREAM_END_BODY_SIZE];
  uint64_t n;

  if (same_blocks)
    *same_blocks = 0;
  g_byte_array_set_size (s, STREAM_HEADER_SIZE);
  stream_encode_header (s->data, &h);
  for (uint64_t off = 0; off < size; off += n) {
    bool same = delta && is_same_block (off / B), data = image[off] != 0;
    n = MIN (B, size - off);
    while (same && off + n < size && is_same_block ((off + n) / B))
      n += MIN (B, size - off - n);
    stream_encode_record (rec, same ? STREAM_SAME : data ? STREAM_DATA : STREAM_ZERO,
                          off, n);
    g_byte_array_append (s, rec, STREAM_RECORD_SIZE);
    if (same) {
      *same_blocks += (n + B - 1) / B;
    } else if (data) {
      g_byte_array_append (s, image + off, n);
      end.data_records++;
      end.data_bytes += n;
    } else {
      end.zero_records++;
      end.zero_bytes += n;
    }
  }
  memset (end.digest, 0x5A, sizeof end.digest);
  stream_encode_end (rec, size, &end);
  g_byte_array_append (s, rec, sizeof rec);
  return s;
}

static GByteArray *
make_stream (const uint8_t *image, uint64_t size)
{
  return encode_stream (image, size, false, NULL);
}

static uint8_t *
make_image (uint64_t size)
{
  uint8_t *image = g_malloc0 (size + 1);

  for (uint64_t off = 0; off < size; off++)
    image[off] = (off / B) % 3 == 1 ? 0 : (uint8_t) (off * 7 + 1) | 1;
  return image;
}

static void
test_crc32c (void)
{
  g_assert_cmphex (stream_crc32c ("123456789", 9), ==, 0xE3069283);
}

static void
test_roundtrip (void)
{
  static const size_t pieces[] = { 0, 1, 2, 3, 7, 23, 24, 25, 36, 4095, 65537 };
  static const uint64_t sizes[] = { 0, 1, B - 1, B, 5 * B + 1234 };

  for (size_t s = 0; s < G_N_ELEMENTS (sizes); s++) {
    uint64_t size = sizes[s];
    g_autofree uint8_t *image = make_image (size);
    GByteArray *stream = make_stream (image, size);
    for (size_t i = 0; i < G_N_ELEMENTS (pieces); i++) {
      struct replay r;
      if (!replay (stream->data, stream->len, pieces[i], &r))
        g_error ("size %" G_GUINT64_FORMAT " piece %zu: %s", size, pieces[i], r.error);
      g_assert_cmpuint (r.image->len, ==, size);
      g_assert_true (size == 0 || memcmp (r.image->data, image, size) == 0);
      g_assert_cmpuint (r.events[STREAM_EVENT_HEADER], ==, 1);
      g_assert_cmpuint (r.events[STREAM_EVENT_END], ==, 1);
      replay_free (&r);
    }
    g_byte_array_unref (stream);
  }
}

/* Every strict prefix of a stream is truncated. */
static void
test_truncated (void)
{
  uint64_t size = 3 * B + 10;
  g_autofree uint8_t *image = make_image (size);
  GByteArray *stream = make_stream (image, size);

  for (size_t cut = 0; cut < stream->len; cut += cut < 200 ? 1 : 997) {
    struct replay r;
    g_assert_false (replay (stream->data, cut, 5, &r));
    g_assert_nonnull (strstr (r.error, "truncated"));
    g_assert_nonnull (strstr (r.error, "export offset"));
    replay_free (&r);
  }
  g_byte_array_unref (stream);
}

static void
expect_error (GByteArray *stream, const char *text)
{
  struct replay r;

  g_assert_false (replay (stream->data, stream->len, 0, &r));
  if (!strstr (r.error, text))
    g_error ("expected '%s' in '%s'", text, r.error);
  /* The same error byte by byte. */
  replay_free (&r);
  g_assert_false (replay (stream->data, stream->len, 1, &r));
  g_assert_nonnull (strstr (r.error, text));
  replay_free (&r);
}

/* Flip one bit in each header byte, and in the END body: each is caught. */
static void
test_flipped_header_bytes (void)
{
  uint64_t size = 2 * B;
  g_autofree uint8_t *image = make_image (size);
  GByteArray *stream = make_stream (image, size);
  /* Header, the first record header (DATA), the second (ZERO), END. */
  size_t second = STREAM_HEADER_SIZE + STREAM_RECORD_SIZE + B;
  size_t ranges[][2] = {
    { 0, STREAM_HEADER_SIZE },
    { STREAM_HEADER_SIZE, STREAM_RECORD_SIZE },
    { second, STREAM_RECORD_SIZE },
    { second + STREAM_RECORD_SIZE, STREAM_RECORD_SIZE + STREAM_END_BODY_SIZE },
  };

  for (size_t k = 0; k < G_N_ELEMENTS (ranges); k++)
    for (size_t i = ranges[k][0]; i < ranges[k][0] + ranges[k][1]; i++) {
      struct replay r;
      stream->data[i] ^= 0x10;
      g_assert_false (replay (stream->data, stream->len, 0, &r));
      g_assert_true (strstr (r.error, "checksum") || strstr (r.error, "magic"));
      replay_free (&r);
      stream->data[i] ^= 0x10;
    }
  g_byte_array_unref (stream);
}

/* Records that are well formed one by one but break the rules. */
static void
test_bad_records (void)
{
  struct stream_header h = { 0, 4 * B, B };
  struct stream_end end = { 0 };
  uint8_t rec[STREAM_RECORD_SIZE + STREAM_END_BODY_SIZE];
  struct {
    uint32_t type;
    uint64_t offset, length;
    const char *error;
  } cases[] = {
    { 10, 0, B, "unknown record type 10" },
    { STREAM_ZERO, B, B, "record at offset 65536, expected 0" },
    { STREAM_ZERO, 0, 5 * B, "outside the export" },
    { STREAM_ZERO, 0, 0, "at offset 0 is empty (a record covers at least one byte)" },
    { STREAM_ZERO, 0, 100, "not aligned" },
    { STREAM_END, 0, STREAM_END_BODY_SIZE, "END at offset 0 before" },
  };

  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++) {
    GByteArray *s = g_byte_array_new ();
    g_byte_array_set_size (s, STREAM_HEADER_SIZE);
    stream_encode_header (s->data, &h);
    stream_encode_record (rec, cases[i].type, cases[i].offset, cases[i].length);
    g_byte_array_append (s, rec, STREAM_RECORD_SIZE);
    expect_error (s, cases[i].error);
    g_byte_array_unref (s);
  }

  /* Counts that do not match, and bytes after END. */
  GByteArray *s = g_byte_array_new ();
  g_byte_array_set_size (s, STREAM_HEADER_SIZE);
  stream_encode_header (s->data, &h);
  stream_encode_record (rec, STREAM_ZERO, 0, 4 * B);
  g_byte_array_append (s, rec, STREAM_RECORD_SIZE);
  end.zero_records = 2;
  end.zero_bytes = 4 * B;
  stream_encode_end (rec, 4 * B, &end);
  g_byte_array_append (s, rec, sizeof rec);
  expect_error (s, "END counts");
  g_byte_array_set_size (s, s->len - sizeof rec);
  end.zero_records = 1;
  stream_encode_end (rec, 4 * B, &end);
  g_byte_array_append (s, rec, sizeof rec);
  g_byte_array_append (s, (const uint8_t *) "x", 1);
  expect_error (s, "1 unexpected bytes after the END record");
  g_byte_array_unref (s);

  /* An unknown version, with a valid checksum. */
  s = make_stream (NULL, 0);
  s->data[11] = 2;
  uint32_t crc = GUINT32_TO_BE (stream_crc32c (s->data, 32));
  memcpy (s->data + 32, &crc, 4);
  expect_error (s, "unsupported stream version 2");
  g_byte_array_unref (s);
}

/* A stopped sender's stream: whole records, then STOP with the signal's
 * number at the next record's offset; the parser reports the stop at the
 * end, not a truncation, and refuses a STOP out of place, with a signal
 * that stops no sender, or followed by anything. */
static void
test_stop (void)
{
  uint64_t size = 4 * B;
  g_autofree uint8_t *image = make_image (size);
  struct stream_header h = { STREAM_FLAG_DIGEST, size, B };
  uint8_t rec[STREAM_RECORD_SIZE];
  struct {
    uint64_t offset, signum;
    const char *extra;
    const char *error;
  } cases[] = {
    { B, 15, NULL, "the sender was stopped by SIGTERM (stream byte" },
    { 0, 15, NULL, "STOP at offset 0, expected 65536" },
    { B, 0, NULL, "STOP record with signal 0" },
    { B, 9, NULL, "STOP record with signal 9, not SIGHUP, SIGINT or SIGTERM" },
    { B, 2, "x", "1 unexpected bytes after the STOP record" },
  };

  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++) {
    GByteArray *s = g_byte_array_new ();
    g_byte_array_set_size (s, STREAM_HEADER_SIZE);
    stream_encode_header (s->data, &h);
    stream_encode_record (rec, STREAM_DATA, 0, B);
    g_byte_array_append (s, rec, sizeof rec);
    g_byte_array_append (s, image, B);
    stream_encode_record (rec, STREAM_STOP, cases[i].offset, cases[i].signum);
    g_byte_array_append (s, rec, sizeof rec);
    if (cases[i].extra)
      g_byte_array_append (s, (const uint8_t *) cases[i].extra, strlen (cases[i].extra));
    expect_error (s, cases[i].error);
    if (i == 0) {
      /* What came before the STOP was applied; the STOP was seen once. */
      struct replay r;
      g_assert_false (replay (s->data, s->len, 7, &r));
      g_assert_cmpuint (r.events[STREAM_EVENT_STOP], ==, 1);
      g_assert_cmpmem (r.image->data, B, image, B);
      replay_free (&r);
    }
    g_byte_array_unref (s);
  }
}

/* SAME records leave the destination as it was (the replay's 0xAA), and
 * the rest rebuilds the image; in pieces of any size. */
static void
test_delta_roundtrip (void)
{
  static const size_t pieces[] = { 0, 1, 23, 24, 25, 65537 };
  static const uint64_t sizes[] = { 4 * B, 11 * B + 1234, 19 * B };

  replay_allow_delta = true;
  for (size_t k = 0; k < G_N_ELEMENTS (sizes); k++) {
    uint64_t size = sizes[k], same_blocks;
    g_autofree uint8_t *image = make_image (size);
    GByteArray *stream = encode_stream (image, size, true, &same_blocks);
    g_assert_cmpuint (same_blocks, >, 0);
    for (size_t i = 0; i < G_N_ELEMENTS (pieces); i++) {
      struct replay r;
      uint64_t seen = 0;
      if (!replay (stream->data, stream->len, pieces[i], &r))
        g_error ("size %" G_GUINT64_FORMAT " piece %zu: %s", size, pieces[i], r.error);
      for (uint64_t off = 0; off < size; off += B) {
        uint64_t n = MIN (B, size - off);
        if (is_same_block (off / B)) {
          g_assert_cmpuint (r.image->data[off], ==, 0xAA);
          g_assert_cmpuint (r.image->data[off + n - 1], ==, 0xAA);
          seen++;
        } else {
          g_assert_true (memcmp (r.image->data + off, image + off, n) == 0);
        }
      }
      g_assert_cmpuint (seen, ==, same_blocks);
      /* Runs of two blocks are one record. */
      g_assert_cmpuint (r.events[STREAM_EVENT_SAME], >, 0);
      g_assert_cmpuint (r.events[STREAM_EVENT_SAME], <, same_blocks);
      replay_free (&r);
    }
    g_byte_array_unref (stream);
  }
  replay_allow_delta = false;
}

/* SAME records follow the rules of ZERO ones, and only a delta stream
 * read by a parser that allows deltas may hold them. */
static void
test_delta_bad_records (void)
{
  struct stream_header delta = { STREAM_FLAG_DELTA, 4 * B + 100, B };
  struct stream_header plain = { 0, 4 * B + 100, B };
  uint8_t rec[STREAM_RECORD_SIZE];
  struct {
    const struct stream_header *header;
    bool allow;
    uint32_t type;
    uint64_t offset, length;
    const char *error;
  } cases[] = {
    { &delta, false, STREAM_SAME, 0, B, "a delta stream (flag DELTA), which this reader" },
    { &plain, true, STREAM_SAME, 0, B, "SAME record in a stream without the DELTA flag" },
    { &delta, true, STREAM_SAME, B, B, "record at offset 65536, expected 0" },
    { &delta, true, STREAM_SAME, 0, 0, "is empty" },
    { &delta, true, STREAM_SAME, 0, 5 * B, "outside the export" },
    { &delta, true, STREAM_SAME, 0, B + 1, "not aligned" },
    { &delta, true, 99, 0, B, "unknown record type 99" },
  };

  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++) {
    GByteArray *s = g_byte_array_new ();
    g_byte_array_set_size (s, STREAM_HEADER_SIZE);
    stream_encode_header (s->data, cases[i].header);
    stream_encode_record (rec, cases[i].type, cases[i].offset, cases[i].length);
    g_byte_array_append (s, rec, STREAM_RECORD_SIZE);
    replay_allow_delta = cases[i].allow;
    expect_error (s, cases[i].error);
    g_byte_array_unref (s);
  }

  /* A SAME record after another record must start where it ended, and
   * may end at the export's odd size; END counts no SAME record. */
  GByteArray *s = g_byte_array_new ();
  struct stream_end end = { .zero_records = 1, .zero_bytes = B };
  uint8_t end_rec[STREAM_RECORD_SIZE + STREAM_END_BODY_SIZE];
  struct replay r;
  g_byte_array_set_size (s, STREAM_HEADER_SIZE);
  stream_encode_header (s->data, &delta);
  stream_encode_record (rec, STREAM_ZERO, 0, B);
  g_byte_array_append (s, rec, sizeof rec);
  stream_encode_record (rec, STREAM_SAME, B, 3 * B + 100);
  g_byte_array_append (s, rec, sizeof rec);
  stream_encode_end (end_rec, delta.size, &end);
  g_byte_array_append (s, end_rec, sizeof end_rec);
  replay_allow_delta = true;
  if (!replay (s->data, s->len, 7, &r))
    g_error ("%s", r.error);
  g_assert_cmpuint (r.events[STREAM_EVENT_SAME], ==, 1);
  replay_free (&r);
  /* The same SAME record overlapping the ZERO one. */
  g_byte_array_set_size (s, STREAM_HEADER_SIZE + STREAM_RECORD_SIZE);
  stream_encode_record (rec, STREAM_SAME, 0, 4 * B + 100);
  g_byte_array_append (s, rec, sizeof rec);
  expect_error (s, "record at offset 0, expected 65536");

  /* Flag bits past COMPRESS stay unknown. */
  struct stream_header unknown = { STREAM_FLAG_DELTA | 8, B, B };
  g_byte_array_set_size (s, STREAM_HEADER_SIZE);
  stream_encode_header (s->data, &unknown);
  expect_error (s, "unknown stream flags 0xa");
  replay_allow_delta = false;
  g_byte_array_unref (s);
}

/* A compressed stream: DATA, CDATA (whose payload the parser passes
 * through in pieces, its length and the record's on each), ZERO; in
 * pieces of any size, and the CDATA trailer's rules. */
static void
test_cdata (void)
{
  static const size_t pieces[] = { 0, 1, 23, 24, 25, 31, 32, 33 };
  struct stream_header h = { STREAM_FLAG_DIGEST | STREAM_FLAG_COMPRESS, 3 * B, B };
  struct stream_end end = { 2, 1, 2 * B, B, { 0 } };
  uint8_t buf[STREAM_RECORD_SIZE + STREAM_END_BODY_SIZE];
  GByteArray *s = g_byte_array_new ();
  size_t trailer;

  g_byte_array_set_size (s, STREAM_HEADER_SIZE);
  stream_encode_header (s->data, &h);
  stream_encode_record (buf, STREAM_DATA, 0, B);
  g_byte_array_append (s, buf, STREAM_RECORD_SIZE);
  g_byte_array_set_size (s, s->len + B);
  trailer = s->len + STREAM_RECORD_SIZE;
  stream_encode_cdata (buf, B, B, 5);
  g_byte_array_append (s, buf, STREAM_RECORD_SIZE + STREAM_CDATA_TRAILER_SIZE);
  g_byte_array_append (s, (const uint8_t *) "zstd!", 5);
  stream_encode_record (buf, STREAM_ZERO, 2 * B, B);
  g_byte_array_append (s, buf, STREAM_RECORD_SIZE);
  stream_encode_end (buf, 3 * B, &end);
  g_byte_array_append (s, buf, sizeof buf);
  for (size_t i = 0; i < G_N_ELEMENTS (pieces); i++) {
    struct replay r;
    if (!replay (s->data, s->len, pieces[i], &r))
      g_error ("piece %zu: %s", pieces[i], r.error);
    g_assert_cmpmem (r.packed->data, r.packed->len, "|zstd!", 6);
    g_assert_cmpuint (r.events[STREAM_EVENT_ZERO], ==, 1);
    replay_free (&r);
  }
  /* Its size's CRC, a size of 0 or of the record's length. */
  s->data[trailer + 6] ^= 1;
  expect_error (s, "CDATA record's size checksum mismatch");
  s->data[trailer + 6] ^= 1;
  stream_encode_cdata (s->data + trailer - STREAM_RECORD_SIZE, B, B, 0);
  expect_error (s, "CDATA record at offset 65536: compressed size 0 of 65536 (stream byte");
  stream_encode_cdata (s->data + trailer - STREAM_RECORD_SIZE, B, B, B);
  expect_error (s, "CDATA record at offset 65536: compressed size 65536 of 65536 (stream byte");
  /* Without the flag. */
  h.flags = STREAM_FLAG_DIGEST;
  stream_encode_header (s->data, &h);
  expect_error (s, "CDATA record in a stream without the COMPRESS flag");
  g_byte_array_unref (s);
}

static int
replay_files (int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    g_autofree char *text = NULL;
    gsize len;
    struct replay r;
    g_autoptr (GError) error = NULL;
    if (!g_file_get_contents (argv[i], &text, &len, &error))
      g_error ("%s", error->message);
    for (size_t piece = 0; piece < 4; piece++)
      if (!replay ((const uint8_t *) text, len, (size_t[]) { 0, 1, 4093, 65539 }[piece], &r)) {
        fprintf (stderr, "%s: %s\n", argv[i], r.error);
        return 1;
      } else
        replay_free (&r);
  }
  return 0;
}

int
main (int argc, char **argv)
{
  if (argc > 1 && argv[1][0] != '-')
    return replay_files (argc, argv);
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/nbd-stream/crc32c", test_crc32c);
  g_test_add_func ("/nbd-stream/roundtrip-pieces", test_roundtrip);
  g_test_add_func ("/nbd-stream/truncated", test_truncated);
  g_test_add_func ("/nbd-stream/flipped-header-bytes", test_flipped_header_bytes);
  g_test_add_func ("/nbd-stream/bad-records", test_bad_records);
  g_test_add_func ("/nbd-stream/delta-roundtrip", test_delta_roundtrip);
  g_test_add_func ("/nbd-stream/delta-bad-records", test_delta_bad_records);
  g_test_add_func ("/nbd-stream/cdata", test_cdata);
  g_test_add_func ("/nbd-stream/stop", test_stop);
  return g_test_run ();
}
