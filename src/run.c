/* ferry: running the relays the command line asked for, on one main loop. */
#include <config.h>

#include "options.h"

#include <signal.h>
#include <unistd.h>
#include <sys/socket.h>

#include <glib-unix.h>

#include "endpoint-fd.h"
#include "error.h"
#include "forward.h"
#include "listen.h"
#include "message.h"
#include "progress.h"

struct run {
  const struct ferry_options *options;
  GMainLoop *loop;
  struct relay *relay;        /* the stdio relay, while one is live */
  struct progress *progress;  /* its --progress line, if drawn */
  struct listener *listener;  /* with --listen */
  struct forward *forward;    /* with a target: listen-and-forward */
  int exit_code;
};

static gboolean
on_signal (gpointer data, const char *name, int code)
{
  struct run *run = data;

  /* A forwarder drains its relays first; a second signal ends it at once. */
  if (run->forward && forward_stop (run->forward, name, code))
    return G_SOURCE_CONTINUE;
  run->exit_code = code;
  g_main_loop_quit (run->loop);
  return G_SOURCE_CONTINUE;
}

static gboolean on_sigint (gpointer data) { return on_signal (data, "SIGINT", FERRY_EXIT_SIGINT); }
static gboolean on_sigterm (gpointer data) { return on_signal (data, "SIGTERM", FERRY_EXIT_SIGTERM); }

static void
on_forward_done (int exit_code, void *data)
{
  struct run *run = data;

  run->exit_code = exit_code;
  g_main_loop_quit (run->loop);
}

static void
on_relay_done (struct relay *relay, int exit_code, void *data)
{
  struct run *run = data;

  g_assert (relay == run->relay);
  g_clear_pointer (&run->progress, progress_finish);
  g_clear_pointer (&run->relay, relay_free);
  if (exit_code != FERRY_EXIT_OK)
    run->exit_code = exit_code;
  if (run->listener && run->options->keep_listening)
    listener_resume (run->listener);
  else
    g_main_loop_quit (run->loop);
}

static void
sample_relay (struct progress_counter *counters, void *data)
{
  struct run *run = data;

  relay_get_bytes (run->relay, &counters[0].bytes, &counters[1].bytes);
}

static void
start_stdio_relay (struct run *run, struct endpoint *remote)
{
  struct relay_config config = run->options->relay;

  run->relay = relay_new (endpoint_stdio_new (run->options->keep_listening,
                                              config.buffer_size),
                          remote, &config, on_relay_done, run);
  if (progress_wanted (run->options->progress)) {
    const struct progress_counter counters[] = {
      { .label = "up", .total = progress_input_size (STDIN_FILENO) },
      { .label = "down" },
    };
    run->progress = progress_new (run->options->progress, counters,
                                  G_N_ELEMENTS (counters), sample_relay, run);
  }
}

static void
on_accept (int fd, const char *peer, void *data)
{
  struct run *run = data;

  /* stdio serves one connection at a time. */
  listener_pause (run->listener);
  socket_set_buffers (fd, &run->options->connect);
  start_stdio_relay (run, endpoint_socket_new (fd, peer));
}

void
ferry_options_init (struct ferry_options *options)
{
  *options = (struct ferry_options) {
    .relay = {
      .buffer_size = FERRY_DEFAULT_BUFFER_SIZE,
      .half_close = true,
      /* For personalities without ferry's options (nc, virt-ssh-helper),
       * and for running the test suite through the copying path. */
      .splice = g_strcmp0 (g_getenv ("FERRY_NO_SPLICE"), "1") != 0,
    },
    .drain_timeout = FERRY_DEFAULT_DRAIN_TIMEOUT,
    .connect = {
      .family = AF_UNSPEC,
    },
  };
}

int
ferry_run (const struct ferry_options *requested)
{
  struct ferry_options derived = *requested;
  const struct ferry_options *options = &derived;
  struct run run = { .options = options };
  g_autoptr (GError) error = NULL;
  /* --readonly names the socket ferry connects to: the target, if any. */
  unsigned flags = options->readonly ? ADDRESS_LIBVIRT_READONLY : 0;
  g_autoptr (FerryAddress) address = NULL;
  g_autoptr (FerryAddress) target = NULL;
  guint sigint_id, sigterm_id;

  /* Derived here, for every personality. */
  derived.connect.unix_sndbuf = derived.relay.buffer_size;

  /* A closed peer must be an EPIPE we can report, not a silent death. */
  signal (SIGPIPE, SIG_IGN);
  if ((options->address &&
       !(address = address_parse_flags (options->address, flags, &error))) ||
      (options->target &&
       !(target = address_parse_flags (options->target, flags, &error)))) {
    ferry_error ("%s", error->message);
    return error->code;
  }

  run.loop = g_main_loop_new (NULL, FALSE);
  sigint_id = g_unix_signal_add (SIGINT, on_sigint, &run);
  sigterm_id = g_unix_signal_add (SIGTERM, on_sigterm, &run);

  if (target) {
    run.forward = forward_new (options, address, target, on_forward_done, &run, &error);
  } else if (options->listen) {
    run.listener = listener_new (address, options->connect.family, on_accept,
                                 &run, &error);
  } else {
    struct endpoint *remote = connect_address (address, &options->connect, &error);
    if (remote)
      start_stdio_relay (&run, remote);
  }
  if (error) {
    ferry_error ("%s", error->message);
    run.exit_code = error->code;
  } else {
    g_main_loop_run (run.loop);
  }

  progress_finish (run.progress);
  relay_free (run.relay);
  listener_free (run.listener);
  forward_free (run.forward);
  g_source_remove (sigint_id);
  g_source_remove (sigterm_id);
  g_main_loop_unref (run.loop);
  return run.exit_code;
}
