/* ferry: the relay, two symmetric pumps between two endpoints.
 *
 * pump_move() is the one function that moves bytes for either direction;
 * relay_update_interest() derives every endpoint's wanted readiness from
 * how full the buffers are.  A full buffer stops its reader, an empty one
 * stops its writer. */
#include <config.h>

#include "relay.h"

#include <errno.h>
#include <string.h>

#include "exit-codes.h"
#include "buffer-choose.h"
#include "gsource-release.h"
#include "message.h"
#include "stats.h"

struct pump {
  struct relay *relay;
  struct endpoint *src, *dst;
  struct buffer *buf;         /* from buffer_choose(): filled from src, drained to dst */
  bool src_done;              /* EOF or read error seen, or reading stopped */
  bool dst_done;              /* everything delivered and dst's write side closed */
  bool failed;                /* dst failed: src is still read (and dropped)
                                 while the other direction needs its peer to
                                 progress */
  const char *fail_action;    /* what failed on dst ("write to", "close") */
  int fail_err;               /* and its errno, for pump_report_failure */
  bool fail_reported;         /* false: dst's reader went away with nothing
                                 lost, which is no error unless bytes are
                                 dropped after it (relay_finish) */
  bool shutdown_at_end;       /* half-close dst once everything is delivered */
  bool reading;               /* src's read interest, as last set */
  gint64 last_moved;          /* monotonic microseconds of the last byte read or
                                 written (the relay's start before any) */
  guint64 bytes;              /* delivered to dst */
  guint64 dropped;            /* read from src after dst failed */
  char *scratch;              /* where those go when src wants more room */
  guint64 paused_full;        /* times the reader stopped on a full buffer */
  guint64 waited_writable;    /* times dst would have blocked */
};

struct relay {
  struct relay_config config;
  struct endpoint *local, *remote;
  struct pump up;             /* local -> remote */
  struct pump down;           /* remote -> local */
  gint64 started;             /* monotonic microseconds */
  gint64 ended;               /* and when it finished; 0 before */
  gint64 last_activity;
  GSource *idle_timer;        /* only with config.idle_timeout */
  GSource *half_close_timer;  /* half_close_timeout, once one direction is done */
  gint64 half_close_began;    /* when the first direction finished */
  GSource *done_source;       /* reports completion from the main loop */
  int exit_code;
  bool finished;
  relay_done_fn done;
  void *done_data;
};

static const char *
label_prefix (const struct relay *relay)
{
  return relay->config.label ? relay->config.label : "";
}

static const char *
label_sep (const struct relay *relay)
{
  return relay->config.label ? ": " : "";
}

/* A write failed because nothing reads the other end any more. */
static bool
reader_gone (int err)
{
  return err == EPIPE || err == ECONNRESET;
}

/* The line for a failed dst, with what it lost; a peer gone is the
 * peers' to report under peers_report_loss. */
static void
pump_report_failure (struct pump *p, size_t lost)
{
  struct relay *relay = p->relay;

  p->fail_reported = true;
  if (relay->exit_code == FERRY_EXIT_OK)
    relay->exit_code = FERRY_EXIT_IO;
  if (!(reader_gone (p->fail_err) && relay->config.peers_report_loss))
    ferry_error ("%s%scannot %s %s: %s (%" G_GUINT64_FORMAT " bytes delivered, "
                 "%zu buffered bytes not delivered)",
                 label_prefix (relay), label_sep (relay), p->fail_action,
                 endpoint_write_name (p->dst), g_strerror (p->fail_err), p->bytes, lost);
}

static void
pump_fail (struct pump *p, const char *action, int err)
{
  struct relay *relay = p->relay;
  size_t lost = p->buf->len;
  bool gone = reader_gone (err);

  p->failed = true;
  p->fail_action = action;
  p->fail_err = err;
  /* A reader that went away after taking every byte read lost nothing,
   * as head(1) after its bytes: not an error (ferry(1), END OF STREAM). */
  if (!(gone && lost == 0))
    pump_report_failure (p, lost);
  /* The remote end's peer is gone completely: local's further bytes could
   * only be dropped, so local is read no more (ferry(1), END OF STREAM). */
  if (p == &relay->up && gone)
    p->src_done = true;
  buffer_discard (p->buf);
}

