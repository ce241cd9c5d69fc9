/* ferry: unit tests of the NBD stream parser over byte streams.
 *
 * Sessions are written with the helpers below (and the captures under
 * tests/nbd/captures/ come from real nbdkit/qemu peers); every one is
 * replayed whole, in odd-sized pieces and one byte at a time, and what the
 * parser forwards must equal what went in, unless --nbd-readonly edits it. */
#include <string.h>

#include "error.h"
#include "nbd-proto.h"
#include "session.h"

struct sess {
  GByteArray *rec;            /* the record stream */
  GByteArray *want[2];        /* what each direction must forward */
  bool extended;              /* 32-byte headers */
};

static void
sess_init (struct sess *s)
{
  s->rec = g_byte_array_new ();
  s->want[0] = g_byte_array_new ();
  s->want[1] = g_byte_array_new ();
  s->extended = false;
}

static void
sess_clear (struct sess *s)
{
  g_byte_array_unref (s->rec);
  g_byte_array_unref (s->want[0]);
  g_byte_array_unref (s->want[1]);
}

static void
emit (struct sess *s, int dir, const void *data, size_t len)
{
  uint8_t h[5] = { dir, len >> 24, len >> 16, len >> 8, len };

  g_byte_array_append (s->rec, h, 5);
  g_byte_array_append (s->rec, data, len);
  g_byte_array_append (s->want[dir], data, len);
}

/* A message built field by field. */
struct msg { uint8_t b[256]; size_t n; };

static void u8s (struct msg *m, const void *p, size_t n) { if (n) memcpy (m->b + m->n, p, n); m->n += n; }
static void u16 (struct msg *m, uint16_t v) { uint8_t p[2] = { v >> 8, v }; u8s (m, p, 2); }
static void u32 (struct msg *m, uint32_t v) { u16 (m, v >> 16); u16 (m, v); }
static void u64 (struct msg *m, uint64_t v) { u32 (m, v >> 32); u32 (m, v); }

static void
server_greeting (struct sess *s, uint16_t hsflags)
{
  struct msg m = { .n = 0 };
  u64 (&m, NBD_MAGIC); u64 (&m, NBD_IHAVEOPT); u16 (&m, hsflags);
  emit (s, 1, m.b, m.n);
}

static void
client_flags (struct sess *s, uint32_t flags)
{
  struct msg m = { .n = 0 };
  u32 (&m, flags);
  emit (s, 0, m.b, m.n);
}

static void
client_opt (struct sess *s, uint32_t opt, const void *data, uint32_t len)
{
  struct msg m = { .n = 0 };
  u64 (&m, NBD_IHAVEOPT); u32 (&m, opt); u32 (&m, len);
  u8s (&m, data, len);
  emit (s, 0, m.b, m.n);
}

static void
client_go (struct sess *s, uint32_t opt, const char *name)
{
  struct msg d = { .n = 0 };
  u32 (&d, strlen (name)); u8s (&d, name, strlen (name));
  u16 (&d, 1); u16 (&d, NBD_INFO_BLOCK_SIZE);
  client_opt (s, opt, d.b, d.n);
}

static void
server_rep (struct sess *s, uint32_t opt, uint32_t type, const void *data, uint32_t len)
{
  struct msg m = { .n = 0 };
  u64 (&m, NBD_REP_MAGIC); u32 (&m, opt); u32 (&m, type); u32 (&m, len);
  u8s (&m, data, len);
  emit (s, 1, m.b, m.n);
}

static void
server_info (struct sess *s, uint32_t opt, uint64_t size, uint16_t flags,
             uint32_t max_block)
{
  struct msg d = { .n = 0 };
  u16 (&d, NBD_INFO_EXPORT); u64 (&d, size); u16 (&d, flags);
  server_rep (s, opt, NBD_REP_INFO, d.b, d.n);
  d.n = 0;
  u16 (&d, NBD_INFO_BLOCK_SIZE); u32 (&d, 1); u32 (&d, 4096); u32 (&d, max_block);
  server_rep (s, opt, NBD_REP_INFO, d.b, d.n);
}

