/* ferry: --nbd glue between a relay's buffers and the NBD parser. */
#include <config.h>

#include "nbd-relay.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "gsource-release.h"
#include "message.h"
#include "nbd-framing.h"
#include "buffer-nbd-pipe.h"
#include "buffer-ring.h"
#include "nbd-proto.h"
#include "stats.h"

/* One direction of the relay, and the NBD stream it carries. */
struct nbd_side {
  struct nbd_relay *nr;
  enum nbd_dir dir;           /* up: NBD_C2S, down: NBD_S2C (nbd-framing.h) */
  struct buffer *buf;         /* a ring, or an NBD pipe (never with the guard) */
};

struct nbd_relay {
  int refs;                   /* the creator's, and each watched buffer's */
  struct nbd_config config;
  char *label;                /* "" or "LABEL: " */
  char *name;                 /* LABEL; NULL without one */
  struct nbd_framing *f;
  struct nbd_side up, down;   /* local -> remote, remote -> local */
  GError *error;              /* the first violation */
  bool error_reported;        /* handed to the relay (buffer_violation) */
  gint64 started;
  GSource *stats_timer;       /* with stats_interval */
  GSource *greeting_timer;    /* until the server greets */
  GSourceFunc wake;           /* makes the relay look at nbd_relay_error() */
  void *wake_data;
};

/* Whether an inspector should parse @n fresh bytes: not after a
 * violation, and not at end of stream (n == 0), which it judges here. */
static bool
side_parses (struct nbd_side *side, size_t n)
{
  struct nbd_relay *nr = side->nr;

  if (nr->error == NULL && n == 0)
    nbd_framing_eof (nr->f, side->dir, &nr->error);
  return nr->error == NULL && n > 0;
}

/* Once the server greeted, its timer has nothing left to watch. */
static void
side_parsed (struct nbd_side *side)
{
  struct nbd_relay *nr = side->nr;

  if (nbd_framing_greeted (nr->f))
    g_clear_pointer (&nr->greeting_timer, gsource_release);
}

/* Feed the @n fresh bytes at [ring->len, ring->len + n) to the parser and
 * apply its steps in place: w is where the next kept byte goes, r the next
 * byte to parse, end the end of the fresh bytes (inserts can push it). */
static size_t
inspect_ring (void *data, struct buffer *ring, size_t n)
{
  struct nbd_side *side = data;
  struct nbd_relay *nr = side->nr;
  size_t base = ring->len, w = 0, r = 0, end = n;

  if (!side_parses (side, n))
    return 0;
  for (;;) {
    size_t contiguous = 0, span = 0, room = (r - w) + (ring->size - base - end);
    uint8_t *p = NULL;
    struct nbd_step step;

    if (r < end) {
      p = buffer_ring_at (ring, base + r, &contiguous);
      span = MIN (contiguous, end - r);
    }
    if (!nbd_framing_feed (nr->f, side->dir, p, span, room, &step, &nr->error))
      return 0;
    if (step.n == 0)
      break;
    switch (step.action) {
    case NBD_PASS:
      if (w != r)
        buffer_ring_move (ring, base + w, base + r, step.n);
      w += step.n;
      r += step.n;
      break;
    case NBD_DROP:
      r += step.n;
      break;
    case NBD_INSERT:
      if (w + step.n > r) {
        size_t shift = w + step.n - r;
        g_assert (end + shift <= ring->size - base);
        buffer_ring_move (ring, base + r + shift, base + r, end - r);
        r += shift;
        end += shift;
      }
      buffer_ring_write (ring, base + w, step.insert, step.n);
      w += step.n;
      break;
    }
  }
  side_parsed (side);
  return w;
}

/* Feed the @n bytes a pipe is about to take in, copied at @bytes.
 * Without the guard every step passes. */
