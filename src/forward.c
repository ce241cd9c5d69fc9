/* ferry: listen-and-forward.  The main loop accepts and counts; each
 * connection's relay runs on a worker thread (worker.c), or on the main
 * loop for an ssh:// TARGET, whose channels share one libssh session. */
#include <config.h>

#include "forward.h"

#include <string.h>
#include <unistd.h>

#include "connect.h"
#include "endpoint-fd.h"
#include "error.h"
#include "gsource-release.h"
#include "listen.h"
#include "message.h"
#include "relay.h"
#include "stats.h"
#include "worker.h"

struct forward {
  const struct ferry_options *options;
  struct dialer *dialer;      /* connects each relay's remote end, TARGET
                                 (one shared ssh session) */
  struct worker_pool *workers; /* NULL when the dialer needs the main loop */
  GPtrArray *listeners;       /* struct listener; NULL once stopping */
  GPtrArray *connections;     /* struct connection, the live ones; each holds
                                 a reference, dropped on removal */
  bool accepting;             /* false after the first connection without -k,
                                 and once stopping */
  unsigned peak;              /* most connections live at once */
  guint64 served;             /* connections accepted */
  GSource *idle_exit;         /* --exit-idle-time countdown while none is live */
  GSource *drain_timer;       /* --drain-timeout countdown while stopping */
  const char *signal_name;    /* once stopping: "SIGTERM", "SIGINT", ... */
  int stop_code;              /* once stopping: the signal's exit code; else 0 */
  char *expired_why;          /* once stopping: why a relay is cut at --drain-timeout */
  char *cut_why;              /* once cut (a second signal): why every relay is */
  unsigned drained, cut;      /* while stopping: relays that delivered all or not */
  StatsValue *totals;         /* --stats=json: the ended connections' sums */
  guint64 failed;             /* connections that ended with a non-zero code */
  bool finished;
  forward_done_fn done;
  void *done_data;
};

/* One accepted connection.  Its relay lives in @context: only callbacks
 * run there touch @relay, and they are queued in order, so the start always
 * comes before a drain, an abandon or a cancel.  Each queued callback holds
 * a reference: the main loop may retire the connection (its end reported)
 * while a drain queued by a signal still waits on the worker. */
struct connection {
  gint refs;                  /* the live array's, and each queued callback's */
  struct forward *forward;
  int fd;                     /* the accepted socket, until the relay owns it */
  char *peer;                 /* names the connection in messages */
  struct worker *worker;      /* NULL: the relay runs on the main loop */
  GMainContext *context;      /* @worker's context, or the main loop's */
  struct relay *relay;        /* NULL before the start and after the end */
  int exit_code;              /* set before @ended is attached */
  StatsValue *stats;          /* --stats=json: the relay's counts, set with @exit_code */
  GSource *ended;             /* reports the end on the main loop */
};

/* The peak resident set size, as the kernel counts it. */
static char *
peak_rss (void)
{
  g_autofree char *status = NULL;
  const char *p;

  if (!g_file_get_contents ("/proc/self/status", &status, NULL, NULL) ||
      (p = strstr (status, "VmHWM:")) == NULL)
    return g_strdup ("unknown");
  p += strlen ("VmHWM:");
  p += strspn (p, " \t");
  return g_strndup (p, strcspn (p, "\n"));
}

/* --stats=json: VmHWM in KiB, as peak_rss finds it; -1 if unknown. */
static gint64
peak_rss_kib (void)
{
  g_autofree char *rss = peak_rss ();
  char *end;
  gint64 kib = g_ascii_strtoll (rss, &end, 10);

  return end != rss && g_str_has_suffix (rss, "kB") ? kib : -1;
}

/* The final object of --stats=json: -v's last line and the sums. */
static void
forward_record_stats (struct forward *f)
{
  g_autoptr (StatsValue) none = NULL;

  if (!ferry_stats_enabled ())
    return;
  none = stats_object_new ();
  ferry_stats_set_int ("connections", f->served);
  ferry_stats_set_int ("failed_connections", f->failed);
  ferry_stats_set_int ("peak_connections", f->peak);
  ferry_stats_set_int ("peak_rss_kib", peak_rss_kib ());
  if (f->totals == NULL)
    f->totals = stats_object_new ();
  /* Zeros when nothing came. */
  relay_stats_json_add (f->totals, none);
  ferry_stats_merge (f->totals);
}