static void
request (struct sess *s, uint16_t type, uint64_t cookie, uint64_t offset, uint32_t len)
{
  struct msg m = { .n = 0 };
  u32 (&m, s->extended ? NBD_EXTENDED_REQUEST_MAGIC : NBD_REQUEST_MAGIC);
  u16 (&m, 0); u16 (&m, type); u64 (&m, cookie); u64 (&m, offset);
  if (s->extended) u64 (&m, len); else u32 (&m, len);
  emit (s, 0, m.b, m.n);
}

static void
data (struct sess *s, int dir, size_t len, uint8_t fill)
{
  g_autofree uint8_t *p = g_malloc (len);
  memset (p, fill, len);
  emit (s, dir, p, len);
}

static void
simple_reply (struct sess *s, uint32_t err, uint64_t cookie)
{
  struct msg m = { .n = 0 };
  u32 (&m, NBD_SIMPLE_REPLY_MAGIC); u32 (&m, err); u64 (&m, cookie);
  emit (s, 1, m.b, m.n);
}

/* A structured (or extended) chunk header; the payload follows separately. */
static void
chunk (struct sess *s, uint16_t flags, uint16_t type, uint64_t cookie, uint64_t len)
{
  struct msg m = { .n = 0 };
  u32 (&m, s->extended ? NBD_EXTENDED_REPLY_MAGIC : NBD_STRUCTURED_REPLY_MAGIC);
  u16 (&m, flags); u16 (&m, type); u64 (&m, cookie);
  if (s->extended) { u64 (&m, 0); u64 (&m, len); } else u32 (&m, len);
  emit (s, 1, m.b, m.n);
}

static void
hole_chunk (struct sess *s, uint16_t flags, uint64_t cookie, uint64_t offset, uint32_t size)
{
  struct msg d = { .n = 0 };
  chunk (s, flags, NBD_REPLY_TYPE_OFFSET_HOLE, cookie, 12);
  u64 (&d, offset); u32 (&d, size);
  emit (s, 1, d.b, d.n);
}

static const size_t chunks[] = { 1, 3, 7, 4096, 1 << 20 };

/* Skipping what the parser need not see leaves the same counts as
 * feeding it (only the times differ). */
static void
assert_same_counts (struct nbd_framing *a, struct nbd_framing *b)
{
  for (unsigned i = 0; i < NBD_STATS_CMDS; i++) {
    const struct nbd_cmd_stats *x = nbd_framing_cmd_stats (a, i);
    const struct nbd_cmd_stats *y = nbd_framing_cmd_stats (b, i);
    g_assert_cmpuint (x->ops, ==, y->ops);
    g_assert_cmpuint (x->bytes, ==, y->bytes);
    g_assert_cmpuint (x->errors, ==, y->errors);
    g_assert_cmpuint (x->hole_bytes, ==, y->hole_bytes);
    g_assert_cmpuint (x->inflight_now, ==, y->inflight_now);
  }
}

/* Replays @s in every piece size, fed whole and with skips; the parser
 * must forward it unchanged and count the same each time. */
static struct nbd_framing *
replay_ok (struct sess *s)
{
  struct nbd_framing *f = NULL;
  g_autoptr (NbdFraming) first = NULL;

  for (size_t i = 0; i < 2 * G_N_ELEMENTS (chunks); i++) {
    g_autoptr (GError) error = NULL;
    GByteArray *out[2] = { g_byte_array_new (), g_byte_array_new () };
    size_t chunk = chunks[i / 2];
    if (first == NULL)
      first = f;
    else
      nbd_framing_free (f);
    f = nbd_framing_new (false);
    if (!session_replay (f, s->rec->data, s->rec->len, chunk, i % 2, out, &error))
      g_error ("chunk %zu%s: %s", chunk, i % 2 ? " skipping" : "", error->message);
    for (int d = 0; d < 2; d++) {
      g_assert_cmpuint (out[d]->len, ==, s->want[d]->len);
      g_assert (memcmp (out[d]->data, s->want[d]->data, out[d]->len) == 0);
      g_byte_array_unref (out[d]);
    }
    if (first)
      assert_same_counts (first, f);
  }
  return f;
}