static bool
inspect_pipe (void *data, uint8_t *bytes, size_t n)
{
  struct nbd_side *side = data;
  struct nbd_relay *nr = side->nr;
  struct nbd_step step;

  if (!side_parses (side, n))
    return false;
  for (size_t r = 0; r < n; r += step.n) {
    if (!nbd_framing_feed (nr->f, side->dir, bytes + r, n - r, 0, &step, &nr->error))
      return false;
    g_assert (step.action == NBD_PASS && step.n > 0);
  }
  side_parsed (side);
  return true;
}

/* The read-only guard's replies into the down buffer, once the server's
 * stream is between messages.  Only the guard inserts, and it always has a
 * ring. */
static void
watch_settle (struct buffer *b)
{
  struct nbd_side *side = b->watcher_data;
  struct nbd_relay *nr = side->nr;
  struct buffer *ring = b;
  struct nbd_step step;

  if (side != &nr->down)
    return;
  while (nr->error == NULL &&
         nbd_framing_feed (nr->f, side->dir, NULL, 0, ring->size - ring->len, &step,
                           &nr->error) &&
         step.n > 0) {
    buffer_ring_write (ring, ring->len, step.insert, step.n);
    buffer_produced (ring, step.n);
  }
}

const GError *
nbd_relay_error (const struct nbd_relay *nr)
{
  return nr->error;
}

static const GError *
watch_violation (struct buffer *b)
{
  struct nbd_relay *nr = ((struct nbd_side *) b->watcher_data)->nr;

  if (nr->error && !nr->error_reported) {
    g_prefix_error (&nr->error, "NBD protocol violation: ");
    nr->error_reported = true;
  }
  return nr->error;
}

static void nbd_relay_print_stats (struct nbd_relay *nr, bool final);
static StatsValue *nbd_relay_json (struct nbd_relay *nr);

/* Once per connection: on the up side. */
static void
watch_finish (struct buffer *b)
{
  struct nbd_side *side = b->watcher_data;

  if (side == &side->nr->up)
    nbd_relay_print_stats (side->nr, true);
}

static void
watch_stats_json (struct buffer *b, StatsValue *object)
{
  struct nbd_side *side = b->watcher_data;
  StatsValue *nbd = nbd_relay_json (side->nr);

  if (nbd)
    stats_object_set (object, "nbd", nbd);
}

static void
watch_release (struct buffer *b)
{
  struct nbd_side *side = b->watcher_data;

  side->buf = NULL;
  nbd_relay_unref (side->nr);
}

static const struct buffer_watcher_ops nbd_watcher_ops = {
  .settle = watch_settle,
  .violation = watch_violation,
  .finish = watch_finish,
  .release = watch_release,
  .stats_json = watch_stats_json,
};

static void
side_attach (struct nbd_side *side)
{
  if (buffer_nbd_pipe_is (side->buf))
    buffer_nbd_pipe_set_inspector (side->buf, side->nr->f, side->dir, inspect_pipe, side);
  else
    buffer_ring_set_inspector (side->buf, inspect_ring, side, NBD_RING_RESERVE);
  side->buf->watcher = &nbd_watcher_ops;
  side->buf->watcher_data = side;
  side->nr->refs++;
}

static void
append_flag (GString *out, uint16_t flags, uint16_t bit, const char *name)
{
  if (flags & bit)
    g_string_append_printf (out, "%s%s", out->str[out->len - 1] == '(' ? "" : ",", name);
}

static const char *
style_name (enum nbd_style style)
{
  switch (style) {
  case NBD_STYLE_OLDSTYLE: return "oldstyle";
  case NBD_STYLE_NEWSTYLE: return "newstyle";
  case NBD_STYLE_FIXED_NEWSTYLE: return "fixed-newstyle";
  default: return "none";
  }
}

