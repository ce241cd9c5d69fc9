/* ferry: the incremental NBD stream parser (see nbd-framing.h).
 *
 * Each direction is a small state machine over one "unit" at a time: a
 * fixed header gathered into @hdr, or a payload of which only @left is
 * tracked and the first few bytes are kept in @cap.  Both directions share
 * the handshake results and the table of requests in flight. */
#include <config.h>

#include "nbd-framing.h"

#include <string.h>

#include "error.h"
#include "nbd-proto.h"

/* Where a stream's parser stands: C_* in the client's stream (C2S),
 * S_* in the server's (S2C).  One type, so that what both directions share
 * (struct stream, expect_header) is typed too. */
enum stream_state {
  C_EARLY,                    /* no server greeting yet */
  C_FLAGS,                    /* 32-bit client flags */
  C_HEADER,                   /* option or request header, magic first */
  C_OPT_DATA,
  C_PAYLOAD,                  /* NBD_CMD_WRITE data */
  C_DISCONNECTED,             /* after NBD_CMD_DISC nothing may follow */
  C_TLS,                      /* not inspected */

  S_GREETING,                 /* NBDMAGIC + IHAVEOPT or cliserv magic */
  S_OLDSTYLE,                 /* size + 32-bit flags */
  S_HSFLAGS,                  /* 16-bit handshake flags */
  S_OPT_HEADER,               /* option reply header, or the EXPORT_NAME reply */
  S_EXPORT_REPLY,
  S_ZEROES,                   /* 124 reserved bytes */
  S_OPT_DATA,
  S_REPLY_HEADER,
  S_PAYLOAD,                  /* READ data or a chunk's payload */
  S_TLS,
};

#define CAP_SIZE (8 + NBD_NAME_MAX)

/* One direction's parse position and the unit it is in. */
struct stream {
  enum stream_state state;
  uint8_t hdr[32];            /* the header being gathered */
  size_t have, want;          /* bytes of @hdr gathered, and needed */
  uint64_t left;              /* payload bytes still to come */
  uint64_t pos;               /* payload bytes seen */
  uint8_t cap[CAP_SIZE];      /* the payload's first bytes */
  bool drop;                  /* C2S: the payload belongs to a refused request */
  size_t reinsert;            /* C2S read-only: header bytes to put back */
  int patch_at;               /* header offset that gets NBD_FLAG_READ_ONLY, or -1 */
  uint32_t opt, type;         /* current option (and reply type) */
  uint16_t chunk_type, chunk_flags;
  uint64_t cookie;            /* reply being received */
  uint64_t total;             /* bytes seen in this direction */
};

/* A request the client sent and the server has not finished answering:
 * a slot of nbd_framing.table, found by its cookie. */
struct inflight {
  uint64_t cookie;            /* the client's handle for the request */
  uint64_t offset, length;    /* what the request asked for */
  gint64 start;               /* when it was sent: monotonic microseconds */
  uint16_t type;              /* NBD_CMD_* */
  bool used;                  /* the slot holds a request */
  bool refused;               /* to be answered by us, not the server */
  bool failed;                /* an error chunk was seen */
};

#define TABLE_SIZE (2 * NBD_MAX_INFLIGHT)

/* Both directions of one NBD connection (nbd-framing.h). */
struct nbd_framing {
  bool readonly;              /* the read-only guard: refuse writes, mark the
                                 export read-only */
  struct stream c, s;         /* the client's stream (C2S), the server's (S2C) */
  struct nbd_handshake_info hs;  /* what the handshake settled, for stats */
  bool greeted;               /* the server greeting arrived */
  uint64_t early;             /* client bytes before the greeting */
  uint16_t hsflags;           /* the server's handshake flags */
  bool no_zeroes;             /* both sides agreed on NBD_FLAG_C_NO_ZEROES */
  bool export_name_sent;      /* S2C expects the EXPORT_NAME reply next */
  bool transmission;          /* the client may send requests */
  bool aborted;               /* NBD_OPT_ABORT sent */
  bool client_eof;            /* the client's stream ended */
  uint32_t max_payload;       /* the largest write or read we accept */
  struct inflight table[TABLE_SIZE];  /* requests in flight, open addressing */
  unsigned inflight;          /* used entries, refused ones included */
  unsigned refused_pending;   /* refused entries whose reply is not yet sent */
  uint8_t out[NBD_MAX_INSERT];  /* replies the guard injects (nbd_step.insert) */
  struct nbd_cmd_stats stats[NBD_STATS_CMDS];  /* per-command counts */
};

static uint16_t be16 (const uint8_t *p) { return (uint16_t) (p[0] << 8 | p[1]); }
static uint32_t be32 (const uint8_t *p) { return (uint32_t) be16 (p) << 16 | be16 (p + 2); }
static uint64_t be64 (const uint8_t *p) { return (uint64_t) be32 (p) << 32 | be32 (p + 4); }
static void put16 (uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v; }
static void put32 (uint8_t *p, uint32_t v) { put16 (p, v >> 16); put16 (p + 2, v); }
static void put64 (uint8_t *p, uint64_t v) { put32 (p, v >> 32); put32 (p + 4, v); }