/* Replays @s in every piece size from @min_chunk on, fed whole and with
 * skips, and expects the same error each time.  (A bad greeting is
 * reported at its first wrong byte, showing what has arrived; a real one
 * arrives in one piece.) */
static void
replay_fails (struct sess *s, bool readonly, size_t min_chunk, const char *message)
{
  for (size_t i = 0; i < 2 * G_N_ELEMENTS (chunks); i++) {
    size_t chunk = chunks[i / 2];
    if (chunk < min_chunk)
      continue;
    g_autoptr (GError) error = NULL;
    g_autoptr (NbdFraming) f = nbd_framing_new (readonly);
    if (session_replay (f, s->rec->data, s->rec->len, chunk, i % 2, NULL, &error))
      g_error ("chunk %zu: expected an error containing '%s'", chunk, message);
    g_assert_error (error, FERRY_ERROR, FERRY_EXIT_PROTOCOL);
    if (strstr (error->message, message) == NULL)
      g_error ("chunk %zu: '%s' does not contain '%s'", chunk, error->message, message);
  }
}

/* Fixed newstyle, GO with INFO_EXPORT and BLOCK_SIZE, structured replies,
 * a meta context; reads in data and hole chunks, block status, a write. */
static void
build_structured (struct sess *s)
{
  uint8_t meta_id[4 + 15] = { 0, 0, 0, 1 };

  server_greeting (s, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
  client_flags (s, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
  client_opt (s, NBD_OPT_STRUCTURED_REPLY, NULL, 0);
  server_rep (s, NBD_OPT_STRUCTURED_REPLY, NBD_REP_ACK, NULL, 0);
  client_opt (s, NBD_OPT_SET_META_CONTEXT, "\0\0\0\4disk\0\0\0\1\0\0\0\017base:allocation", 31);
  memcpy (meta_id + 4, "base:allocation", 15);
  server_rep (s, NBD_OPT_SET_META_CONTEXT, NBD_REP_META_CONTEXT, meta_id, sizeof meta_id);
  server_rep (s, NBD_OPT_SET_META_CONTEXT, NBD_REP_ACK, NULL, 0);
  client_go (s, NBD_OPT_GO, "disk");
  server_info (s, NBD_OPT_GO, 1 << 20, NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH, 1 << 20);
  server_rep (s, NBD_OPT_GO, NBD_REP_ACK, NULL, 0);

  request (s, NBD_CMD_READ, 1, 0, 8192);
  request (s, NBD_CMD_READ, 2, 8192, 4096);
  chunk (s, 0, NBD_REPLY_TYPE_OFFSET_DATA, 1, 8 + 4096);
  data (s, 1, 8 + 4096, 0xab);
  hole_chunk (s, 0, 1, 4096, 4096);
  chunk (s, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE, 1, 0);
  hole_chunk (s, NBD_REPLY_FLAG_DONE, 2, 8192, 4096);

  request (s, NBD_CMD_BLOCK_STATUS, 3, 0, 1 << 20);
  chunk (s, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_BLOCK_STATUS, 3, 4 + 16);
  data (s, 1, 4 + 16, 0);

  request (s, NBD_CMD_WRITE, 4, 0, 65536);
  data (s, 0, 65536, 0x5a);
  chunk (s, 0, NBD_REPLY_TYPE_ERROR, 4, 6);
  data (s, 1, 6, 0);
  chunk (s, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE, 4, 0);

  request (s, NBD_CMD_FLUSH, 5, 0, 0);
  simple_reply (s, 0, 5);
  request (s, NBD_CMD_DISC, 6, 0, 0);
}

static void
test_structured (void)
{
  struct sess s;
  sess_init (&s);
  build_structured (&s);
  g_autoptr (NbdFraming) f = replay_ok (&s);
  const struct nbd_handshake_info *hs = nbd_framing_handshake (f);

  g_assert_cmpint (hs->style, ==, NBD_STYLE_FIXED_NEWSTYLE);
  g_assert_true (hs->negotiated && hs->structured && !hs->extended && !hs->tls);
  g_assert_cmpstr (hs->export_name, ==, "disk");
  g_assert_cmpstr (hs->meta, ==, "base:allocation");
  g_assert_cmpuint (hs->size, ==, 1 << 20);
  g_assert_cmpuint (hs->max_block, ==, 1 << 20);
  g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_READ)->ops, ==, 2);
  g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_READ)->bytes, ==, 12288);
  g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_READ)->hole_bytes, ==, 8192);
  g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_READ)->inflight_max, ==, 2);
  g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_WRITE)->errors, ==, 1);
  g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_BLOCK_STATUS)->ops, ==, 1);
  g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_FLUSH)->ops, ==, 1);
  g_assert_true (nbd_framing_eof (f, NBD_C2S, NULL));
  g_assert_true (nbd_framing_eof (f, NBD_S2C, NULL));
  sess_clear (&s);
}