/* On the main loop: a connection's line, counted in the sums. */
static void
connection_record_stats (struct connection *c)
{
  struct forward *f = c->forward;
  g_autoptr (StatsValue) line = NULL;

  if (c->exit_code != FERRY_EXIT_OK)
    f->failed++;
  if (!ferry_stats_enabled ())
    return;
  line = stats_object_new ();
  if (f->totals == NULL)
    f->totals = stats_object_new ();
  if (c->stats)
    relay_stats_json_add (f->totals, c->stats);
  stats_object_set_string (line, "type", "connection");
  ferry_stats_object_set_text (line, "connection", c->peer);
  if (c->stats)
    stats_object_copy_members (line, c->stats);
  stats_object_set_int (line, "exit_code", c->exit_code);
  ferry_stats_line (line);
}

static void
forward_finish (struct forward *f, int exit_code)
{
  if (f->finished)
    return;
  f->finished = true;
  g_clear_pointer (&f->idle_exit, gsource_release);
  g_clear_pointer (&f->drain_timer, gsource_release);
  /* With connections cut off, the line says why the exit code is not 0. */
  if (f->stop_code && f->cut)
    ferry_error ("stopped by %s: %u live connections drained, %u cut off",
                 f->signal_name, f->drained, f->cut);
  else if (f->stop_code)
    ferry_report ("stopped by %s: %u live connections drained, %u cut off",
                  f->signal_name, f->drained, f->cut);
  if (f->options->relay.verbose) {
    g_autofree char *rss = peak_rss ();
    ferry_report ("%" G_GUINT64_FORMAT " connections, at most %u at once, "
                  "peak memory (VmHWM) %s", f->served, f->peak, rss);
  }
  forward_record_stats (f);
  f->done (exit_code, f->done_data);
}

static gboolean
on_idle_exit (gpointer data)
{
  struct forward *f = data;

  g_clear_pointer (&f->idle_exit, gsource_release);
  if (f->options->relay.verbose)
    ferry_report ("no connections for %u seconds, exiting", f->options->exit_idle_time);
  forward_finish (f, FERRY_EXIT_OK);
  return G_SOURCE_REMOVE;
}

/* Derive the listeners' state and the idle countdown from the live connections. */
static void
forward_update (struct forward *f)
{
  unsigned max = f->options->max_connections;
  bool accept = f->accepting && (max == 0 || f->connections->len < max);
  bool idle = f->accepting && f->connections->len == 0 && f->options->exit_idle_time > 0;

  for (guint i = 0; f->listeners && i < f->listeners->len; i++) {
    if (accept)
      listener_resume (f->listeners->pdata[i]);
    else
      listener_pause (f->listeners->pdata[i]);
  }
  if (!idle) {
    g_clear_pointer (&f->idle_exit, gsource_release);
  } else if (f->idle_exit == NULL) {
    f->idle_exit = gsource_timer_new (f->options->exit_idle_time, on_idle_exit, f);
  }
}

static void
connection_ended (struct forward *f, int exit_code)
{
  if (f->stop_code) {
    if (exit_code == FERRY_EXIT_OK)
      f->drained++;
    else
      f->cut++;
    if (f->connections->len == 0)
      forward_finish (f, f->cut ? f->stop_code : FERRY_EXIT_OK);
  } else if (!f->options->keep_listening) {
    forward_finish (f, exit_code);
  } else {
    forward_update (f);
  }
}

static struct connection *
connection_ref (struct connection *c)
{
  g_atomic_int_inc (&c->refs);
  return c;
}

/* On any thread: the last reference frees the connection. */
static void
connection_unref (gpointer data)
{
  struct connection *c = data;

  if (!g_atomic_int_dec_and_test (&c->refs))
    return;
  gsource_release (c->ended);
  g_clear_pointer (&c->stats, stats_value_free);
  g_free (c->peer);
  g_free (c);
}

/* On the main loop, as the connection leaves the live array: its worker
 * takes another (the pool counts on this thread). */
static void
connection_retire (gpointer data)
{
  struct connection *c = data;

  if (c->worker)
    worker_release (c->worker);
  connection_unref (c);
}

/* Queue @fn for @c in its context: at once on the main loop, in order on
 * a worker.  The callback holds a reference until it has run. */
static void
connection_invoke (struct connection *c, GSourceFunc fn)
{
  g_main_context_invoke_full (c->context, G_PRIORITY_DEFAULT, fn,
                              connection_ref (c), connection_unref);
}

