/* ferry: running the relays the command line asked for, on one main loop. */
#include <config.h>

#include "run.h"

#include <signal.h>
#include <unistd.h>
#include <sys/socket.h>

#include "endpoint-fd.h"
#include "error.h"
#include "forward.h"
#include "gsource-release.h"
#include "listen.h"
#include "message.h"
#include "progress.h"
#include "signal-watch.h"
#include "stats.h"

struct run {
  const struct ferry_options *options;
  GMainLoop *loop;
  struct relay *relay;        /* the stdio relay, while one is live */
  struct progress *progress;  /* its --progress line, if drawn */
  struct listener *listener;  /* with --listen */
  struct forward *forward;    /* with a target: listen-and-forward */
  const char *stop_signal;    /* the first signal that stopped ferry; NULL before */
  int stop_code;              /* its exit code, 128 + its number */
  bool cutting;               /* a second signal, or SIGQUIT: give up now */
  GSource *drain_timer;       /* stdio relay: --drain-timeout while stopping */
  bool quitting;              /* @exit_code is decided */
  int exit_code;
  StatsValue *totals;         /* --stats=json with -l -k: the connections' sums */
  guint64 connections;        /* and how many ended */
};

/* --stats=json: the stdio relay's counts are the final object's; with
 * -l -k, each connection's goes on a line of its own, and the final
 * object sums them (ferry(1), STATISTICS). */
static void
run_record_relay (struct run *run, struct relay *relay, int exit_code)
{
  g_autoptr (StatsValue) counts = NULL;
  g_autoptr (StatsValue) line = NULL;

  if (!ferry_stats_enabled ())
    return;
  counts = relay_stats_json (relay);
  if (!run->options->keep_listening) {
    ferry_stats_merge (counts);
    return;
  }
  if (run->totals == NULL)
    run->totals = stats_object_new ();
  relay_stats_json_add (run->totals, counts);
  run->connections++;
  line = stats_object_new ();
  stats_object_set_string (line, "type", "connection");
  stats_object_copy_members (line, counts);
  stats_object_set_int (line, "exit_code", exit_code);
  ferry_stats_line (line);
}

/* The first decision stands: a signal may be read in the same iteration
 * that a relay or the forward finished. */
static void
run_quit (struct run *run, int exit_code)
{
  if (run->quitting)
    return;
  run->quitting = true;
  run->exit_code = exit_code;
  g_main_loop_quit (run->loop);
}

static gboolean
on_drain_timeout (gpointer data)
{
  struct run *run = data;
  g_autofree char *why = g_strdup_printf ("stopped by %s: not delivered within "
                                          "--drain-timeout %u s", run->stop_signal,
                                          run->options->drain_timeout);

  g_clear_pointer (&run->drain_timer, gsource_release);
  relay_abandon (run->relay, why, run->stop_code);
  return G_SOURCE_REMOVE;
}

/* SIGTERM, SIGINT, SIGHUP: stop reading, deliver what is buffered for up
 * to --drain-timeout, then exit: 0 if every byte read was delivered
 * (silently, as netcat: ssh ends its ProxyCommand so; -v says it), else
 * the signal's code after one line with the count.  A second signal, or
 * SIGQUIT, gives up at once with the count. */
static void
run_stop (struct run *run, int signum)
{
  const char *name = signal_watch_name (signum);
  int code = 128 + signum;
  bool first = run->stop_signal == NULL;

  if (first) {
    run->stop_signal = name;
    run->stop_code = code;
  }
  if (first && signum != SIGQUIT) {
    if (run->forward && forward_stop (run->forward, name, code))
      return;
    if (run->relay) {
      run->drain_timer = gsource_timer_new (run->options->drain_timeout, on_drain_timeout, run);
      relay_drain (run->relay);
      return;
    }
  } else if (!run->cutting && (run->forward || run->relay)) {
    run->cutting = true;
    if (run->forward) {
      forward_cut (run->forward, name, code);
    } else {
      g_autofree char *why = first ? g_strdup_printf ("stopped by %s", name)
        : g_strdup_printf ("stopped by %s, then %s", run->stop_signal, name);
      relay_abandon (run->relay, why, run->stop_code);
    }
    return;
  } else if (run->forward || run->relay) {
    /* Still cutting: exit now. */
    ferry_error ("stopped by %s, then %s: exiting at once", run->stop_signal, name);
    run_quit (run, run->stop_code);
    return;
  }
  /* Nothing was read: a listener waiting for its connection. */
  if (!run->quitting && run->options->relay.verbose)
    ferry_report ("stopped by %s while waiting for a connection", name);
  run_quit (run, FERRY_EXIT_OK);
}