/* NBD_OPT_EXPORT_NAME, with and without the 124 zeroes; simple replies. */
static void
build_export_name (struct sess *s, bool no_zeroes)
{
  struct msg m = { .n = 0 };

  server_greeting (s, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
  client_flags (s, NBD_FLAG_C_FIXED_NEWSTYLE | (no_zeroes ? NBD_FLAG_C_NO_ZEROES : 0));
  client_opt (s, NBD_OPT_EXPORT_NAME, "x", 1);
  u64 (&m, 65536); u16 (&m, NBD_FLAG_HAS_FLAGS);
  emit (s, 1, m.b, m.n);
  if (!no_zeroes)
    data (s, 1, NBD_EXPORT_NAME_ZEROES, 0);
  request (s, NBD_CMD_READ, 7, 0, 512);
  request (s, NBD_CMD_READ, 8, 0, 512);
  simple_reply (s, 0, 8);
  data (s, 1, 512, 1);
  simple_reply (s, 5, 7);     /* a failed read carries no data */
  request (s, NBD_CMD_WRITE, 9, 0, 1000);
  data (s, 0, 1000, 2);
  simple_reply (s, 0, 9);
}

static void
test_export_name (void)
{
  for (int no_zeroes = 0; no_zeroes < 2; no_zeroes++) {
    struct sess s;
    sess_init (&s);
    build_export_name (&s, no_zeroes);
    g_autoptr (NbdFraming) f = replay_ok (&s);
    g_assert_cmpstr (nbd_framing_handshake (f)->export_name, ==, "x");
    g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_READ)->ops, ==, 2);
    g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_READ)->errors, ==, 1);
    g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_WRITE)->bytes, ==, 1000);
    sess_clear (&s);
  }
}

static void
build_oldstyle (struct sess *s)
{
  struct msg m = { .n = 0 };

  u64 (&m, NBD_MAGIC); u64 (&m, NBD_OLDSTYLE_MAGIC); u64 (&m, 1 << 30);
  u32 (&m, NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_TRIM);
  emit (s, 1, m.b, m.n);
  data (s, 1, NBD_OLDSTYLE_ZEROES, 0);
  request (s, NBD_CMD_TRIM, 1, 0, 1 << 20);
  simple_reply (s, 0, 1);
}

static void
test_oldstyle (void)
{
  struct sess s;
  sess_init (&s);
  build_oldstyle (&s);
  g_autoptr (NbdFraming) f = replay_ok (&s);
  g_assert_cmpint (nbd_framing_handshake (f)->style, ==, NBD_STYLE_OLDSTYLE);
  g_assert_cmpuint (nbd_framing_handshake (f)->size, ==, 1 << 30);
  g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_TRIM)->bytes, ==, 1 << 20);
  sess_clear (&s);
}