static const char *const cmd_names[NBD_STATS_CMDS] = {
  "read", "write", "disc", "flush", "trim", "cache", "write_zeroes",
  "block_status", "other",
};

const char *
nbd_cmd_name (unsigned index)
{
  return cmd_names[MIN (index, NBD_STATS_CMDS - 1)];
}

static struct nbd_cmd_stats *
stats_for (struct nbd_framing *f, uint16_t type)
{
  return &f->stats[MIN (type, NBD_STATS_CMDS - 1)];
}

static const char *
opt_name (uint32_t opt)
{
  static const char *const names[] = {
    NULL, "NBD_OPT_EXPORT_NAME", "NBD_OPT_ABORT", "NBD_OPT_LIST", "NBD_OPT_PEEK_EXPORT",
    "NBD_OPT_STARTTLS", "NBD_OPT_INFO", "NBD_OPT_GO", "NBD_OPT_STRUCTURED_REPLY",
    "NBD_OPT_LIST_META_CONTEXT", "NBD_OPT_SET_META_CONTEXT", "NBD_OPT_EXTENDED_HEADERS",
  };
  return opt < G_N_ELEMENTS (names) && names[opt] ? names[opt] : "an unknown option";
}

/* A protocol violation: every error of the parser. */
#define fail(error, ...) ferry_set_error ((error), FERRY_EXIT_PROTOCOL, __VA_ARGS__)

/* @a then @b (up to 16 bytes in all) as a C-like quoted string. */
static char *
show_bytes (const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
  GString *out = g_string_new ("\"");
  size_t shown = 0;

  for (size_t i = 0; i < alen + blen && shown < 16; i++, shown++) {
    uint8_t ch = i < alen ? a[i] : b[i - alen];
    if (ch == '\r') g_string_append (out, "\\r");
    else if (ch == '\n') g_string_append (out, "\\n");
    else if (ch == '"' || ch == '\\') g_string_append_printf (out, "\\%c", ch);
    else if (ch >= 0x20 && ch < 0x7f) g_string_append_c (out, ch);
    else g_string_append_printf (out, "\\x%02x", ch);
  }
  g_string_append_c (out, '"');
  return g_string_free (out, FALSE);
}

/* A guess at what answered instead, from the first bytes. */
static const char *
guess_peer (const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
  uint8_t head[8];
  size_t n = 0;

  for (size_t i = 0; i < alen + blen && n < sizeof head; i++)
    head[n++] = i < alen ? a[i] : b[i - alen];
  if (n >= 4 && memcmp (head, "SSH-", 4) == 0)
    return "; this looks like an ssh server, not an NBD server";
  if (n >= 5 && memcmp (head, "HTTP/", 5) == 0)
    return "; this looks like a web server, not an NBD server";
  if (n >= 4 && (memcmp (head, "GET ", 4) == 0 || memcmp (head, "POST", 4) == 0))
    return "; this looks like an HTTP client, not an NBD client";
  return "";
}

static bool
bad_magic (GError **error, const char *who, const char *what, const struct stream *st,
           const uint8_t *rest, size_t rest_len)
{
  g_autofree char *shown = show_bytes (st->hdr, st->have, rest, rest_len);

  return fail (error, "%s sent %s after %" G_GUINT64_FORMAT " bytes: %s%s", who, what,
               st->total - st->have, shown,
               guess_peer (st->hdr, st->have, rest, rest_len));
}

/* ---- requests in flight: open addressing with linear probing ---- */

static unsigned
slot_of (uint64_t cookie)
{
  return (unsigned) ((cookie * 0x9E3779B97F4A7C15ull) >> 40) % TABLE_SIZE;
}

static struct inflight *
lookup (struct nbd_framing *f, uint64_t cookie)
{
  for (unsigned i = slot_of (cookie);; i = (i + 1) % TABLE_SIZE) {
    if (!f->table[i].used)
      return NULL;
    if (f->table[i].cookie == cookie)
      return &f->table[i];
  }
}

static struct inflight *
insert (struct nbd_framing *f, uint64_t cookie)
{
  unsigned i = slot_of (cookie);

  while (f->table[i].used)
    i = (i + 1) % TABLE_SIZE;
  f->inflight++;
  f->table[i] = (struct inflight) { .cookie = cookie, .used = true };
  return &f->table[i];
}

/* Backward-shift deletion keeps every probe chain unbroken. */
static void
remove_entry (struct nbd_framing *f, struct inflight *e)
{
  unsigned hole = e - f->table;

  f->inflight--;
  f->table[hole].used = false;
  for (unsigned i = (hole + 1) % TABLE_SIZE; f->table[i].used; i = (i + 1) % TABLE_SIZE) {
    unsigned home = slot_of (f->table[i].cookie);
    /* Move it into the hole unless its home lies cyclically in (hole, i]. */
    bool stays = hole < i ? (home > hole && home <= i) : (home > hole || home <= i);
    if (!stays) {
      f->table[hole] = f->table[i];
      f->table[i].used = false;
      hole = i;
    }
  }
}