static void
format_handshake (struct nbd_relay *nr, GString *out)
{
  const struct nbd_handshake_info *hs = nbd_framing_handshake (nr->f);

  g_string_append_printf (out, "%snbd: handshake style=%s", nr->label, style_name (hs->style));
  if (hs->tls) {
    g_string_append (out, " tls=yes TLS: not inspected\n");
    return;
  }
  g_string_append_printf (out, " export=\"%s\"", hs->export_name);
  if (hs->have_export) {
    g_string_append_printf (out, " size=%" G_GUINT64_FORMAT " flags=0x%04x(", hs->size,
                            hs->flags);
    append_flag (out, hs->flags, NBD_FLAG_READ_ONLY, "read_only");
    append_flag (out, hs->flags, NBD_FLAG_SEND_FLUSH, "flush");
    append_flag (out, hs->flags, NBD_FLAG_SEND_FUA, "fua");
    append_flag (out, hs->flags, NBD_FLAG_ROTATIONAL, "rotational");
    append_flag (out, hs->flags, NBD_FLAG_SEND_TRIM, "trim");
    append_flag (out, hs->flags, NBD_FLAG_SEND_WRITE_ZEROES, "write_zeroes");
    append_flag (out, hs->flags, NBD_FLAG_SEND_DF, "df");
    append_flag (out, hs->flags, NBD_FLAG_CAN_MULTI_CONN, "multi_conn");
    append_flag (out, hs->flags, NBD_FLAG_SEND_CACHE, "cache");
    append_flag (out, hs->flags, NBD_FLAG_SEND_FAST_ZERO, "fast_zero");
    g_string_append_c (out, ')');
  }
  if (hs->have_block_size)
    g_string_append_printf (out, " block_min=%u block_pref=%u block_max=%u",
                            hs->min_block, hs->pref_block, hs->max_block);
  g_string_append_printf (out, " structured_replies=%s extended_headers=%s "
                          "meta_contexts=%s tls=no\n", hs->structured ? "yes" : "no",
                          hs->extended ? "yes" : "no", hs->meta[0] ? hs->meta : "none");
}

static void
format_commands (struct nbd_relay *nr, GString *out)
{
  gint64 now = g_get_monotonic_time ();

  for (unsigned i = 0; i < NBD_STATS_CMDS; i++) {
    const struct nbd_cmd_stats *st = nbd_framing_cmd_stats (nr->f, i);
    uint64_t sent = st->ops + st->inflight_now + st->refused;
    double busy = (st->busy_usec + (st->inflight_now ? now - st->busy_since : 0)) / 1e6;

    if (sent == 0 || i == NBD_CMD_DISC)
      continue;
    g_string_append_printf (out, "%snbd: cmd=%s ops=%" G_GUINT64_FORMAT " bytes=%"
                            G_GUINT64_FORMAT " seconds=%.3f mib_per_s=%.1f "
                            "inflight_avg=%.1f inflight_max=%u errors=%" G_GUINT64_FORMAT,
                            nr->label, nbd_cmd_name (i), st->ops, st->bytes,
                            st->usec / 1e6, busy > 0 ? st->bytes / 1048576.0 / busy : 0.0,
                            (double) st->inflight_sum / MAX (sent - st->refused, 1),
                            st->inflight_max, st->errors);
    if (i == NBD_CMD_READ)
      g_string_append_printf (out, " hole_bytes=%" G_GUINT64_FORMAT, st->hole_bytes);
    if (st->refused)
      g_string_append_printf (out, " refused=%" G_GUINT64_FORMAT, st->refused);
    g_string_append_c (out, '\n');
  }
}