/* On the main loop. */
static gboolean
on_connection_ended (gpointer data)
{
  struct connection *c = data;
  struct forward *f = c->forward;
  int exit_code = c->exit_code;

  /* Before the array's reference goes, with @c's name. */
  ferry_detail ("%s: ended, exit code %d (%u live)", c->peer, exit_code,
                f->connections->len - 1);
  connection_record_stats (c);
  g_ptr_array_remove_fast (f->connections, c);
  connection_ended (f, exit_code);
  return G_SOURCE_REMOVE;
}

/* The rest run in the connection's context. */
static void
connection_report_end (struct connection *c, int exit_code)
{
  c->exit_code = exit_code;
  g_source_attach (c->ended, g_main_context_default ());
}

static void
on_relay_done (struct relay *relay, int exit_code, void *data)
{
  struct connection *c = data;

  if (ferry_stats_enabled ())
    c->stats = relay_stats_json (relay);
  g_clear_pointer (&c->relay, relay_free);
  connection_report_end (c, exit_code);
}

static gboolean
connection_start (gpointer data)
{
  struct connection *c = data;
  struct forward *f = c->forward;
  g_autoptr (GError) error = NULL;
  struct relay_config config = f->options->relay;
  struct endpoint *remote = dialer_connect (f->dialer, &error);

  if (remote == NULL) {
    ferry_error ("%s: %s", c->peer, error->message);
    close (c->fd);
    connection_report_end (c, error->code);
    return G_SOURCE_REMOVE;
  }
  ferry_detail ("%s: connected to %s", c->peer, remote->name);
  config.label = c->peer;
  c->relay = relay_new (endpoint_socket_new (c->fd, "client"), remote, &config,
                        on_relay_done, c);
  return G_SOURCE_REMOVE;
}

static gboolean
connection_drain (gpointer data)
{
  struct connection *c = data;

  if (c->relay)
    relay_drain (c->relay);
  return G_SOURCE_REMOVE;
}

/* The worker reads the reasons that the main loop set before queuing. */
static gboolean
connection_abandon_expired (gpointer data)
{
  struct connection *c = data;

  if (c->relay)
    relay_abandon (c->relay, c->forward->expired_why, c->forward->stop_code);
  return G_SOURCE_REMOVE;
}

static gboolean
connection_abandon_cut (gpointer data)
{
  struct connection *c = data;

  if (c->relay)
    relay_abandon (c->relay, c->forward->cut_why, c->forward->stop_code);
  return G_SOURCE_REMOVE;
}

static gboolean
connection_print_stats (gpointer data)
{
  struct connection *c = data;

  if (c->relay)
    relay_print_stats (c->relay);
  return G_SOURCE_REMOVE;
}

/* Free the relay without waiting for it: ferry is exiting. */
static gboolean
connection_cancel (gpointer data)
{
  struct connection *c = data;

  g_clear_pointer (&c->relay, relay_free);
  return G_SOURCE_REMOVE;
}

/* Run @fn for every live connection, in its context: at once on the main
 * loop, queued on a worker. */
static void
forward_each (struct forward *f, GSourceFunc fn)
{
  for (guint i = 0; i < f->connections->len; i++)
    connection_invoke (f->connections->pdata[i], fn);
}

static void
on_accept (int fd, const char *peer, void *data)
{
  struct forward *f = data;
  struct connection *c = g_new0 (struct connection, 1);

  c->refs = 1;
  f->served++;
  if (!f->options->keep_listening)
    f->accepting = false;
  /* A connection restarts the idle countdown, even one that fails. */
  g_clear_pointer (&f->idle_exit, gsource_release);
  c->forward = f;
  c->fd = fd;
  c->peer = g_strdup (peer);
  c->worker = f->workers ? worker_pool_take (f->workers) : NULL;
  c->context = c->worker ? worker_context (c->worker) : g_main_context_default ();
  /* At the priority of the traffic, as the relay's own end report: at
   * idle priority, a busy forwarder's ended connections piled up (919 fds
   * held with 64 connections live, in bench/soak.sh). */
  c->ended = g_idle_source_new ();
  g_source_set_priority (c->ended, G_PRIORITY_DEFAULT);
  g_source_set_callback (c->ended, on_connection_ended, c, NULL);
  g_ptr_array_add (f->connections, c);
  f->peak = MAX (f->peak, f->connections->len);
  ferry_detail ("%s: accepted (%u live)", c->peer, f->connections->len);
  forward_update (f);
  connection_invoke (c, connection_start);
}