/* After dst failed, read src into scratch space and forget it (see
 * pump.failed); the buffer, possibly a pipe, is never used again.  A
 * source that wants more room (ENOBUFS) gets scratch of the buffer's size. */
static ssize_t
pump_read_dropped (struct pump *p)
{
  /* Per thread: forward workers run relays side by side. */
  static _Thread_local char scratch[64 * 1024];
  struct iovec iov = { .iov_base = scratch, .iov_len = sizeof scratch };
  ssize_t n = p->src->ops->readv (p->src, &iov, 1);

  if (n < 0 && errno == ENOBUFS) {
    if (p->scratch == NULL)
      p->scratch = g_malloc (p->buf->size);
    iov = (struct iovec) { .iov_base = p->scratch, .iov_len = p->buf->size };
    n = p->src->ops->readv (p->src, &iov, 1);
  }

  if (n > 0)
    p->dropped += n;
  return n;
}

/* Bytes already buffered are still delivered: only the read failed. */
static void
pump_read_failed (struct pump *p, int err)
{
  struct relay *relay = p->relay;

  if (!(err == ECONNRESET && relay->config.peers_report_loss) &&
      !endpoint_failure_reported (p->src))
    ferry_error ("%s%scannot read from %s: %s", label_prefix (relay),
                 label_sep (relay), p->src->name, g_strerror (err));
  p->src_done = true;
  relay->exit_code = FERRY_EXIT_IO;
}

/* Read once into the free space: one read per readiness report. */
static void
pump_fill (struct pump *p)
{
  ssize_t n;

  if (p->src_done || (!p->failed && buffer_is_full (p->buf)))
    return;
  do
    n = p->failed ? pump_read_dropped (p) : p->buf->ops->fill (p->buf, p->src);
  while (n < 0 && errno == EINTR);

  if (n > 0) {
    p->relay->last_activity = p->last_moved = g_get_monotonic_time ();
  } else if (n == 0) {
    p->src_done = true;
  } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
    if (!p->failed && buffer_failed_on_dst (p->buf, errno, false))
      pump_fail (p, "write to", errno);
    else
      pump_read_failed (p, errno);
  }
}

/* Write until the buffer is empty or dst is full.  Each drain offers every
 * buffered byte, so a short one means dst is full: wait for POLLOUT rather
 * than spend a call on the EAGAIN. */
static void
pump_flush (struct pump *p)
{
  while (!buffer_is_empty (p->buf)) {
    size_t offered = p->buf->len;
    ssize_t n = p->buf->ops->drain (p->buf, p->dst);

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      p->waited_writable++;
      return;
    }
    if (n < 0 && buffer_failed_on_dst (p->buf, errno, true)) {
      pump_fail (p, "write to", errno);
      return;
    }
    if (n < 0) {
      /* A direct splice's source failed: what waited there is gone. */
      pump_read_failed (p, errno);
      buffer_discard (p->buf);
      break;
    }
    p->bytes += n;
    p->relay->last_activity = p->last_moved = g_get_monotonic_time ();
    /* A direct splice's count of what waits in its source pipe may be
     * more than the source still holds: a drain that empties the count
     * without moving it all is the end of the buffer, not a full dst. */
    if ((size_t) n < offered && !buffer_is_empty (p->buf)) {
      p->waited_writable++;
      return;
    }
  }

  if (p->src_done && !p->dst_done && !p->failed) {
    p->dst_done = true;
    if (p->shutdown_at_end && p->dst->ops->shutdown_write (p->dst) < 0 &&
        errno != ENOTCONN)
      pump_fail (p, "close", errno);
  }
}

static bool
pump_finished (const struct pump *p)
{
  return p->dst_done || (p->failed && p->src_done);
}

/* Move what the readiness report allows, in one direction: one read of up
 * to the free space, and writes until the buffer is empty or dst is full.
 * Bounded by the buffer size, so a busy direction cannot starve the other
 * or the rest of the main loop. */
static void
pump_move (struct pump *p, bool readable, bool writable)
{
  bool was_full = buffer_is_full (p->buf);

  if (readable)
    pump_fill (p);
  /* Write straight after a read rather than waiting for POLLOUT: the
   * peer is nearly always writable, and this saves a poll round. */
  if (readable || writable)
    pump_flush (p);
  /* The reader was stopped by a full buffer and there is room again: its
   * data is almost surely waiting. */
  if (was_full && writable && !buffer_is_full (p->buf))
    pump_fill (p), pump_flush (p);
}