static void
complete (struct nbd_framing *f, struct inflight *e, bool failed)
{
  struct nbd_cmd_stats *st = stats_for (f, e->type);

  gint64 now = g_get_monotonic_time ();

  st->ops++;
  st->bytes += e->length;
  st->usec += now - e->start;
  if (--st->inflight_now == 0)
    st->busy_usec += now - st->busy_since;
  if (failed || e->failed)
    st->errors++;
  remove_entry (f, e);
}

/* ---- shared helpers ---- */

/* Copy header bytes into @st->hdr; patches the read-only flag in place. */
static size_t
gather (struct nbd_framing *f, struct stream *st, uint8_t *buf, size_t len)
{
  size_t n = MIN (len, st->want - st->have);

  if (f->readonly && st->patch_at >= 0 && (size_t) st->patch_at >= st->have &&
      (size_t) st->patch_at < st->have + n)
    buf[st->patch_at - st->have] |= NBD_FLAG_READ_ONLY;
  memcpy (st->hdr + st->have, buf, n);
  st->have += n;
  st->total += n;
  return n;
}

static void
expect_header (struct stream *st, enum stream_state state, size_t want)
{
  st->state = state;
  st->have = 0;
  st->want = want;
  st->patch_at = -1;
}

static void
expect_payload (struct stream *st, enum stream_state state, uint64_t len)
{
  st->state = state;
  st->left = len;
  st->pos = 0;
}

/* Pass (or drop) payload bytes, keeping the first ones in @cap. */
static size_t
payload (struct stream *st, uint8_t *buf, size_t len)
{
  size_t n = (size_t) MIN ((uint64_t) len, st->left);

  if (st->pos < CAP_SIZE)
    memcpy (st->cap + st->pos, buf, MIN (n, CAP_SIZE - st->pos));
  st->pos += n;
  st->left -= n;
  st->total += n;
  return n;
}

static void
copy_string (char *dst, size_t dst_size, const uint8_t *src, size_t len)
{
  len = MIN (len, dst_size - 1);
  memcpy (dst, src, len);
  dst[len] = '\0';
  /* Keep the summary on one line. */
  for (size_t i = 0; i < len; i++)
    if ((unsigned char) dst[i] < 0x20)
      dst[i] = '?';
}

static void
enter_tls (struct nbd_framing *f)
{
  f->hs.tls = true;
  f->s.state = S_TLS;
  /* A read-only guard holding back header bytes gives them back. */
  if (f->readonly && f->c.state == C_HEADER)
    f->c.reinsert = f->c.have;
  f->c.state = C_TLS;
}

static void
enter_transmission (struct nbd_framing *f)
{
  f->hs.negotiated = true;
  f->transmission = true;
  expect_header (&f->s, S_REPLY_HEADER, 4);
}

/* ---- client -> server ---- */

static bool
client_option_done (struct nbd_framing *f, GError **error)
{
  struct stream *c = &f->c;
  size_t caplen = (size_t) MIN (c->pos, (uint64_t) CAP_SIZE);

  switch (c->opt) {
  case NBD_OPT_EXPORT_NAME:
    copy_string (f->hs.export_name, sizeof f->hs.export_name, c->cap, caplen);
    f->export_name_sent = true;
    f->transmission = true;
    break;
  case NBD_OPT_GO:
    if (caplen >= 4) {
      size_t namelen = MIN (be32 (c->cap), caplen - 4);
      copy_string (f->hs.export_name, sizeof f->hs.export_name, c->cap + 4, namelen);
    }
    break;
  case NBD_OPT_SET_META_CONTEXT:
    f->hs.meta[0] = '\0';
    break;
  case NBD_OPT_ABORT:
    f->aborted = true;
    break;
  }
  expect_header (c, C_HEADER, 4);
  return true;
}

static bool
client_header_magic (struct nbd_framing *f, const uint8_t *rest, size_t rest_len,
                     GError **error)
{
  struct stream *c = &f->c;
  uint32_t magic = be32 (c->hdr);

  if (magic == (uint32_t) (NBD_IHAVEOPT >> 32) && !f->transmission) {
    c->want = 16;
  } else if (magic == NBD_REQUEST_MAGIC || magic == NBD_EXTENDED_REQUEST_MAGIC) {
    if (!f->transmission)
      return fail (error, "client sent a request before negotiation finished "
                   "(after %" G_GUINT64_FORMAT " bytes)", c->total - c->have);
    if ((magic == NBD_EXTENDED_REQUEST_MAGIC) != f->hs.extended)
      return fail (error, "client sent a %s request header, but extended headers "
                   "were %snegotiated", f->hs.extended ? "compact" : "32-byte",
                   f->hs.extended ? "" : "not ");
    c->want = f->hs.extended ? NBD_EXTENDED_REQUEST_SIZE : NBD_REQUEST_SIZE;
  } else if (f->transmission && magic == (uint32_t) (NBD_IHAVEOPT >> 32)) {
    return fail (error, "client sent an option after negotiation finished");
  } else {
    return bad_magic (error, "client", f->transmission ? "a bad request magic"
                      : "a bad option magic", c, rest, rest_len);
  }
  return true;
}