static void
on_signal (int signum, void *data)
{
  struct run *run = data;

  if (signum != SIGUSR1) {
    run_stop (run, signum);
  } else if (run->forward) {
    forward_print_stats (run->forward);
  } else if (run->relay) {
    relay_print_stats (run->relay);
  } else {
    ferry_error ("SIGUSR1: no relay is live");
  }
}

static void
on_forward_done (int exit_code, void *data)
{
  struct run *run = data;

  run_quit (run, exit_code);
}

static void
on_relay_done (struct relay *relay, int exit_code, void *data)
{
  struct run *run = data;

  g_assert (relay == run->relay);
  g_clear_pointer (&run->progress, progress_finish);
  run_record_relay (run, relay, exit_code);
  g_clear_pointer (&run->relay, relay_free);
  if (run->stop_signal) {
    g_clear_pointer (&run->drain_timer, gsource_release);
    /* A failure while draining was reported with its count. */
    if (exit_code == FERRY_EXIT_OK && !run->cutting && run->options->relay.verbose)
      ferry_report ("stopped by %s: every byte read was delivered", run->stop_signal);
    run_quit (run, exit_code == FERRY_EXIT_OK ? FERRY_EXIT_OK : run->stop_code);
    return;
  }
  if (exit_code != FERRY_EXIT_OK)
    run->exit_code = exit_code;
  if (run->listener && run->options->keep_listening)
    listener_resume (run->listener);
  else
    run_quit (run, run->exit_code);
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

  ferry_detail ("%s: relaying with stdio", remote->name);
  run->relay = relay_new (endpoint_stdio_new (run->options->keep_listening,
                                              config.buffer_size),
                          remote, &config, on_relay_done, run);
  if (progress_wanted (&run->options->progress)) {
    const struct progress_counter counters[] = {
      { .label = "up", .total = progress_input_size (STDIN_FILENO) },
      { .label = "down" },
    };
    run->progress = progress_new (&run->options->progress, counters,
                                  G_N_ELEMENTS (counters), sample_relay, run);
  }
}

static void
on_accept (int fd, const char *peer, void *data)
{
  struct run *run = data;

  /* stdio serves one connection at a time. */
  listener_pause (run->listener);
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
    .stream = {
      .request_size = NBD_STREAM_DEFAULT_REQUEST_SIZE,
      .in_flight = NBD_STREAM_DEFAULT_IN_FLIGHT,
    },
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
  struct signal_watch *signals;

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
  signals = signal_watch_new (on_signal, &run);
  ferry_stats_set_string ("type", target ? "forward" : "relay");

  if (target) {
    run.forward = forward_new (options, address, target, on_forward_done, &run, &error);
  } else if (options->listen) {
    run.listener = listener_new (address, &options->connect, on_accept, &run, &error);
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

  g_clear_pointer (&run.drain_timer, gsource_release);
  progress_finish (run.progress);
  /* Cut at once: its counts as they are. */
  if (run.relay)
    run_record_relay (&run, run.relay, run.exit_code);
  if (run.totals) {
    ferry_stats_set_int ("connections", run.connections);
    ferry_stats_merge (run.totals);
    stats_value_free (run.totals);
  }
  relay_free (run.relay);
  listener_free (run.listener);
  forward_free (run.forward);
  signal_watch_free (signals);
  g_main_loop_unref (run.loop);
  return run.exit_code;
}