/* Extended headers: 32-byte requests and replies, 64-bit lengths. */
static void
build_extended (struct sess *s)
{
  server_greeting (s, NBD_FLAG_FIXED_NEWSTYLE);
  client_flags (s, NBD_FLAG_C_FIXED_NEWSTYLE);
  client_opt (s, NBD_OPT_EXTENDED_HEADERS, NULL, 0);
  server_rep (s, NBD_OPT_EXTENDED_HEADERS, NBD_REP_ACK, NULL, 0);
  client_go (s, NBD_OPT_GO, "");
  server_info (s, NBD_OPT_GO, 1ull << 40, NBD_FLAG_HAS_FLAGS, 1 << 25);
  server_rep (s, NBD_OPT_GO, NBD_REP_ACK, NULL, 0);
  s->extended = true;
  request (s, NBD_CMD_WRITE, 10, 0, 4096);
  data (s, 0, 4096, 3);
  request (s, NBD_CMD_READ, 11, 0, 4096);
  chunk (s, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE, 10, 0);
  chunk (s, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_OFFSET_DATA, 11, 8 + 4096);
  data (s, 1, 8 + 4096, 4);
  request (s, NBD_CMD_BLOCK_STATUS, 12, 0, 1 << 20);
  chunk (s, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_BLOCK_STATUS_EXT, 12, 8 + 16);
  data (s, 1, 8 + 16, 0);
}

static void
test_extended (void)
{
  struct sess s;
  sess_init (&s);
  build_extended (&s);
  g_autoptr (NbdFraming) f = replay_ok (&s);
  g_assert_true (nbd_framing_handshake (f)->extended);
  g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_WRITE)->ops, ==, 1);
  g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_READ)->bytes, ==, 4096);
  g_assert_cmpuint (nbd_framing_cmd_stats (f, NBD_CMD_BLOCK_STATUS)->ops, ==, 1);
  sess_clear (&s);
}

/* After the server ACKs STARTTLS the parser looks at nothing more. */
static void
test_starttls (void)
{
  struct sess s;
  sess_init (&s);
  server_greeting (&s, NBD_FLAG_FIXED_NEWSTYLE);
  client_flags (&s, NBD_FLAG_C_FIXED_NEWSTYLE);
  client_opt (&s, NBD_OPT_STARTTLS, NULL, 0);
  server_rep (&s, NBD_OPT_STARTTLS, NBD_REP_ACK, NULL, 0);
  static const char client_hello[] = "\x16\x03\x01 client hello, not NBD";
  static const char server_hello[] = "\x16\x03\x03 server hello, not NBD";
  emit (&s, 0, client_hello, sizeof client_hello - 1);
  emit (&s, 1, server_hello, sizeof server_hello - 1);
  g_autoptr (NbdFraming) f = replay_ok (&s);
  g_assert_true (nbd_framing_handshake (f)->tls);
  g_assert_true (nbd_framing_eof (f, NBD_S2C, NULL));
  sess_clear (&s);
}

/* --nbd-readonly: the flag is set, writes are answered EPERM by us. */
static void
check_readonly (struct sess *s, size_t want_s2c_growth, uint16_t refused_cmd)
{
  for (size_t i = 0; i < G_N_ELEMENTS (chunks); i++) {
    g_autoptr (GError) error = NULL;
    g_autoptr (NbdFraming) f = nbd_framing_new (true);
    g_autoptr (GByteArray) c2s = g_byte_array_new ();
    g_autoptr (GByteArray) s2c = g_byte_array_new ();
    GByteArray *out[2] = { c2s, s2c };

    if (!session_replay (f, s->rec->data, s->rec->len, chunks[i], false, out, &error))
      g_error ("chunk %zu: %s", chunks[i], error->message);
    g_assert_true (nbd_framing_handshake (f)->flags & NBD_FLAG_READ_ONLY);
    g_assert_cmpuint (nbd_framing_cmd_stats (f, refused_cmd)->refused, ==, 1);
    /* The write and its data never reach the server. */
    g_assert_cmpuint (c2s->len, <, s->want[0]->len);
    g_assert_null (memmem (c2s->data, c2s->len, "\x5a\x5a\x5a\x5a", 4));
    g_assert_cmpuint (s2c->len, ==, s->want[1]->len + want_s2c_growth);
    g_assert_true (nbd_framing_eof (f, NBD_S2C, NULL));
  }
}