static void
relay_update_interest (struct relay *relay)
{
  struct pump *pumps[] = { &relay->up, &relay->down };

  for (size_t i = 0; i < G_N_ELEMENTS (pumps); i++) {
    struct pump *p = pumps[i];
    bool reading = !p->src_done && !buffer_is_full (p->buf);

    if (p->reading && !reading && !p->src_done)
      p->paused_full++;
    p->reading = reading;
  }
  relay->local->ops->set_interest (relay->local, relay->up.reading,
                                   !buffer_is_empty (relay->down.buf));
  relay->remote->ops->set_interest (relay->remote, relay->down.reading,
                                    !buffer_is_empty (relay->up.buf));
}

static void
print_pump_stats (const struct relay *relay, const struct pump *p,
                  double seconds)
{
  double mib = p->bytes / (1024.0 * 1024.0);

  ferry_report ("%s%s%s -> %s: %" G_GUINT64_FORMAT " bytes in %.3f s, %.1f MiB/s, "
                "reader paused %" G_GUINT64_FORMAT " times (buffer full), "
                "writer waited %" G_GUINT64_FORMAT " times (peer busy)",
                label_prefix (relay), label_sep (relay), p->src->name,
                endpoint_write_name (p->dst), p->bytes, seconds,
                seconds > 0 ? mib / seconds : 0.0, p->paused_full, p->waited_writable);
}

static double
relay_seconds (const struct relay *relay)
{
  return ((relay->ended ? relay->ended : g_get_monotonic_time ()) - relay->started) / 1e6;
}

void
relay_print_stats (const struct relay *relay)
{
  double seconds = relay_seconds (relay);

  print_pump_stats (relay, &relay->up, seconds);
  print_pump_stats (relay, &relay->down, seconds);
}

static StatsValue *
pump_stats_json (const struct pump *p, double seconds)
{
  StatsValue *o = stats_object_new ();

  ferry_stats_object_set_text (o, "from", p->src->name);
  ferry_stats_object_set_text (o, "to", endpoint_write_name (p->dst));
  stats_object_set_int (o, "bytes", p->bytes);
  ferry_stats_object_set_rate (o, p->bytes, seconds);
  stats_object_set_int (o, "reader_paused", p->paused_full);
  stats_object_set_int (o, "writer_waited", p->waited_writable);
  stats_object_set_int (o, "dropped", p->dropped);
  return o;
}

StatsValue *
relay_stats_json (const struct relay *relay)
{
  StatsValue *o = stats_object_new ();
  double seconds = relay_seconds (relay);

  ferry_stats_object_set_ms (o, seconds);
  stats_object_set (o, "up", pump_stats_json (&relay->up, seconds));
  stats_object_set (o, "down", pump_stats_json (&relay->down, seconds));
  buffer_stats_json (relay->up.buf, o);
  return o;
}

void
relay_stats_json_add (StatsValue *total, StatsValue *one)
{
  static const char *const dirs[] = { "up", "down" };
  static const char *const counts[] = { "bytes", "reader_paused", "writer_waited", "dropped" };

  for (size_t d = 0; d < G_N_ELEMENTS (dirs); d++) {
    const StatsValue *from = stats_object_get (one, dirs[d]);
    StatsValue *to;

    if (!stats_object_get (total, dirs[d]))
      stats_object_set (total, dirs[d], stats_object_new ());
    to = stats_object_get (total, dirs[d]);
    for (size_t i = 0; i < G_N_ELEMENTS (counts); i++)
      stats_object_set_int (to, counts[i], stats_object_get_int (to, counts[i], 0) +
                                           (from ? stats_object_get_int (from, counts[i], 0) : 0));
  }
}

static gboolean
report_done (gpointer data)
{
  struct relay *relay = data;

  g_clear_pointer (&relay->done_source, gsource_release);
  relay->done (relay, relay->exit_code, relay->done_data);
  return G_SOURCE_REMOVE;
}

