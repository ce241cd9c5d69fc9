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
#include "gsource-release.h"
#include "message.h"
#include "ring.h"

struct pump {
  struct relay *relay;
  struct endpoint *src, *dst;
  struct ring ring;
  bool src_done;              /* EOF or read error seen, or reading stopped */
  bool dst_done;              /* everything delivered and dst's write side closed */
  bool failed;                /* bytes were lost; reported already */
  bool shutdown_at_end;       /* half-close dst once everything is delivered */
  bool reading;               /* src's read interest, as last set */
  guint64 bytes;              /* delivered to dst */
  guint64 paused_full;        /* times the reader stopped on a full buffer */
  guint64 waited_writable;    /* times dst would have blocked */
};

struct relay {
  struct relay_config config;
  struct endpoint *local, *remote;
  struct pump up;             /* local -> remote */
  struct pump down;           /* remote -> local */
  gint64 started;             /* monotonic microseconds */
  gint64 last_activity;
  GSource *idle_timer;        /* only with config.idle_timeout */
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

static void
pump_fail (struct pump *p, const char *action, const char *what, int err)
{
  struct relay *relay = p->relay;
  size_t lost = p->ring.len;

  ferry_error ("%s%scannot %s %s: %s (%" G_GUINT64_FORMAT " bytes delivered, "
               "%zu buffered bytes not delivered)",
               label_prefix (relay), label_sep (relay), action, what,
               g_strerror (err), p->bytes, lost);
  p->failed = true;
  p->src_done = true;
  p->ring.len = 0;
  if (relay->exit_code == FERRY_EXIT_OK)
    relay->exit_code = FERRY_EXIT_IO;
}

/* Read once into the free space: one readv per readiness report. */
static void
pump_fill (struct pump *p)
{
  struct iovec iov[2];
  int n_iov;
  ssize_t n;

  if (p->src_done || (n_iov = ring_free_iov (&p->ring, iov)) == 0)
    return;
  do
    n = p->src->ops->readv (p->src, iov, n_iov);
  while (n < 0 && errno == EINTR);

  if (n > 0) {
    ring_produce (&p->ring, n);
    p->relay->last_activity = g_get_monotonic_time ();
  } else if (n == 0) {
    p->src_done = true;
  } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
    int err = errno;
    /* Bytes already buffered are still delivered: only the read failed. */
    struct relay *relay = p->relay;
    ferry_error ("%s%scannot read from %s: %s", label_prefix (relay),
                 label_sep (relay), p->src->name, g_strerror (err));
    p->src_done = true;
    relay->exit_code = FERRY_EXIT_IO;
  }
}

/* Write until the buffer is empty or dst would block. */
static void
pump_flush (struct pump *p)
{
  struct iovec iov[2];
  int n_iov;

  while ((n_iov = ring_data_iov (&p->ring, iov)) > 0) {
    ssize_t n = p->dst->ops->writev (p->dst, iov, n_iov);

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      p->waited_writable++;
      return;
    }
    if (n < 0) {
      pump_fail (p, "write to", endpoint_write_name (p->dst), errno);
      return;
    }
    ring_consume (&p->ring, n);
    p->bytes += n;
    p->relay->last_activity = g_get_monotonic_time ();
  }

  if (p->src_done && !p->dst_done && !p->failed) {
    p->dst_done = true;
    if (p->shutdown_at_end && p->dst->ops->shutdown_write (p->dst) < 0 &&
        errno != ENOTCONN)
      pump_fail (p, "close", endpoint_write_name (p->dst), errno);
  }
}

static bool
pump_finished (const struct pump *p)
{
  return p->dst_done || p->failed;
}

/* Move what the readiness report allows, in one direction. */
static void
pump_move (struct pump *p, bool readable, bool writable)
{
  bool was_full = ring_is_full (&p->ring);

  if (readable)
    pump_fill (p);
  /* Write straight after a read rather than waiting for POLLOUT: the
   * peer is nearly always writable, and this saves a poll round. */
  if (readable || writable)
    pump_flush (p);
  /* The reader was stopped by a full buffer and there is room again: its
   * data is almost surely waiting. */
  if (was_full && writable && !ring_is_full (&p->ring))
    pump_fill (p), pump_flush (p);
}