static gboolean
on_drain_timeout (gpointer data)
{
  struct forward *f = data;

  g_clear_pointer (&f->drain_timer, gsource_release);
  /* Each end is reported from the main loop, so the array holds still. */
  forward_each (f, connection_abandon_expired);
  return G_SOURCE_REMOVE;
}

bool
forward_stop (struct forward *f, const char *signal_name, int signal_exit_code)
{
  if (f->stop_code || f->finished)
    return false;
  f->signal_name = signal_name;
  f->stop_code = signal_exit_code;
  f->expired_why = g_strdup_printf ("not drained within --drain-timeout %u s",
                                    f->options->drain_timeout);
  f->accepting = false;
  /* Closing the listeners refuses new clients instead of leaving them
   * waiting in a backlog nobody will serve. */
  g_clear_pointer (&f->listeners, g_ptr_array_unref);
  forward_update (f);
  if (f->connections->len == 0) {
    forward_finish (f, FERRY_EXIT_OK);
    return true;
  }
  forward_each (f, connection_drain);
  f->drain_timer = gsource_timer_new (f->options->drain_timeout, on_drain_timeout, f);
  return true;
}

void
forward_cut (struct forward *f, const char *signal_name, int signal_exit_code)
{
  bool again = f->stop_code != 0;

  if (!again)
    forward_stop (f, signal_name, signal_exit_code);
  if (f->finished || f->cut_why)
    return;
  g_clear_pointer (&f->drain_timer, gsource_release);
  f->cut_why = again ? g_strdup_printf ("stopped by %s, then %s", f->signal_name, signal_name)
                     : g_strdup_printf ("stopped by %s", signal_name);
  forward_each (f, connection_abandon_cut);
}

void
forward_print_stats (struct forward *f)
{
  ferry_error ("%u live connections, %" G_GUINT64_FORMAT " accepted", f->connections->len,
               f->served);
  forward_each (f, connection_print_stats);
}

struct forward *
forward_new (const struct ferry_options *options, const struct address *listen_at,
             const struct address *remote, forward_done_fn done, void *data,
             GError **error)
{
  struct forward *f;
  const struct socket_activation *sa = &options->activation;
  g_autoptr (GError) err = NULL;
  struct listener *l;

  /* fd:N is one socket: the first relay closes it, and its number may
   * then name anything. */
  if (remote->kind == ADDRESS_FD && options->keep_listening) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "%s as TARGET serves one connection: not with -k", remote->text);
    return NULL;
  }
  f = g_new0 (struct forward, 1);

  f->options = options;
  f->done = done;
  f->done_data = data;
  f->accepting = true;
  f->connections = g_ptr_array_new_with_free_func (connection_retire);
  f->listeners = g_ptr_array_new_with_free_func ((GDestroyNotify) listener_free);
  f->dialer = dialer_new (remote, &options->connect, &err);
  if (f->dialer && dialer_is_thread_safe (f->dialer))
    f->workers = worker_pool_new (g_get_num_processors ());
  if (f->dialer && listen_at) {
    l = listener_new (listen_at, &options->connect, on_accept, f, &err);
    if (l)
      g_ptr_array_add (f->listeners, l);
  }
  for (int i = 0; f->dialer && listen_at == NULL && i < sa->n_fds && err == NULL; i++) {
    l = listener_new_from_fd (SOCKET_ACTIVATION_FIRST_FD + i, sa->names[i],
                              &options->connect, on_accept, f, &err);
    if (l)
      g_ptr_array_add (f->listeners, l);
  }
  if (err) {
    g_propagate_error (error, g_steal_pointer (&err));
    forward_free (f);
    return NULL;
  }
  forward_update (f);
  return f;
}

void
forward_free (struct forward *f)
{
  if (f == NULL)
    return;
  g_clear_pointer (&f->idle_exit, gsource_release);
  g_clear_pointer (&f->drain_timer, gsource_release);
  g_clear_pointer (&f->listeners, g_ptr_array_unref);
  forward_each (f, connection_cancel);
  /* Before the workers go: retiring a connection releases its worker.  The
   * queued cancels keep the connections until they have run. */
  g_ptr_array_unref (f->connections);
  worker_pool_free (f->workers);
  dialer_free (f->dialer);
  g_free (f->expired_why);
  g_free (f->cut_why);
  g_clear_pointer (&f->totals, stats_value_free);
  g_free (f);
}