static void
relay_finish (struct relay *relay)
{
  relay->finished = true;
  relay->ended = g_get_monotonic_time ();
  relay->local->ops->set_interest (relay->local, false, false);
  relay->remote->ops->set_interest (relay->remote, false, false);
  g_clear_pointer (&relay->idle_timer, gsource_release);
  g_clear_pointer (&relay->half_close_timer, gsource_release);
  buffer_finish (relay->up.buf);
  buffer_finish (relay->down.buf);
  if (relay->config.verbose)
    relay_print_stats (relay);
  for (struct pump *p = &relay->up; p; p = p == &relay->up ? &relay->down : NULL) {
    /* The remote end that was given up on while it still sent. */
    g_autofree char *unconfirmed =
      p == &relay->down && relay->up.dst_done && endpoint_delivering (relay->remote)
      ? g_strdup_printf ("; it did not confirm the delivery of the %" G_GUINT64_FORMAT
                         " bytes sent to it", relay->up.bytes)
      : NULL;
    /* Read after a reader that went away, and lost after all. */
    if (p->dropped > 0 && !p->fail_reported)
      pump_report_failure (p, 0);
    if (p->dropped > 0)
      ferry_error ("%s%s%" G_GUINT64_FORMAT " more bytes from %s dropped after "
                   "%s failed%s", label_prefix (relay), label_sep (relay), p->dropped,
                   p->src->name, endpoint_write_name (p->dst), unconfirmed ? unconfirmed : "");
  }
  if (relay->exit_code == FERRY_EXIT_OK && relay->remote->ops->exit_code)
    relay->exit_code = relay->remote->ops->exit_code (relay->remote);
  /* Deferred to a dispatch of its own, at the priority of the traffic:
   * at idle priority, busy relays beside it would hold a finished one,
   * its fds and buffers, for as long as they stay busy. */
  relay->done_source = g_idle_source_new ();
  g_source_set_priority (relay->done_source, G_PRIORITY_DEFAULT);
  g_source_set_callback (relay->done_source, report_done, relay, NULL);
  gsource_attach (relay->done_source);
}

/* A timer that fires once per g_source_set_ready_time(), pushed forward
 * lazily: traffic only updates a timestamp. */
static gboolean
one_shot_timer_dispatch (GSource *source, GSourceFunc callback, gpointer data)
{
  g_source_set_ready_time (source, -1);
  return callback (data);
}

static GSourceFuncs one_shot_timer_funcs = {
  .dispatch = one_shot_timer_dispatch,
};

static void relay_settle (struct relay *relay);

/* A buffer's watcher found a violation on a timer (buffer_watch_both). */
static gboolean
relay_wake (gpointer data)
{
  struct relay *relay = data;

  if (!relay->finished)
    relay_settle (relay);
  return G_SOURCE_REMOVE;
}

/* --half-close-timeout: the direction still open, once the other is done. */
static struct pump *
half_close_open_pump (struct relay *relay)
{
  return pump_finished (&relay->up) ? &relay->down : &relay->up;
}

/* When the open direction will have been idle for the timeout: counted from
 * its last byte, and never from before the other direction finished. */
static gint64
half_close_deadline (struct relay *relay)
{
  return MAX (half_close_open_pump (relay)->last_moved, relay->half_close_began) +
         (gint64) relay->config.half_close_timeout * G_USEC_PER_SEC;
}

/* The open direction has been idle for the timeout: end it as if its
 * source had ended.  What it still holds could not move for that long: it
 * is reported as not delivered. */
static gboolean
on_half_close_check (gpointer data)
{
  struct relay *relay = data;
  struct pump *p = half_close_open_pump (relay);
  gint64 deadline = half_close_deadline (relay);

  if (g_get_monotonic_time () < deadline) {
    g_source_set_ready_time (relay->half_close_timer, deadline);
    return G_SOURCE_CONTINUE;
  }
  if (!buffer_is_empty (p->buf)) {
    g_autofree char *why = g_strdup_printf ("%s -> %s idle for %u s after the other "
                                            "direction ended (--half-close-timeout)",
                                            p->src->name, endpoint_write_name (p->dst),
                                            relay->config.half_close_timeout);
    relay_abandon (relay, why, FERRY_EXIT_IO);
    return G_SOURCE_CONTINUE;
  }
  p->src_done = true;
  pump_flush (p);
  relay_settle (relay);
  return G_SOURCE_CONTINUE;
}