static void
relay_update_interest (struct relay *relay)
{
  struct pump *pumps[] = { &relay->up, &relay->down };

  for (size_t i = 0; i < G_N_ELEMENTS (pumps); i++) {
    struct pump *p = pumps[i];
    bool reading = !p->src_done && !ring_is_full (&p->ring);

    if (p->reading && !reading && !p->src_done)
      p->paused_full++;
    p->reading = reading;
  }
  relay->local->ops->set_interest (relay->local, relay->up.reading,
                                   !ring_is_empty (&relay->down.ring));
  relay->remote->ops->set_interest (relay->remote, relay->down.reading,
                                    !ring_is_empty (&relay->up.ring));
}

static void
print_pump_stats (const struct relay *relay, const struct pump *p,
                  double seconds)
{
  double mib = p->bytes / (1024.0 * 1024.0);

  ferry_error ("%s%s%s -> %s: %" G_GUINT64_FORMAT " bytes in %.3f s, %.1f MiB/s, "
               "reader paused %" G_GUINT64_FORMAT " times (buffer full), "
               "writer waited %" G_GUINT64_FORMAT " times (peer busy)",
               label_prefix (relay), label_sep (relay), p->src->name,
               endpoint_write_name (p->dst), p->bytes, seconds,
               seconds > 0 ? mib / seconds : 0.0, p->paused_full, p->waited_writable);
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
  if (relay->exit_code == FERRY_EXIT_OK && relay->remote->ops->exit_code)
    relay->exit_code = relay->remote->ops->exit_code (relay->remote);
  relay->local->ops->set_interest (relay->local, false, false);
  relay->remote->ops->set_interest (relay->remote, false, false);
  g_clear_pointer (&relay->idle_timer, gsource_release);
  if (relay->config.verbose) {
    double seconds = (g_get_monotonic_time () - relay->started) / 1e6;
    print_pump_stats (relay, &relay->up, seconds);
    print_pump_stats (relay, &relay->down, seconds);
  }
  relay->done_source = g_idle_source_new ();
  g_source_set_callback (relay->done_source, report_done, relay, NULL);
  g_source_attach (relay->done_source, NULL);
}

/* Apply the end-of-stream rules, then derive the watches. */
static void
relay_settle (struct relay *relay)
{
  /* Remote EOF (or failure): stop reading local, but keep delivering
   * what was already read from it. */
  if (relay->down.src_done && !relay->up.src_done) {
    relay->up.src_done = true;
    pump_flush (&relay->up);
  }
  if (pump_finished (&relay->up) && pump_finished (&relay->down)) {
    relay_finish (relay);
    return;
  }
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
  ferry_error ("%s%sno traffic for %u seconds, giving up (%zu bytes buffered "
               "for %s, %zu for %s not delivered)",
               label_prefix (relay), label_sep (relay), relay->config.idle_timeout,
               relay->up.ring.len, endpoint_write_name (relay->up.dst),
               relay->down.ring.len, endpoint_write_name (relay->down.dst));
  relay->exit_code = FERRY_EXIT_TIMEOUT;
  relay_finish (relay);
  return G_SOURCE_CONTINUE;
}

static gboolean
idle_timer_dispatch (GSource *source, GSourceFunc callback, gpointer data)
{
  g_source_set_ready_time (source, -1);
  return callback (data);
}

static GSourceFuncs idle_timer_funcs = {
  .dispatch = idle_timer_dispatch,
};

static void
pump_init (struct pump *p, struct relay *relay, struct endpoint *src,
           struct endpoint *dst, bool shutdown_at_end)
{
  p->relay = relay;
  p->src = src;
  p->dst = dst;
  p->shutdown_at_end = shutdown_at_end;
  ring_init (&p->ring, relay->config.buffer_size);
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

  if (config->idle_timeout > 0) {
    /* One timer, pushed forward lazily: traffic only updates a timestamp. */
    relay->idle_timer = g_source_new (&idle_timer_funcs, sizeof (GSource));
    g_source_set_callback (relay->idle_timer, on_idle_check, relay, NULL);
    g_source_set_ready_time (relay->idle_timer,
                             relay->started + (gint64) config->idle_timeout * G_USEC_PER_SEC);
    g_source_attach (relay->idle_timer, NULL);
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
  g_clear_pointer (&relay->done_source, gsource_release);
  endpoint_free (relay->local);
  endpoint_free (relay->remote);
  ring_free (&relay->up.ring);
  ring_free (&relay->down.ring);
  g_free ((char *) relay->config.label);
  g_free (relay);
}