static void
test_readonly_simple (void)
{
  struct sess s;
  struct msg m = { .n = 0 };

  sess_init (&s);
  server_greeting (&s, NBD_FLAG_FIXED_NEWSTYLE);
  client_flags (&s, NBD_FLAG_C_FIXED_NEWSTYLE);
  client_opt (&s, NBD_OPT_EXPORT_NAME, "", 0);
  u64 (&m, 65536); u16 (&m, NBD_FLAG_HAS_FLAGS);
  emit (&s, 1, m.b, m.n);
  data (&s, 1, NBD_EXPORT_NAME_ZEROES, 0);
  request (&s, NBD_CMD_READ, 1, 0, 512);
  request (&s, NBD_CMD_WRITE, 2, 0, 3000);
  data (&s, 0, 3000, 0x5a);
  simple_reply (&s, 0, 1);
  data (&s, 1, 512, 1);
  request (&s, NBD_CMD_FLUSH, 3, 0, 0);
  simple_reply (&s, 0, 3);
  check_readonly (&s, NBD_SIMPLE_REPLY_SIZE, NBD_CMD_WRITE);
  sess_clear (&s);
}

static void
test_readonly_structured (void)
{
  struct sess s;
  sess_init (&s);
  server_greeting (&s, NBD_FLAG_FIXED_NEWSTYLE);
  client_flags (&s, NBD_FLAG_C_FIXED_NEWSTYLE);
  client_opt (&s, NBD_OPT_STRUCTURED_REPLY, NULL, 0);
  server_rep (&s, NBD_OPT_STRUCTURED_REPLY, NBD_REP_ACK, NULL, 0);
  client_go (&s, NBD_OPT_GO, "");
  server_info (&s, NBD_OPT_GO, 65536, NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_TRIM, 65536);
  server_rep (&s, NBD_OPT_GO, NBD_REP_ACK, NULL, 0);
  request (&s, NBD_CMD_READ, 1, 0, 4096);
  /* The server is mid-reply when the trim comes: ours goes in after it. */
  chunk (&s, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_OFFSET_DATA, 1, 8 + 4096);
  data (&s, 1, 2000, 0x11);
  request (&s, NBD_CMD_TRIM, 2, 0, 4096);
  data (&s, 1, 8 + 4096 - 2000, 0x11);
  check_readonly (&s, NBD_STRUCTURED_REPLY_SIZE + 6 + 32, NBD_CMD_TRIM);
  sess_clear (&s);
}

static void
test_errors (void)
{
  struct sess s;

#define CASE_FROM(min_chunk, build, readonly, message) \
  do { sess_init (&s); build; replay_fails (&s, readonly, min_chunk, message); \
       sess_clear (&s); } while (0)
#define CASE(build, readonly, message) CASE_FROM (1, build, readonly, message)

  CASE_FROM (16, emit (&s, 1, "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", 32), false,
        "sent no NBD greeting after 0 bytes: \"SSH-2.0-OpenSSH_\"; this looks like an ssh server");
  CASE_FROM (16, emit (&s, 1, "HTTP/1.0 400 Bad request\r\n", 26), false,
        "looks like a web server");
  CASE_FROM (16, emit (&s, 1, "\x01\x02\x03", 3), false, "\"\\x01\\x02\\x03\"");
  CASE ((server_greeting (&s, 1), client_flags (&s, 1),
         client_opt (&s, NBD_OPT_GO, NULL, 0),
         emit (&s, 0, "\0\1\0\1", 4)), false, "option magic");
  {
    struct msg m = { .n = 0 };
    u64 (&m, NBD_IHAVEOPT); u32 (&m, NBD_OPT_GO); u32 (&m, 65537);
    CASE ((server_greeting (&s, 1), client_flags (&s, 1), emit (&s, 0, m.b, m.n)), false,
          "client sent NBD_OPT_GO (7) with 65537 bytes of data (limit 65536)");
  }
  CASE ((server_greeting (&s, 1), client_flags (&s, 1), client_go (&s, NBD_OPT_GO, ""),
         request (&s, NBD_CMD_READ, 1, 0, 512)), false,
        "client sent a request before negotiation finished");
  CASE ((build_oldstyle (&s), request (&s, NBD_CMD_WRITE, 1, 0, 33 << 20)), false,
        "client sent a write request of 34603008 bytes (limit 33554432)");
  CASE ((server_greeting (&s, 1), client_flags (&s, 1), client_go (&s, NBD_OPT_GO, ""),
         server_info (&s, NBD_OPT_GO, 1 << 20, 1, 65536),
         server_rep (&s, NBD_OPT_GO, NBD_REP_ACK, NULL, 0),
         request (&s, NBD_CMD_READ, 1, 0, 65537)), false,
        "client sent a read request of 65537 bytes (limit 65536, the server's maximum block size)");
  CASE ((build_oldstyle (&s), simple_reply (&s, 0, 42)), false,
        "server replied to cookie 0x2a, which no request in flight uses");
  CASE ((build_oldstyle (&s), request (&s, NBD_CMD_READ, 5, 0, 1),
         request (&s, NBD_CMD_READ, 5, 0, 1)), false,
        "client reused cookie 0x5 while it is still in flight");
  CASE ((build_oldstyle (&s), emit (&s, 1, "\x67\x44\x66\x99", 4)), false,
        "bad reply magic");
  CASE ((build_oldstyle (&s), request (&s, NBD_CMD_DISC, 5, 0, 0),
         request (&s, NBD_CMD_READ, 6, 0, 1)), false, "after NBD_CMD_DISC");
  CASE (emit (&s, 0, "GET / HTTP/1.0\r\n\r\n", 18), true,
        "client sent data before the server's greeting");
  CASE ((emit (&s, 0, "GET / HTTP/1.0\r\n\r\n", 18), server_greeting (&s, 1)), false,
        "client sent 18 bytes before the server's greeting");
#undef CASE
#undef CASE_FROM
}

