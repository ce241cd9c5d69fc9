/* ferry: listen-and-forward, many relays on one main loop. */
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

struct forward {
  const struct ferry_options *options;
  const struct address *target;
  struct dialer *dialer;      /* connects to @target (one shared ssh session) */
  GPtrArray *listeners;       /* struct listener; NULL once stopping */
  GPtrArray *relays;          /* the live ones; freed on removal */
  bool accepting;             /* false after the first connection without -k,
                                 and once stopping */
  unsigned peak;              /* most relays live at once */
  guint64 served;             /* connections accepted */
  GSource *idle_exit;         /* --exit-idle-time countdown while none is live */
  GSource *drain_timer;       /* --drain-timeout countdown while stopping */
  const char *signal_name;    /* once stopping: "SIGTERM" or "SIGINT" */
  int stop_code;              /* once stopping: the signal's exit code; else 0 */
  unsigned drained, cut;      /* while stopping: relays that delivered all or not */
  bool finished;
  forward_done_fn done;
  void *done_data;
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

/* A one-shot timer (millisecond precision: the seconds variant may fire
 * up to a second early). */
static GSource *
timer_new (unsigned seconds, GSourceFunc callback, struct forward *f)
{
  GSource *timer = g_timeout_source_new (MIN (seconds, G_MAXUINT / 1000) * 1000);

  g_source_set_callback (timer, callback, f, NULL);
  g_source_attach (timer, NULL);
  return timer;
}

static void
forward_finish (struct forward *f, int exit_code)
{
  if (f->finished)
    return;
  f->finished = true;
  g_clear_pointer (&f->idle_exit, gsource_release);
  g_clear_pointer (&f->drain_timer, gsource_release);
  if (f->stop_code)
    ferry_error ("stopped by %s: %u live connections drained, %u cut off",
                 f->signal_name, f->drained, f->cut);
  if (f->options->relay.verbose) {
    g_autofree char *rss = peak_rss ();
    ferry_error ("%" G_GUINT64_FORMAT " connections, at most %u at once, "
                 "peak memory (VmHWM) %s", f->served, f->peak, rss);
  }
  f->done (exit_code, f->done_data);
}

static gboolean
on_idle_exit (gpointer data)
{
  struct forward *f = data;

  g_clear_pointer (&f->idle_exit, gsource_release);
  if (f->options->relay.verbose)
    ferry_error ("no connections for %u seconds, exiting", f->options->exit_idle_time);
  forward_finish (f, FERRY_EXIT_OK);
  return G_SOURCE_REMOVE;
}

/* Derive the listeners' state and the idle countdown from the live relays. */
static void
forward_update (struct forward *f)
{
  unsigned max = f->options->max_connections;
  bool accept = f->accepting && (max == 0 || f->relays->len < max);
  bool idle = f->accepting && f->relays->len == 0 && f->options->exit_idle_time > 0;

  for (guint i = 0; f->listeners && i < f->listeners->len; i++) {
    if (accept)
      listener_resume (f->listeners->pdata[i]);
    else
      listener_pause (f->listeners->pdata[i]);
  }
  if (!idle) {
    g_clear_pointer (&f->idle_exit, gsource_release);
  } else if (f->idle_exit == NULL) {
    f->idle_exit = timer_new (f->options->exit_idle_time, on_idle_exit, f);
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
    if (f->relays->len == 0)
      forward_finish (f, f->cut ? f->stop_code : FERRY_EXIT_OK);
  } else if (!f->options->keep_listening) {
    forward_finish (f, exit_code);
  } else {
    forward_update (f);
  }
}

static void
on_relay_done (struct relay *relay, int exit_code, void *data)
{
  struct forward *f = data;

  g_ptr_array_remove_fast (f->relays, relay);
  connection_ended (f, exit_code);
}

static void
on_accept (int fd, const char *peer, void *data)
{
  struct forward *f = data;
  g_autoptr (GError) error = NULL;
  struct endpoint *remote;
  struct relay_config config = f->options->relay;

  f->served++;
  if (!f->options->keep_listening)
    f->accepting = false;
  /* A connection restarts the idle countdown, even one that fails. */
  g_clear_pointer (&f->idle_exit, gsource_release);
  remote = dialer_connect (f->dialer, &error);
  if (remote == NULL) {
    ferry_error ("%s: %s", peer, error->message);
    close (fd);
    connection_ended (f, error->code);
    return;
  }
  config.label = peer;
  socket_set_buffers (fd, &f->options->connect);
  g_ptr_array_add (f->relays, relay_new (endpoint_socket_new (fd, "client"), remote,
                                         &config, on_relay_done, f));
  f->peak = MAX (f->peak, f->relays->len);
  forward_update (f);
}

static gboolean
on_drain_timeout (gpointer data)
{
  struct forward *f = data;
  g_autofree char *why = g_strdup_printf ("not drained within --drain-timeout %u s",
                                          f->options->drain_timeout);

  g_clear_pointer (&f->drain_timer, gsource_release);
  /* Each relay reports done from the main loop, so the array holds still. */
  for (guint i = 0; i < f->relays->len; i++)
    relay_abandon (f->relays->pdata[i], why, f->stop_code);
  return G_SOURCE_REMOVE;
}

bool
forward_stop (struct forward *f, const char *signal_name, int signal_exit_code)
{
  if (f->stop_code || f->finished)
    return false;
  f->signal_name = signal_name;
  f->stop_code = signal_exit_code;
  f->accepting = false;
  /* Closing the listeners refuses new clients instead of leaving them
   * waiting in a backlog nobody will serve. */
  g_clear_pointer (&f->listeners, g_ptr_array_unref);
  forward_update (f);
  if (f->relays->len == 0) {
    forward_finish (f, FERRY_EXIT_OK);
    return true;
  }
  for (guint i = 0; i < f->relays->len; i++)
    relay_drain (f->relays->pdata[i]);
  f->drain_timer = timer_new (f->options->drain_timeout, on_drain_timeout, f);
  return true;
}

struct forward *
forward_new (const struct ferry_options *options, const struct address *listen_at,
             const struct address *target, forward_done_fn done, void *data,
             GError **error)
{
  struct forward *f = g_new0 (struct forward, 1);
  const struct socket_activation *sa = &options->activation;
  g_autoptr (GError) err = NULL;
  struct listener *l;

  f->options = options;
  f->target = target;
  f->done = done;
  f->done_data = data;
  f->accepting = true;
  f->relays = g_ptr_array_new_with_free_func ((GDestroyNotify) relay_free);
  f->listeners = g_ptr_array_new_with_free_func ((GDestroyNotify) listener_free);
  f->dialer = dialer_new (target, &options->connect, &err);
  if (f->dialer && listen_at) {
    l = listener_new (listen_at, options->connect.family, on_accept, f, &err);
    if (l)
      g_ptr_array_add (f->listeners, l);
  }
  for (int i = 0; f->dialer && listen_at == NULL && i < sa->n_fds && err == NULL; i++) {
    l = listener_new_from_fd (SOCKET_ACTIVATION_FIRST_FD + i, sa->names[i],
                              on_accept, f, &err);
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
  g_ptr_array_unref (f->relays);
  dialer_free (f->dialer);
  g_free (f);
}