static bool
client_option_header (struct nbd_framing *f, GError **error)
{
  struct stream *c = &f->c;
  uint32_t len = be32 (c->hdr + 12);

  if (be64 (c->hdr) != NBD_IHAVEOPT)
    return fail (error, "client sent a bad option magic 0x%016" G_GINT64_MODIFIER "x",
                 be64 (c->hdr));
  c->opt = be32 (c->hdr + 8);
  if (len > NBD_MAX_OPTION)
    return fail (error, "client sent %s (%u) with %u bytes of data (limit %u)",
                 opt_name (c->opt), c->opt, len, NBD_MAX_OPTION);
  expect_payload (c, C_OPT_DATA, len);
  return len > 0 || client_option_done (f, error);
}

static bool
client_request (struct nbd_framing *f, GError **error)
{
  struct stream *c = &f->c;
  uint16_t flags = be16 (c->hdr + 4), type = be16 (c->hdr + 6);
  uint64_t cookie = be64 (c->hdr + 8), offset = be64 (c->hdr + 16);
  uint64_t length = f->hs.extended ? be64 (c->hdr + 24) : be32 (c->hdr + 24);
  bool has_payload = type == NBD_CMD_WRITE ||
                     (f->hs.extended && (flags & NBD_CMD_FLAG_PAYLOAD_LEN));
  uint64_t data = type == NBD_CMD_READ || has_payload ? length : 0;
  struct nbd_cmd_stats *st = stats_for (f, type);
  struct inflight *e;

  if (type == NBD_CMD_DISC) {
    st->ops++;
    c->state = C_DISCONNECTED;
    return true;
  }
  if (data > f->max_payload)
    return fail (error, "client sent a %s request of %" G_GUINT64_FORMAT " bytes "
                 "(limit %u%s)", nbd_cmd_name (type), data, f->max_payload,
                 f->hs.have_block_size ? ", the server's maximum block size" : "");
  if (lookup (f, cookie))
    return fail (error, "client reused cookie 0x%" G_GINT64_MODIFIER "x while it "
                 "is still in flight", cookie);
  if (f->inflight >= NBD_MAX_INFLIGHT)
    return fail (error, "client has more than %u requests in flight", NBD_MAX_INFLIGHT);

  e = insert (f, cookie);
  e->type = type;
  e->offset = offset;
  e->length = length;
  e->start = g_get_monotonic_time ();
  st->inflight_sum += f->inflight;
  st->inflight_max = MAX (st->inflight_max, f->inflight);

  c->drop = false;
  if (f->readonly && (type == NBD_CMD_WRITE || type == NBD_CMD_TRIM ||
                      type == NBD_CMD_WRITE_ZEROES)) {
    e->refused = true;
    f->refused_pending++;
    st->refused++;
    c->drop = true;
  } else {
    if (st->inflight_now++ == 0)
      st->busy_since = e->start;
    if (f->readonly)
      c->reinsert = c->want;
  }
  if (has_payload && length > 0)
    expect_payload (c, C_PAYLOAD, length);
  else
    expect_header (c, C_HEADER, 4);
  return true;
}

static bool
feed_client (struct nbd_framing *f, uint8_t *buf, size_t len, struct nbd_step *step,
             GError **error)
{
  struct stream *c = &f->c;
  size_t n;

  if (c->reinsert) {
    *step = (struct nbd_step) { NBD_INSERT, c->reinsert, c->hdr };
    c->reinsert = 0;
    return true;
  }
  if (len == 0)
    return true;

  switch (c->state) {
  case C_TLS:
    step->n = len;
    return true;
  case C_EARLY:
    if (f->readonly)
      return fail (error, "client sent data before the server's greeting");
    /* Judged once the greeting arrives: this may be no NBD client at all,
     * and the server's answer tells more. */
    f->early += len;
    step->n = len;
    return true;
  case C_DISCONNECTED:
    return fail (error, "client sent data after NBD_CMD_DISC");
  case C_FLAGS:
    step->n = gather (f, c, buf, len);
    if (c->have == c->want) {
      uint32_t flags = be32 (c->hdr);
      if (flags & ~(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES))
        return fail (error, "client sent unknown client flags 0x%08x", flags);
      f->no_zeroes = (flags & NBD_FLAG_C_NO_ZEROES) && (f->hsflags & NBD_FLAG_NO_ZEROES);
      expect_header (c, C_HEADER, 4);
    }
    return true;
  case C_HEADER:
    /* The magic decides how long the header is. */
    n = 0;
    do {
      n += gather (f, c, buf + n, len - n);
      if (c->have == 4 && c->want == 4 &&
          !client_header_magic (f, buf + n, len - n, error))
        return false;
    } while (c->have < c->want && n < len);
    *step = (struct nbd_step) { f->readonly ? NBD_DROP : NBD_PASS, n, NULL };
    if (c->have < c->want)
      return true;
    if (c->want == 16) {
      if (f->readonly)
        c->reinsert = 16;
      return client_option_header (f, error);
    }
    return client_request (f, error);
  case C_OPT_DATA:
    step->n = payload (c, buf, len);
    return c->left > 0 || client_option_done (f, error);
  case C_PAYLOAD:
    step->n = payload (c, buf, len);
    step->action = c->drop ? NBD_DROP : NBD_PASS;
    if (c->left == 0)
      expect_header (c, C_HEADER, 4);
    return true;
  case S_GREETING ... S_TLS:  /* the server's */
    break;
  }
  g_assert_not_reached ();
}