/* --stats=json: format_handshake's fields. */
static StatsValue *
handshake_json (struct nbd_relay *nr)
{
  static const struct { uint16_t bit; const char *name; } flags[] = {
    { NBD_FLAG_READ_ONLY, "read_only" }, { NBD_FLAG_SEND_FLUSH, "flush" },
    { NBD_FLAG_SEND_FUA, "fua" }, { NBD_FLAG_ROTATIONAL, "rotational" },
    { NBD_FLAG_SEND_TRIM, "trim" }, { NBD_FLAG_SEND_WRITE_ZEROES, "write_zeroes" },
    { NBD_FLAG_SEND_DF, "df" }, { NBD_FLAG_CAN_MULTI_CONN, "multi_conn" },
    { NBD_FLAG_SEND_CACHE, "cache" }, { NBD_FLAG_SEND_FAST_ZERO, "fast_zero" },
  };
  const struct nbd_handshake_info *hs = nbd_framing_handshake (nr->f);
  StatsValue *o = stats_object_new ();

  stats_object_set_string (o, "style", style_name (hs->style));
  stats_object_set_bool (o, "tls", hs->tls);
  if (hs->tls)
    return o;
  ferry_stats_object_set_text (o, "export", hs->export_name);
  if (hs->have_export) {
    StatsValue *names = stats_array_new ();
    stats_object_set_int (o, "size", hs->size);
    stats_object_set_int (o, "flags", hs->flags);
    for (size_t i = 0; i < G_N_ELEMENTS (flags); i++)
      if (hs->flags & flags[i].bit)
        stats_array_add_string (names, flags[i].name);
    stats_object_set (o, "flag_names", names);
  }
  if (hs->have_block_size) {
    stats_object_set_int (o, "block_min", hs->min_block);
    stats_object_set_int (o, "block_pref", hs->pref_block);
    stats_object_set_int (o, "block_max", hs->max_block);
  }
  stats_object_set_bool (o, "structured_replies", hs->structured);
  stats_object_set_bool (o, "extended_headers", hs->extended);
  ferry_stats_object_set_text (o, "meta_contexts", hs->meta[0] ? hs->meta : "none");
  return o;
}

/* --stats=json: format_commands' lines, an object per command by name. */
static StatsValue *
commands_json (struct nbd_relay *nr)
{
  gint64 now = g_get_monotonic_time ();
  StatsValue *all = stats_object_new ();

  for (unsigned i = 0; i < NBD_STATS_CMDS; i++) {
    const struct nbd_cmd_stats *st = nbd_framing_cmd_stats (nr->f, i);
    uint64_t sent = st->ops + st->inflight_now + st->refused;
    double busy = (st->busy_usec + (st->inflight_now ? now - st->busy_since : 0)) / 1e6;
    StatsValue *o;

    if (sent == 0 || i == NBD_CMD_DISC)
      continue;
    o = stats_object_new ();
    stats_object_set_int (o, "ops", st->ops);
    stats_object_set_int (o, "bytes", st->bytes);
    ferry_stats_object_set_ms (o, st->usec / 1e6);
    ferry_stats_object_set_rate (o, st->bytes, busy);
    stats_object_set_double (o, "inflight_avg",
                             (double) st->inflight_sum / MAX (sent - st->refused, 1));
    stats_object_set_int (o, "inflight_max", st->inflight_max);
    stats_object_set_int (o, "errors", st->errors);
    if (i == NBD_CMD_READ)
      stats_object_set_int (o, "hole_bytes", st->hole_bytes);
    stats_object_set_int (o, "refused", st->refused);
    stats_object_set (all, nbd_cmd_name (i), o);
  }
  return all;
}

/* The "nbd" member: what nbd_relay_print_stats prints, or NULL before
 * the server greeted. */
static StatsValue *
nbd_relay_json (struct nbd_relay *nr)
{
  StatsValue *o;

  if (!nbd_framing_greeted (nr->f))
    return NULL;
  o = stats_object_new ();
  ferry_stats_object_set_ms (o, (g_get_monotonic_time () - nr->started) / 1e6);
  stats_object_set (o, "handshake", handshake_json (nr));
  if (!nbd_framing_handshake (nr->f)->tls)
    stats_object_set (o, "commands", commands_json (nr));
  return o;
}