/* End of stream in the middle of things is a violation; at a boundary not. */
static void
test_eof (void)
{
  struct sess s;
  g_autoptr (GError) error = NULL;

  sess_init (&s);
  {
    g_autoptr (NbdFraming) f = nbd_framing_new (false);
    g_assert_false (nbd_framing_eof (f, NBD_S2C, &error));
    g_assert_nonnull (strstr (error->message, "without sending the NBD greeting"));
    g_clear_error (&error);
  }
  emit (&s, 1, "NBDMAG", 6);
  {
    g_autoptr (NbdFraming) f = nbd_framing_new (false);
    g_assert_true (session_replay (f, s.rec->data, s.rec->len, 2, false, NULL, NULL));
    g_assert_false (nbd_framing_eof (f, NBD_S2C, &error));
    g_assert_nonnull (strstr (error->message, "in the middle of the greeting (after 6 bytes)"));
    g_clear_error (&error);
  }
  sess_clear (&s);
  sess_init (&s);
  server_greeting (&s, 1);
  {
    g_autoptr (NbdFraming) f = nbd_framing_new (false);
    g_assert_true (session_replay (f, s.rec->data, s.rec->len, 5, false, NULL, NULL));
    g_assert_false (nbd_framing_eof (f, NBD_S2C, &error));
    g_assert_nonnull (strstr (error->message, "before the handshake finished"));
  }
  sess_clear (&s);
}

/* Every capture of a real session replays unchanged in any piece size. */
static void
test_captures (void)
{
  g_autoptr (GPtrArray) paths = capture_paths ();

  for (guint i = 0; paths && i < paths->len; i++) {
    struct sess s = { 0 };
    size_t len;

    sess_init (&s);
    g_autoptr (GBytes) rec = capture_load (paths->pdata[i], s.want);
    const uint8_t *data = g_bytes_get_data (rec, &len);
    g_byte_array_append (s.rec, data, len);
    g_autoptr (NbdFraming) f = replay_ok (&s);
    sess_clear (&s);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/nbd/structured", test_structured);
  g_test_add_func ("/nbd/export-name", test_export_name);
  g_test_add_func ("/nbd/oldstyle", test_oldstyle);
  g_test_add_func ("/nbd/extended", test_extended);
  g_test_add_func ("/nbd/starttls", test_starttls);
  g_test_add_func ("/nbd/readonly-simple", test_readonly_simple);
  g_test_add_func ("/nbd/readonly-structured", test_readonly_structured);
  g_test_add_func ("/nbd/errors", test_errors);
  g_test_add_func ("/nbd/eof", test_eof);
  g_test_add_func ("/nbd/captures", test_captures);
  return g_test_run ();
}