/* ---- server -> client ---- */

static void
record_export (struct nbd_framing *f, uint64_t size, uint16_t flags)
{
  f->hs.have_export = true;
  f->hs.size = size;
  f->hs.flags = flags;
}

static void
greeting_done (struct nbd_framing *f)
{
  f->greeted = true;
  f->c.state = f->hs.style == NBD_STYLE_OLDSTYLE ? C_HEADER : C_FLAGS;
  expect_header (&f->c, f->c.state, 4);
}

static bool
server_option_reply_done (struct nbd_framing *f, GError **error)
{
  struct stream *s = &f->s;
  size_t caplen = (size_t) MIN (s->pos, (uint64_t) CAP_SIZE);

  expect_header (s, S_OPT_HEADER, 20);
  if (s->type == NBD_REP_ACK) {
    switch (s->opt) {
    case NBD_OPT_STRUCTURED_REPLY: f->hs.structured = true; break;
    case NBD_OPT_EXTENDED_HEADERS: f->hs.extended = true; break;
    case NBD_OPT_STARTTLS: enter_tls (f); break;
    case NBD_OPT_GO:
      if (!f->hs.have_export)
        return fail (error, "server acknowledged NBD_OPT_GO without NBD_INFO_EXPORT");
      enter_transmission (f);
      break;
    }
  } else if (s->type == NBD_REP_INFO && caplen >= 2) {
    uint16_t info = be16 (s->cap);
    if (info == NBD_INFO_EXPORT && s->pos == 12) {
      record_export (f, be64 (s->cap + 2), be16 (s->cap + 10));
    } else if (info == NBD_INFO_BLOCK_SIZE && s->pos == 14) {
      f->hs.have_block_size = true;
      f->hs.min_block = be32 (s->cap + 2);
      f->hs.pref_block = be32 (s->cap + 6);
      f->hs.max_block = be32 (s->cap + 10);
      if (f->hs.max_block > 0)
        f->max_payload = MIN (f->hs.max_block, NBD_MAX_PAYLOAD);
    } else if (info == NBD_INFO_EXPORT || info == NBD_INFO_BLOCK_SIZE) {
      return fail (error, "server sent NBD_INFO %u with a wrong length %" G_GUINT64_FORMAT,
                   info, s->pos);
    }
  } else if (s->type == NBD_REP_META_CONTEXT && s->opt == NBD_OPT_SET_META_CONTEXT &&
             caplen > 4) {
    size_t used = strlen (f->hs.meta);
    if (used > 0 && used + 1 < sizeof f->hs.meta)
      f->hs.meta[used++] = ',';
    copy_string (f->hs.meta + used, sizeof f->hs.meta - used, s->cap + 4, caplen - 4);
  }
  return true;
}

static bool
server_option_header (struct nbd_framing *f, GError **error)
{
  struct stream *s = &f->s;
  uint32_t len = be32 (s->hdr + 16);

  if (be64 (s->hdr) != NBD_REP_MAGIC)
    return fail (error, "server sent a bad option reply magic 0x%016" G_GINT64_MODIFIER "x",
                 be64 (s->hdr));
  s->opt = be32 (s->hdr + 8);
  s->type = be32 (s->hdr + 12);
  if (len > NBD_MAX_OPTION)
    return fail (error, "server sent a reply to %s with %u bytes of data (limit %u)",
                 opt_name (s->opt), len, NBD_MAX_OPTION);
  expect_payload (s, S_OPT_DATA, len);
  return len > 0 || server_option_reply_done (f, error);
}

static bool
server_reply_magic (struct nbd_framing *f, const uint8_t *rest, size_t rest_len,
                    GError **error)
{
  struct stream *s = &f->s;
  uint32_t magic = be32 (s->hdr);

  if (magic == NBD_SIMPLE_REPLY_MAGIC && !f->hs.extended)
    s->want = NBD_SIMPLE_REPLY_SIZE;
  else if (magic == NBD_STRUCTURED_REPLY_MAGIC && f->hs.structured && !f->hs.extended)
    s->want = NBD_STRUCTURED_REPLY_SIZE;
  else if (magic == NBD_EXTENDED_REPLY_MAGIC && f->hs.extended)
    s->want = NBD_EXTENDED_REPLY_SIZE;
  else if (magic == NBD_SIMPLE_REPLY_MAGIC || magic == NBD_STRUCTURED_REPLY_MAGIC ||
           magic == NBD_EXTENDED_REPLY_MAGIC)
    return fail (error, "server sent a reply magic 0x%08x that was not negotiated", magic);
  else
    return bad_magic (error, "server", "a bad reply magic", s, rest, rest_len);
  return true;
}