static void
nbd_relay_print_stats (struct nbd_relay *nr, bool final)
{
  g_autoptr (GString) out = g_string_new (NULL);

  /* Nothing to tell about a peer that never spoke NBD. */
  if (!nbd_framing_greeted (nr->f))
    return;
  /* --stats=json: the final counts go into the relay's object
   * (watch_stats_json), an interval's on a line of their own. */
  if (ferry_stats_enabled ()) {
    if (!final) {
      g_autoptr (StatsValue) line = stats_object_new ();
      stats_object_set_string (line, "type", "nbd-interval");
      if (nr->name)
        ferry_stats_object_set_text (line, "connection", nr->name);
      stats_object_set (line, "nbd", nbd_relay_json (nr));
      ferry_stats_line (line);
    }
    return;
  }
  g_string_append_printf (out, "%snbd: stats %s after %.3f s\n", nr->label,
                          final ? "final" : "interval",
                          (g_get_monotonic_time () - nr->started) / 1e6);
  format_handshake (nr, out);
  if (!nbd_framing_handshake (nr->f)->tls)
    format_commands (nr, out);

  if (nr->config.stats_file) {
    FILE *fp = fopen (nr->config.stats_file, "a");
    if (fp && fputs (out->str, fp) >= 0 && fclose (fp) == 0)
      return;
    ferry_error ("%scannot write stats to '%s': %s", nr->label, nr->config.stats_file,
                 g_strerror (errno));
    if (fp)
      fclose (fp);
    return;
  }
  /* ferry_report prefixes the program name: one call per line. */
  g_auto (GStrv) lines = g_strsplit (out->str, "\n", -1);
  for (char **l = lines; *l; l++)
    if (**l)
      ferry_report ("%s", *l);
}

static gboolean
on_stats_timer (gpointer data)
{
  nbd_relay_print_stats (data, false);
  return G_SOURCE_CONTINUE;
}

static gboolean
on_greeting_timeout (gpointer data)
{
  struct nbd_relay *nr = data;

  g_clear_pointer (&nr->greeting_timer, gsource_release);
  if (nr->error == NULL)
    g_set_error (&nr->error, FERRY_ERROR, FERRY_EXIT_PROTOCOL,
                 "server sent no NBD greeting within %u seconds (an NBD server greets "
                 "at once: is this an NBD server?)", nr->config.greeting_timeout);
  return nr->wake (nr->wake_data);
}

struct nbd_relay *
nbd_relay_new (const struct nbd_config *config, const char *label,
               struct buffer *up, struct buffer *down, GSourceFunc wake, void *wake_data)
{
  struct nbd_relay *nr = g_new0 (struct nbd_relay, 1);

  nr->refs = 1;
  nr->config = *config;
  nr->label = label ? g_strdup_printf ("%s: ", label) : g_strdup ("");
  nr->name = g_strdup (label);
  nr->f = nbd_framing_new (config->readonly);
  nr->up = (struct nbd_side) { nr, NBD_C2S, up };
  nr->down = (struct nbd_side) { nr, NBD_S2C, down };
  nr->started = g_get_monotonic_time ();
  nr->wake = wake;
  nr->wake_data = wake_data;
  side_attach (&nr->up);
  side_attach (&nr->down);
  /* 0: no timer. */
  if (config->stats_interval)
    nr->stats_timer = gsource_timer_new (config->stats_interval, on_stats_timer, nr);
  if (config->greeting_timeout)
    nr->greeting_timer = gsource_timer_new (config->greeting_timeout, on_greeting_timeout, nr);
  return nr;
}

void
nbd_relay_unref (struct nbd_relay *nr)
{
  if (nr == NULL || --nr->refs > 0)
    return;
  g_clear_pointer (&nr->stats_timer, gsource_release);
  g_clear_pointer (&nr->greeting_timer, gsource_release);
  g_clear_error (&nr->error);
  nbd_framing_free (nr->f);
  g_free (nr->label);
  g_free (nr->name);
  g_free (nr);
}