static void
half_close_timer_start (struct relay *relay)
{
  relay->half_close_began = g_get_monotonic_time ();
  relay->half_close_timer = g_source_new (&one_shot_timer_funcs, sizeof (GSource));
  g_source_set_callback (relay->half_close_timer, on_half_close_check, relay, NULL);
  g_source_set_ready_time (relay->half_close_timer, half_close_deadline (relay));
  gsource_attach (relay->half_close_timer);
}

/* Whether the remote end still has to confirm what up gave it
 * (endpoint_delivering).  After down failed, only while what it still
 * sends, dropped, could be what holds its close back (its last lines):
 * past a buffer's worth it is streaming on, and would close only at its
 * end, if ever (relay_finish says what was not confirmed). */
static bool
awaits_remote (const struct relay *relay)
{
  return relay->up.dst_done && endpoint_delivering (relay->remote) &&
         !(relay->down.failed && relay->down.dropped > relay->down.buf->size);
}

/* Apply the end-of-stream rules, then derive the watches. */
static void
relay_settle (struct relay *relay)
{
  const GError *violation = buffer_violation (relay->up.buf);

  if (violation == NULL)
    violation = buffer_violation (relay->down.buf);
  if (violation) {
    /* Both ends are closed at once: nothing more is worth delivering.  A
     * violation is NBD's, whose server is the remote end. */
    ferry_error ("%s%s%s (server: %s)", label_prefix (relay), label_sep (relay),
                 violation->message, relay->remote->name);
    relay->exit_code = violation->code;
    relay_finish (relay);
    return;
  }
  /* Bytes a buffer's watcher adds itself (the NBD read-only guard's
   * replies), into a direction that still delivers. */
  if (!relay->up.failed)
    buffer_settle (relay->up.buf);
  if (!relay->down.failed)
    buffer_settle (relay->down.buf);
  /* A remote EOF ends the down direction alone: up goes on until local
   * EOF (unless remote_eof_ends_local).  A remote peer gone completely
   * takes nothing more, and a local write side that failed will take no
   * answer: stop reading local at once, but still offer what was already
   * read from it (the count of what the remote cannot take is reported). */
  if (!relay->up.src_done &&
      (relay->down.failed || endpoint_peer_gone (relay->remote) ||
       (relay->config.remote_eof_ends_local && relay->down.src_done))) {
    relay->up.src_done = true;
    pump_flush (&relay->up);
  }
  /* A failed direction keeps reading (and dropping) only so that its
   * source, which may be blocked writing, can still take the other
   * direction's bytes (an echoing peer would otherwise deadlock), or can
   * still confirm them (awaits_remote): libssh keeps an ssh channel's
   * close back while any of its bytes are unread, even on stderr. */
  bool remote_to_confirm = awaits_remote (relay);
  if (relay->up.failed && pump_finished (&relay->down))
    relay->up.src_done = true;
  if (relay->down.failed && pump_finished (&relay->up) && !remote_to_confirm)
    relay->down.src_done = true;
  if (pump_finished (&relay->up) && pump_finished (&relay->down)) {
    /* Unless an end's peer still has to confirm what it was given. */
    if (!remote_to_confirm &&
        !(relay->down.dst_done && endpoint_delivering (relay->local))) {
      relay_finish (relay);
      return;
    }
  }
  if (relay->config.half_close_timeout > 0 && relay->half_close_timer == NULL &&
      (pump_finished (&relay->up) || pump_finished (&relay->down)))
    half_close_timer_start (relay);
  relay_update_interest (relay);
}

static void
on_endpoint_ready (void *data, struct endpoint *ep, bool readable, bool writable)
{
  struct relay *relay = data;

  if (relay->finished)
    return;
  if (ep == relay->local) {
    pump_move (&relay->up, readable, false);
    pump_move (&relay->down, false, writable);
  } else {
    pump_move (&relay->down, readable, false);
    pump_move (&relay->up, false, writable);
  }
  relay_settle (relay);
}