static bool
check_chunk (struct nbd_framing *f, uint16_t type, uint16_t flags, uint64_t len,
             GError **error)
{
  bool ok;

  switch (type) {
  case NBD_REPLY_TYPE_NONE: ok = len == 0 && (flags & NBD_REPLY_FLAG_DONE); break;
  case NBD_REPLY_TYPE_OFFSET_DATA: ok = len >= 9 && len - 8 <= f->max_payload; break;
  case NBD_REPLY_TYPE_OFFSET_HOLE: ok = len == 12; break;
  case NBD_REPLY_TYPE_BLOCK_STATUS: ok = len >= 12 && (len - 4) % 8 == 0; break;
  case NBD_REPLY_TYPE_BLOCK_STATUS_EXT: ok = len >= 24 && (len - 8) % 16 == 0; break;
  default:
    if (!NBD_REPLY_TYPE_IS_ERR (type))
      return fail (error, "server sent an unknown reply chunk type %u", type);
    ok = len >= 6;
  }
  if (ok && len > (uint64_t) f->max_payload + 8)
    ok = false;
  if (!ok)
    return fail (error, "server sent a reply chunk of type %u with a bad length %"
                 G_GUINT64_FORMAT " (limit %u)", type, len, f->max_payload);
  return true;
}

static bool
server_reply (struct nbd_framing *f, GError **error)
{
  struct stream *s = &f->s;
  uint64_t cookie = be64 (s->hdr + 8);
  struct inflight *e = lookup (f, cookie);
  uint64_t len;

  if (e == NULL || e->refused)
    return fail (error, "server replied to cookie 0x%" G_GINT64_MODIFIER "x, which no "
                 "request in flight uses", cookie);
  if (s->want == NBD_SIMPLE_REPLY_SIZE) {
    uint32_t err = be32 (s->hdr + 4);
    /* Only a successful READ's simple reply carries data. */
    len = e->type == NBD_CMD_READ && err == 0 ? e->length : 0;
    complete (f, e, err != 0);
    s->chunk_type = NBD_REPLY_TYPE_NONE;
    s->chunk_flags = 0;
  } else {
    s->chunk_flags = be16 (s->hdr + 4);
    s->chunk_type = be16 (s->hdr + 6);
    len = s->want == NBD_EXTENDED_REPLY_SIZE ? be64 (s->hdr + 24) : be32 (s->hdr + 16);
    if (!check_chunk (f, s->chunk_type, s->chunk_flags, len, error))
      return false;
    s->cookie = cookie;
  }
  expect_payload (s, S_PAYLOAD, len);
  return true;
}

/* The end of a reply payload, or of a chunk without one. */
static void
server_chunk_done (struct nbd_framing *f)
{
  struct stream *s = &f->s;
  struct inflight *e;

  expect_header (s, S_REPLY_HEADER, 4);
  if (s->chunk_flags == 0 && s->chunk_type == NBD_REPLY_TYPE_NONE)
    return;                   /* a simple reply, completed at its header */
  e = lookup (f, s->cookie);
  if (e == NULL)
    return;
  if (s->chunk_type == NBD_REPLY_TYPE_OFFSET_HOLE)
    stats_for (f, e->type)->hole_bytes += be32 (s->cap + 8);
  if (NBD_REPLY_TYPE_IS_ERR (s->chunk_type))
    e->failed = true;
  if (s->chunk_flags & NBD_REPLY_FLAG_DONE)
    complete (f, e, false);
}

/* Render the EPERM reply to one refused request, if there is room. */
static size_t
render_refusal (struct nbd_framing *f, size_t room)
{
  static const char msg[] = "read-only (ferry --nbd-readonly)";
  const size_t msglen = sizeof msg - 1;
  struct inflight *e = NULL;
  uint8_t *p = f->out;
  size_t size;

  if (f->hs.extended)
    size = NBD_EXTENDED_REPLY_SIZE + 6 + msglen;
  else if (f->hs.structured)
    size = NBD_STRUCTURED_REPLY_SIZE + 6 + msglen;
  else
    size = NBD_SIMPLE_REPLY_SIZE;
  if (size > room)
    return 0;
  for (unsigned i = 0; i < TABLE_SIZE && e == NULL; i++)
    if (f->table[i].used && f->table[i].refused)
      e = &f->table[i];

  if (f->hs.extended || f->hs.structured) {
    put32 (p, f->hs.extended ? NBD_EXTENDED_REPLY_MAGIC : NBD_STRUCTURED_REPLY_MAGIC);
    put16 (p + 4, NBD_REPLY_FLAG_DONE);
    put16 (p + 6, NBD_REPLY_TYPE_ERROR);
    put64 (p + 8, e->cookie);
    if (f->hs.extended) {
      put64 (p + 16, e->offset);
      put64 (p + 24, 6 + msglen);
      p += NBD_EXTENDED_REPLY_SIZE;
    } else {
      put32 (p + 16, 6 + msglen);
      p += NBD_STRUCTURED_REPLY_SIZE;
    }
    put32 (p, NBD_EPERM);
    put16 (p + 4, msglen);
    memcpy (p + 6, msg, msglen);
  } else {
    put32 (p, NBD_SIMPLE_REPLY_MAGIC);
    put32 (p + 4, NBD_EPERM);
    put64 (p + 8, e->cookie);
  }
  f->refused_pending--;
  remove_entry (f, e);
  return size;
}

static bool
feed_server (struct nbd_framing *f, uint8_t *buf, size_t len, size_t room,
             struct nbd_step *step, GError **error)
{
  struct stream *s = &f->s;
  size_t n;

  /* Our own replies go in only between two of the server's messages. */
  if (s->state == S_REPLY_HEADER && s->have == 0 && f->refused_pending > 0 &&
      (n = render_refusal (f, room)) > 0) {
    *step = (struct nbd_step) { NBD_INSERT, n, f->out };
    return true;
  }
  if (len == 0)
    return true;

  switch (s->state) {
  case S_TLS:
    step->n = len;
    return true;
  case S_GREETING:
    step->n = n = gather (f, s, buf, len);
    if (memcmp (s->hdr, "NBDMAGIC", MIN (s->have, 8)) != 0)
      return bad_magic (error, "server", "no NBD greeting", s, buf + n, len - n);
    if (s->have < s->want)
      return true;
    if (be64 (s->hdr + 8) == NBD_IHAVEOPT) {
      expect_header (s, S_HSFLAGS, 2);
    } else if (be64 (s->hdr + 8) == NBD_OLDSTYLE_MAGIC) {
      expect_header (s, S_OLDSTYLE, 12);
      s->patch_at = 11;       /* low byte of the 32-bit flags */
    } else {
      return bad_magic (error, "server", "NBDMAGIC and then an unknown magic", s,
                        buf + n, len - n);
    }
    return true;
  case S_OLDSTYLE:
    step->n = gather (f, s, buf, len);
    if (s->have == s->want) {
      f->hs.style = NBD_STYLE_OLDSTYLE;
      record_export (f, be64 (s->hdr), (uint16_t) be32 (s->hdr + 8));
      expect_payload (s, S_ZEROES, NBD_OLDSTYLE_ZEROES);
      greeting_done (f);
      f->transmission = true;
    }
    break;
  case S_HSFLAGS:
    step->n = gather (f, s, buf, len);
    if (s->have == s->want) {
      f->hsflags = be16 (s->hdr);
      f->hs.style = (f->hsflags & NBD_FLAG_FIXED_NEWSTYLE) ? NBD_STYLE_FIXED_NEWSTYLE
                                                           : NBD_STYLE_NEWSTYLE;
      expect_header (s, S_OPT_HEADER, 20);
      greeting_done (f);
    }
    break;
  case S_OPT_HEADER:
  case S_EXPORT_REPLY:
    if (s->have == 0 && f->export_name_sent) {
      expect_header (s, S_EXPORT_REPLY, 10);
      s->patch_at = 9;        /* low byte of the 16-bit flags */
    }
    step->n = gather (f, s, buf, len);
    if (s->have < s->want)
      break;
    if (s->state == S_OPT_HEADER)
      return server_option_header (f, error);
    record_export (f, be64 (s->hdr), be16 (s->hdr + 8));
    f->export_name_sent = false;
    if (f->no_zeroes)
      enter_transmission (f);
    else
      expect_payload (s, S_ZEROES, NBD_EXPORT_NAME_ZEROES);
    break;
  case S_ZEROES:
    step->n = payload (s, buf, len);
    if (s->left == 0)
      enter_transmission (f);
    break;
  case S_OPT_DATA:
    /* NBD_INFO_EXPORT: the low byte of the flags is payload byte 11. */
    if (f->readonly && s->type == NBD_REP_INFO && s->pos <= 11 && s->pos + len > 11) {
      /* The info type is payload bytes 0-1: kept in @cap, or still in @buf. */
      uint8_t t0 = s->pos > 0 ? s->cap[0] : buf[0];
      uint8_t t1 = s->pos > 1 ? s->cap[1] : buf[1 - s->pos];
      if ((t0 << 8 | t1) == NBD_INFO_EXPORT)
        buf[11 - s->pos] |= NBD_FLAG_READ_ONLY;
    }
    step->n = payload (s, buf, len);
    return s->left > 0 || server_option_reply_done (f, error);
  case S_REPLY_HEADER:
    step->n = n = gather (f, s, buf, len);
    if (s->have == 4 && s->want == 4) {
      if (!server_reply_magic (f, buf + n, len - n, error))
        return false;
      if (n < len)
        step->n += gather (f, s, buf + n, len - n);
    }
    if (s->have == s->want && s->have > 4) {
      if (!server_reply (f, error))
        return false;
      if (s->left == 0)
        server_chunk_done (f);
    }
    break;
  case S_PAYLOAD:
    step->n = payload (s, buf, len);
    if (s->left == 0)
      server_chunk_done (f);
    break;
  case C_EARLY ... C_TLS:     /* the client's */
    g_assert_not_reached ();
  }
  if (f->greeted && f->early > 0)
    return fail (error, "client sent %" G_GUINT64_FORMAT " bytes before the server's "
                 "greeting", f->early);
  return true;
}