void
relay_abandon (struct relay *relay, const char *why, int exit_code)
{
  if (relay->finished)
    return;
  ferry_error ("%s%s%s (%zu bytes buffered for %s, %zu for %s not delivered)",
               label_prefix (relay), label_sep (relay), why,
               relay->up.buf->len, endpoint_write_name (relay->up.dst),
               relay->down.buf->len, endpoint_write_name (relay->down.dst));
  relay->exit_code = exit_code;
  relay_finish (relay);
}

void
relay_drain (struct relay *relay)
{
  if (relay->finished)
    return;
  /* As if both sources had ended: what is buffered is still delivered,
   * then each destination is half-closed as at end of stream. */
  relay->up.src_done = relay->down.src_done = true;
  pump_flush (&relay->up);
  pump_flush (&relay->down);
  relay_settle (relay);
}

void
relay_get_bytes (const struct relay *relay, guint64 *up, guint64 *down)
{
  *up = relay->up.bytes;
  *down = relay->down.bytes;
}

static gboolean
on_idle_check (gpointer data)
{
  struct relay *relay = data;
  gint64 idle_us = (gint64) relay->config.idle_timeout * G_USEC_PER_SEC;
  gint64 deadline = relay->last_activity + idle_us;

  if (g_get_monotonic_time () < deadline) {
    g_source_set_ready_time (relay->idle_timer, deadline);
    return G_SOURCE_CONTINUE;
  }
  if (relay->config.idle_is_eof && buffer_is_empty (relay->up.buf) &&
      buffer_is_empty (relay->down.buf)) {
    relay->up.src_done = relay->down.src_done = true;
    pump_flush (&relay->up);
    pump_flush (&relay->down);
    relay_settle (relay);
    return G_SOURCE_CONTINUE;
  }
  g_autofree char *why = g_strdup_printf ("no traffic for %u s, giving up",
                                          relay->config.idle_timeout);
  relay_abandon (relay, why, FERRY_EXIT_TIMEOUT);
  return G_SOURCE_CONTINUE;
}

static void
pump_init (struct pump *p, struct relay *relay, struct endpoint *src,
           struct endpoint *dst, bool shutdown_at_end)
{
  p->relay = relay;
  p->src = src;
  p->dst = dst;
  p->shutdown_at_end = shutdown_at_end;
  p->last_moved = relay->started;
  p->buf = buffer_choose (src, dst, relay->config.buffer_size, relay->config.splice,
                         &relay->config.nbd);
}

struct relay *
relay_new (struct endpoint *local, struct endpoint *remote,
           const struct relay_config *config, relay_done_fn done, void *data)
{
  struct relay *relay = g_new0 (struct relay, 1);

  relay->config = *config;
  relay->config.label = g_strdup (config->label);
  relay->local = local;
  relay->remote = remote;
  relay->done = done;
  relay->done_data = data;
  relay->started = relay->last_activity = g_get_monotonic_time ();
  pump_init (&relay->up, relay, local, remote, config->half_close);
  pump_init (&relay->down, relay, remote, local, true);
  local->ready = remote->ready = on_endpoint_ready;
  local->ready_data = remote->ready_data = relay;
  buffer_watch_both (relay->up.buf, relay->down.buf, &relay->config.nbd, relay->config.label,
                     relay_wake, relay);

  if (config->idle_timeout > 0) {
    /* One timer, pushed forward lazily: traffic only updates a timestamp. */
    relay->idle_timer = g_source_new (&one_shot_timer_funcs, sizeof (GSource));
    g_source_set_callback (relay->idle_timer, on_idle_check, relay, NULL);
    g_source_set_ready_time (relay->idle_timer,
                             relay->started + (gint64) config->idle_timeout * G_USEC_PER_SEC);
    gsource_attach (relay->idle_timer);
  }
  relay_update_interest (relay);
  return relay;
}

void
relay_free (struct relay *relay)
{
  if (relay == NULL)
    return;
  g_clear_pointer (&relay->idle_timer, gsource_release);
  g_clear_pointer (&relay->half_close_timer, gsource_release);
  g_clear_pointer (&relay->done_source, gsource_release);
  endpoint_free (relay->local);
  endpoint_free (relay->remote);
  buffer_free (relay->up.buf);
  buffer_free (relay->down.buf);
  g_free (relay->up.scratch);
  g_free (relay->down.scratch);
  g_free ((char *) relay->config.label);
  g_free (relay);
}