/* ---- public ---- */

struct nbd_framing *
nbd_framing_new (bool readonly)
{
  struct nbd_framing *f = g_new0 (struct nbd_framing, 1);

  f->readonly = readonly;
  f->max_payload = NBD_MAX_PAYLOAD;
  f->c.state = C_EARLY;
  expect_header (&f->s, S_GREETING, 16);
  return f;
}

void
nbd_framing_free (struct nbd_framing *f)
{
  g_free (f);
}

bool
nbd_framing_feed (struct nbd_framing *f, enum nbd_dir dir, uint8_t *buf, size_t len,
                  size_t room, struct nbd_step *step, GError **error)
{
  *step = (struct nbd_step) { NBD_PASS, 0, NULL };
  if (dir == NBD_C2S)
    return feed_client (f, buf, len, step, error);
  return feed_server (f, buf, len, room, step, error);
}

uint64_t
nbd_framing_opaque (const struct nbd_framing *f, enum nbd_dir dir)
{
  const struct stream *st = dir == NBD_C2S ? &f->c : &f->s;
  bool counted;

  /* The read-only guard has header bytes to put back first. */
  if (dir == NBD_C2S && f->c.reinsert > 0)
    return 0;
  if (st->state == (dir == NBD_C2S ? C_TLS : S_TLS))
    return UINT64_MAX;
  counted = dir == NBD_C2S ? st->state == C_PAYLOAD && !st->drop : st->state == S_PAYLOAD;
  return counted && st->pos >= CAP_SIZE ? st->left : 0;
}

void
nbd_framing_skip (struct nbd_framing *f, enum nbd_dir dir, size_t n)
{
  struct nbd_step step;

  g_assert (n <= nbd_framing_opaque (f, dir));
  /* Those states never read the buffer (payload() keeps nothing past
   * CAP_SIZE) and cannot fail: the feed only counts. */
  if (n > 0 && !nbd_framing_feed (f, dir, NULL, n, 0, &step, NULL))
    g_assert_not_reached ();
  g_assert (n == 0 || (step.action == NBD_PASS && step.n == n));
}

static const char *
c_state_name (enum stream_state state)
{
  switch (state) {
  case C_FLAGS: return "the client flags";
  case C_HEADER: return "a header";
  case C_OPT_DATA: return "an option";
  case C_PAYLOAD: return "a write request's data";
  default: return "a message";
  }
}

static const char *
s_state_name (enum stream_state state)
{
  switch (state) {
  case S_GREETING: case S_OLDSTYLE: case S_HSFLAGS: return "the greeting";
  case S_OPT_HEADER: case S_OPT_DATA: return "an option reply";
  case S_EXPORT_REPLY: case S_ZEROES: return "the export information";
  case S_REPLY_HEADER: return "a reply header";
  case S_PAYLOAD: return "a reply's data";
  default: return "a message";
  }
}

bool
nbd_framing_eof (struct nbd_framing *f, enum nbd_dir dir, GError **error)
{
  if (dir == NBD_C2S) {
    struct stream *c = &f->c;
    bool partial = ((c->state == C_FLAGS || c->state == C_HEADER) && c->have > 0) ||
                   ((c->state == C_OPT_DATA || c->state == C_PAYLOAD) && c->left > 0);
    f->client_eof = true;
    if (partial)
      return fail (error, "client closed the connection in the middle of %s "
                   "(after %" G_GUINT64_FORMAT " bytes)", c_state_name (c->state), c->total);
    return true;
  }

  struct stream *s = &f->s;
  bool partial = s->state != S_TLS &&
                 ((s->have > 0 && s->have < s->want) || s->left > 0);
  if (s->state == S_TLS)
    return true;
  if (s->state == S_GREETING && s->total == 0)
    return fail (error, "server closed the connection without sending the NBD greeting");
  if (partial)
    return fail (error, "server closed the connection in the middle of %s "
                 "(after %" G_GUINT64_FORMAT " bytes)", s_state_name (s->state), s->total);
  if (!f->hs.negotiated && !f->aborted && !f->client_eof)
    return fail (error, "server closed the connection before the handshake finished");
  if (f->inflight > f->refused_pending && f->c.state != C_DISCONNECTED && !f->client_eof)
    return fail (error, "server closed the connection with %u requests in flight",
                 f->inflight - f->refused_pending);
  return true;
}

bool
nbd_framing_greeted (const struct nbd_framing *f)
{
  return f->greeted;
}

const struct nbd_handshake_info *
nbd_framing_handshake (const struct nbd_framing *f)
{
  return &f->hs;
}

const struct nbd_cmd_stats *
nbd_framing_cmd_stats (const struct nbd_framing *f, unsigned index)
{
  return &f->stats[MIN (index, NBD_STATS_CMDS - 1)];
}
