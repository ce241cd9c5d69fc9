/* ferry: the remote stream mode (nbd-remote.h).
 *
 * Three parts, each one ferry already has:
 *  - the local half, the stream mode (--nbd-send or --nbd-receive), runs in
 *    a child process with one end of a socketpair as its stdout (upload) or
 *    stdin (download).  The child is forked before anything else exists
 *    (no thread, no ssh session, no main-loop source to inherit), and waits
 *    on a socket until the remote half runs: nothing is read from or written
 *    to an export before the host key and the login have been checked;
 *  - the remote half, the other stream mode, is the remote helper run over
 *    an exec channel, its arguments quoted for the remote shell one by one;
 *  - this process relays the socketpair's other end to the channel (relay.c,
 *    with its end-of-stream rules), and reports the remote stderr's lines as
 *    its own, naming the host.
 * A stop signal (SIGTERM, SIGINT, SIGHUP) is passed on to both halves, and
 * the relay goes on until they have ended, so that each says how far it
 * got; the local half has a process group of its own, so that a terminal's
 * ^C reaches it once, through this process, like the remote half.
 * The stream between them is doc/nbd-stream.md's format v1, unchanged: the
 * receiving side, local or remote, checks the sender's digest.
 *
 * With --streams=N (N > 1) there are N of each: N local halves, forked
 * before anything else as above, and N exec channels on the one session,
 * each relayed on its own and carrying a ranged stream (section 8).  This
 * process then also carries the controller's messages (range-messages.h):
 * the controller (range-controller.h) hands out the ranges, and composes
 * the image digest from the block digests that the local halves report.
 *
 * A local copy with --streams or --delta (ferry copy, o->same_host) is the
 * same copy with its "remote" halves run on this host instead, as
 * processes of this ferry's executable (endpoint-process.h): no ssh, the
 * same ranges, digests and ends; the far_* functions below choose. */
#include <config.h>

#include "nbd-remote.h"

#include <glib-unix.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deferred-line.h"
#include "endpoint-fd.h"
#include "endpoint-process.h"
#include "endpoint-ssh.h"
#include "error.h"
#include "gsource-release.h"
#include "image-format.h"
#include "message.h"
#include "range-controller.h"
#include "relay.h"
#include "remote-exit-codes.h"
#include "signal-watch.h"
#include "ssh-stream-sessions.h"
#include "stats.h"

/* The socketpair's buffers: a few stream records' worth in each. */
#define SOCKET_BUFFER (4 * 1024 * 1024)
/* After a cut, how long the local half may take to end before SIGKILL. */
#define CUT_GRACE_SECONDS 1

struct remote_copy;

/* One channel: its local half, its relay, its remote half. */
struct remote_channel {
  struct remote_copy *rc;
  unsigned number;            /* from 1, for messages */
  char *who;                  /* "USER@HOST:PORT", or with --streams
                                 "USER@HOST:PORT (stream N)" */
  char *channel_name;         /* "USER@HOST:PORT" */
  char *command;              /* the remote half's command line */
  struct relay *relay;        /* until it is done */
  bool relay_done;
  struct endpoint *channel;   /* the relay's remote end (the relay owns it) */
  int relay_code;             /* the relay's exit code */
  int remote_status;          /* the remote helper's exit status; -1 unknown */
  char *remote_signal;        /* or the signal that killed it ("TERM"); NULL if none */
  pid_t child;                /* the local half */
  bool child_silenced;        /* killed here: the remote half's failure (or
                                 another channel's) ended the copy, and was
                                 reported */
  bool remote_cut;            /* the channel was closed on a remote half
                                 that had not ended */
  bool child_done;
  int child_status;           /* the child's wait status */
  bool aborted;               /* ended here: another channel failed */
  bool started;               /* its remote half runs, and its child went */
  int fd, go;                 /* the parent's ends of the socketpairs for the
                                 stream and the go (and the local half's
                                 deferred line) */
  GSource *go_watch;          /* an upload's: for the sender's deferred line */
  char *cut_reason;           /* the local half's deferred line
                                 (deferred-line.h), or NULL: a
                                 receiver's stream cut short, or a sender
                                 that could not open SRC */
  char *cut_where;            /* and where its destination is complete */
  int control;                /* --streams: the controller's socket, or -1 */
  GSource *control_watch;
  struct range_holder holder; /* --streams: its ranges (range-controller.h) */
  gint64 end_us;              /* when its relay ended; 0 before */
  int stats;                  /* --stats=json: the pipe from the local half,
                                 which writes its object there; -1 without */
};

/* The relays between the local halves and the channels, on the main loop,
 * until all of them and their children are done. */
struct remote_copy {
  GMainLoop *loop;
  bool upload;
  struct remote_channel *ch;
  unsigned n;
  bool ranged;                /* --streams=N, N > 1 */
  unsigned drain_timeout;     /* --drain-timeout: how long the halves may take to stop */
  int stop_signum;            /* the first signal that stopped the copy; 0 before */
  bool cutting;               /* a second signal, SIGQUIT or the drain timeout:
                                 the relays are gone, the exit code is the stop's */
  GSource *stop_timer;        /* the drain timeout, then the cut's grace */
  struct remote_channel *failed;   /* the first channel that failed */
  char *link_lost;            /* why the ssh session died, or NULL: its one
                                 line is copy_result's */
  struct range_controller *ranges;   /* --streams: the controller, which
                                        also holds the copy's own failure
                                        (its error); NULL without */
  bool delta;                 /* --delta: -v says what it saved */
  bool same_host;             /* the remote halves run here (o->same_host) */
  const char *helper;         /* the remote halves' program: --remote-helper,
                                 "ferry", or with same_host this executable */
  uint8_t *packet;            /* a report's room (RANGE_REPORT_ROOM) */
  struct progress *progress;
  gint64 start_us;
  /* To run the remote halves after the first: only once the first one's
   * halves have both opened their exports (its first report), so that a
   * missing or unusable export fails the copy with one message, and a
   * server that serves one client at a time serves the first stream's,
   * whose local half goes first, rather than a later one's. */
  struct ferry_ssh_conn *conn;
  struct endpoint_ssh_spares *spares;  /* --streams: every channel's, opened
                                          at once, in the first one's round
                                          trip; each takes its own */
  const struct ferry_options *options;
  struct relay_config config;
  bool all_started;
};

bool
nbd_remote_requested (const struct nbd_stream_options *o)
{
  return o->remote_send || o->remote_receive;
}

static void
append_arg (GString *command, const char *arg)
{
  g_autofree char *quoted = g_shell_quote (arg);

  if (command->len > 0)
    g_string_append_c (command, ' ');
  g_string_append (command, quoted);
}

static void
append_arg_printf (GString *command, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static void
append_arg_printf (GString *command, const char *fmt, ...)
{
  va_list ap;
  g_autofree char *arg = NULL;

  va_start (ap, fmt);
  arg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  append_arg (command, arg);
}

/* The remote half's command line: the other stream mode, with the options
 * that concern it.  With --streams, the ranged stream, and -v on the first
 * channel only (its summary, and whether DEST has multi-conn). */
static char *
remote_command (const struct ferry_options *options, const char *helper, bool ranged,
                unsigned number)
{
  const struct nbd_stream_options *o = &options->stream;
  GString *command = g_string_new (NULL);
  bool upload = o->remote_receive != NULL;

  append_arg (command, helper);
  if (upload)
    append_arg_printf (command, "--nbd-receive=%s", o->remote_receive);
  else
    append_arg_printf (command, "--nbd-send=%s", o->remote_send);
  append_arg_printf (command, "--request-size=%zu", o->request_size);
  append_arg_printf (command, "--in-flight=%zu", o->in_flight);
  if (o->connections)
    append_arg_printf (command, "--connections=%u", o->connections);
  if (ranged)
    append_arg (command, "--ranged");
  if (ranged && o->delta)
    append_arg (command, "--delta");
  if (upload && o->dst_format)
    append_arg_printf (command, "--dst-format=%s", o->dst_format);
  if (upload && o->create_size)
    append_arg_printf (command, "--create-size=%" G_GUINT64_FORMAT, o->create_size);
  if (upload && o->source_name)
    append_arg_printf (command, "--source-name=%s", o->source_name);
  if (o->remote_image_name)
    append_arg_printf (command, "--image-name=%s", o->remote_image_name);
  if (!upload && o->src_format)
    append_arg_printf (command, "--src-format=%s", o->src_format);
  if (o->no_verify)
    append_arg (command, "--no-verify");
  if (upload && o->destination_is_zero)
    append_arg (command, "--destination-is-zero");
  if (upload && o->allocated)
    append_arg (command, "--allocated");
  if (!upload && o->no_extents)
    append_arg (command, "--no-extents");
  /* An upload's local half compresses; a receiver learns it from the
   * stream's header. */
  if (!upload && o->compress)
    append_arg (command, "--compress");
  if (o->verbose && number == 1)
    append_arg (command, "-v");
  return g_string_free (command, FALSE);
}

/* The child: wait until the remote half runs, then be the local half.
 * With --streams, the socketpair is its stdin and stdout (the stream and
 * its return direction), and it asks @control for ranges.  Returns its
 * exit code; 0 at once if the parent gave up (and said why). */
static int
run_local_half (const struct nbd_stream_options *o, int fd, int go, int control,
                unsigned number)
{
  struct nbd_stream_options local = *o;
  bool upload = o->remote_receive != NULL;
  char c;
  ssize_t n;

  do
    n = read (go, &c, 1);
  while (n < 0 && errno == EINTR);
  if (n != 1) {
    close (go);
    close (fd);
    return FERRY_EXIT_OK;
  }
  local.report_fd = go;
  if ((control >= 0 || upload) && dup2 (fd, STDOUT_FILENO) < 0)
    goto failed;
  if ((control >= 0 || !upload) && dup2 (fd, STDIN_FILENO) < 0)
    goto failed;
  close (fd);
  local.remote_send = local.remote_receive = NULL;
  local.streams = 0;
  if (control >= 0) {
    local.ranged = true;
    local.control_fd = control;
    /* The parent sums the progress and the summaries; the first local
     * receiver says whether DEST has multi-conn. */
    local.progress.mode = PROGRESS_NEVER;
    local.verbose = o->verbose && number == 1 && !upload;
  }
  return nbd_stream_main (&local);

failed:
  ferry_error ("cannot set up the local half: %s", g_strerror (errno));
  return FERRY_EXIT_FAILURE;
}

/* --- The far halves: exec channels on the session, or processes here. --- */

static int
far_exit_status (const struct remote_copy *rc, struct endpoint *far)
{
  return rc->same_host ? endpoint_process_exit_status (far) : endpoint_ssh_exit_status (far);
}

static const char *
far_exit_signal (const struct remote_copy *rc, struct endpoint *far)
{
  return rc->same_host ? endpoint_process_exit_signal (far) : endpoint_ssh_exit_signal (far);
}

/* Why the session died; a process here has no link to lose. */
static const char *
far_link_failure (const struct remote_copy *rc, struct endpoint *far)
{
  return rc->same_host ? NULL : endpoint_ssh_link_failure (far);
}

static void
far_signal (const struct remote_copy *rc, struct endpoint *far, int signum)
{
  if (far && rc->same_host)
    endpoint_process_signal (far, signum);
  else if (far)
    endpoint_ssh_signal (far, sigabbrev_np (signum));
}

/* Run the far halves of the @n channels from @first (named), into their
 * c->channel: all of them, or none and false, with the error and the one
 * that failed in *@failed.  Over ssh, on the channels opened at once
 * (rc->spares), in one round trip. */
static bool
far_run (struct remote_copy *rc, struct remote_channel *first, size_t n, size_t *failed,
         GError **error)
{
  g_autofree const char **commands = g_new (const char *, n);
  g_autofree const char **labels = g_new (const char *, n);
  g_autofree struct endpoint **channels = g_new0 (struct endpoint *, n);
  bool ok = true;

  /* The lines of a remote half name its host (its stream); those of a
   * half on this host name DST already, as a local copy's do. */
  for (size_t i = 0; i < n; i++) {
    commands[i] = first[i].command;
    labels[i] = rc->ranged && !rc->same_host ? first[i].who : NULL;
  }
  if (!rc->same_host)
    ok = endpoint_ssh_exec_many (rc->conn, rc->spares, n, commands, labels, channels, failed,
                                 error);
  for (size_t i = 0; rc->same_host && ok && i < n; i++) {
    g_auto (GStrv) argv = NULL;
    g_autoptr (GError) parse_error = NULL;
    *failed = i;
    if (!g_shell_parse_argv (commands[i], NULL, &argv, &parse_error))
      ok = ferry_set_error (error, FERRY_EXIT_FAILURE, "cannot run '%s': %s", commands[i],
                            parse_error->message);
    else
      ok = (channels[i] = endpoint_process_spawn (argv, first[i].who, labels[i], error)) != NULL;
  }
  for (size_t i = 0; i < n; i++)
    if (ok)
      first[i].channel = channels[i];
    else
      endpoint_free (channels[i]);
  return ok;
}

static bool
all_done (const struct remote_copy *rc)
{
  for (unsigned i = 0; i < rc->n; i++)
    if (!rc->ch[i].relay_done || !rc->ch[i].child_done)
      return false;
  return true;
}

static void
copy_quit_if_done (struct remote_copy *rc)
{
  if (all_done (rc))
    g_main_loop_quit (rc->loop);
}

static void
print_deferred_line (const struct remote_channel *c)
{
  if (c->cut_reason)
    ferry_error ("%s%s%s", c->cut_reason, c->cut_where ? "; " : "",
                 c->cut_where ? c->cut_where : "");
}

/* The remote half's outcome is in: the relay (and the channel) can go. */
static void
end_relay (struct remote_channel *c, int exit_code)
{
  const char *signal = far_exit_signal (c->rc, c->channel);

  c->relay_done = true;
  c->relay_code = exit_code;
  if (c->rc->link_lost == NULL)
    c->rc->link_lost = g_strdup (far_link_failure (c->rc, c->channel));
  c->remote_status = far_exit_status (c->rc, c->channel);
  c->remote_signal = g_strdup (signal);
  c->end_us = g_get_monotonic_time ();
  /* Closing the socketpair now tells a local sender still writing. */
  g_clear_pointer (&c->relay, relay_free);
  c->channel = NULL;
}

/* An upload's remote receiver failed, and said why (or report_halves
 * will): the local sender, still writing, would add a line about the
 * closed stream.  It is killed before the socketpair closes, and waited
 * for (without reaping it: on_child_exit does). */
static void
silence_child (struct remote_channel *c)
{
  siginfo_t info;

  c->child_silenced = true;
  kill (c->child, SIGKILL);
  while (waitid (P_PID, c->child, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
    ;
}

static void
stop_control (struct remote_channel *c)
{
  g_clear_pointer (&c->control_watch, gsource_release);
  if (c->control >= 0)
    close (c->control);
  c->control = -1;
}

/* @c's channel, if it has one that no relay ever drove: opened with the
 * others before one of them failed, or its remote half run ahead
 * (runs_rest_early).  What that half said would only repeat why the copy
 * ended. */
static void
drop_unrelayed (struct remote_channel *c)
{
  if (c->channel && !c->rc->same_host)
    endpoint_ssh_discard_stderr (c->channel);
  g_clear_pointer (&c->channel, endpoint_free);
}

/* Another channel failed: this one ends at once, in silence. */
static void
abort_channel (struct remote_channel *c)
{
  c->aborted = true;
  if (!c->started) {
    /* Its child sees the pipe close, and ends without a word. */
    if (c->go >= 0)
      close (c->go);
    c->go = -1;
    c->relay_done = true;
    drop_unrelayed (c);
  }
  if (!c->child_done)
    silence_child (c);
  if (!c->relay_done) {
    far_signal (c->rc, c->channel, SIGKILL);
    end_relay (c, FERRY_EXIT_OK);
  }
  stop_control (c);
}

/* The copy failed at @c: @error says why (--streams only), or NULL when
 * @c's own exit does (copy_result).  The first failure wins; every channel
 * still running ends at once. */
static void
fail_copy (struct remote_copy *rc, struct remote_channel *c, GError *error)
{
  if (rc->ranges)
    range_controller_fail (rc->ranges, error);
  if (rc->failed)
    return;
  rc->failed = c;
  for (unsigned i = 0; i < rc->n; i++)
    abort_channel (&rc->ch[i]);
}

/* The controller refused what @c did: its @error, which names no channel,
 * as @c's. */
static void
fail_copy_at (struct remote_channel *c, GError *error)
{
  g_prefix_error (&error, "%s: ", c->who);
  fail_copy (c->rc, c, error);
}

static int channel_code (const struct remote_channel *c, int stop_code);
static void start_rest (struct remote_copy *rc);

/* A channel ended: if it failed (not for a stop signal), the copy has
 * failed, and the other channels go. */
static void
channel_ended (struct remote_channel *c)
{
  struct remote_copy *rc = c->rc;
  int stop_code = rc->stop_signum ? 128 + rc->stop_signum : 0;
  GError *error = NULL;

  if (!c->relay_done || !c->child_done || c->aborted || rc->failed || rc->stop_signum)
    return;
  ferry_detail ("%s: channel ended, exit code %d", c->who, channel_code (c, stop_code));
  stop_control (c);
  if (channel_code (c, stop_code) != FERRY_EXIT_OK)
    fail_copy (rc, c, NULL);
  else if (rc->ranges && !range_holder_check_ended (&c->holder, &error))
    /* Its range would never be composed, and halves waiting for the
     * composition (MAX_RANGES_AHEAD) would wait for ever. */
    fail_copy_at (c, error);
}

/* The relay is done (its code in c->relay_code), and the remote half's
 * status in. */
static void
relay_ended (void *data)
{
  struct remote_channel *c = data;

  if (c->rc->upload && !c->child_done && !c->rc->stop_signum &&
      far_exit_status (c->rc, c->channel) != 0)
    silence_child (c);
  end_relay (c, c->relay_code);
  channel_ended (c);
  copy_quit_if_done (c->rc);
}

static void
on_relay_done (struct relay *relay, int exit_code, void *data)
{
  struct remote_channel *c = data;

  (void) relay;
  c->relay_code = exit_code;
  /* An ssh channel closes after its exit status came; a process here
   * closes its stream as it exits, before that exit is reaped. */
  if (c->rc->same_host && endpoint_process_when_exited (c->channel, relay_ended, c))
    return;
  relay_ended (c);
}

/* An upload's local sender could not open SRC, and deferred its line: the
 * channel goes at once, before the remote receiver's line about the empty
 * stream can come back; the sender's line is printed at the end
 * (report_halves).  It was sent before the sender's exit closed its
 * stream, and the watch outranks the relay's: so this runs before the
 * relay can pass that end on, let alone hear the answer. */
static gboolean
on_sender_deferred (gint fd, GIOCondition condition, gpointer data)
{
  struct remote_channel *c = data;

  (void) fd; (void) condition;
  g_clear_pointer (&c->go_watch, gsource_release);
  deferred_line_take (c->go, &c->cut_reason, &c->cut_where);
  if (c->cut_reason && !c->relay_done) {
    end_relay (c, FERRY_EXIT_OK);
    c->remote_cut = c->remote_status < 0 && c->remote_signal == NULL;
    channel_ended (c);
    copy_quit_if_done (c->rc);
  }
  return G_SOURCE_REMOVE;
}

/* A local receiver that failed or stopped wants nothing more: the remote
 * sender's rest would fill the channel's window, and sshd would wait to
 * deliver it before it closed the channel.  The channel goes at once, with
 * the remote's lines so far; the local half said why. */
static void
on_child_exit (GPid pid, gint wstatus, gpointer data)
{
  struct remote_channel *c = data;

  g_spawn_close_pid (pid);
  c->child_done = true;
  c->child_status = wstatus;
  if (!c->rc->upload)
    deferred_line_take (c->go, &c->cut_reason, &c->cut_where);
  if (!c->rc->upload && !c->relay_done && !(WIFEXITED (wstatus) && WEXITSTATUS (wstatus) == 0)) {
    end_relay (c, FERRY_EXIT_OK);
    c->remote_cut = c->remote_status < 0 && c->remote_signal == NULL;
  }
  channel_ended (c);
  copy_quit_if_done (c->rc);
}

/* --- The controller's messages (--streams, range-controller.h). --- */

/* @c asked for a range: send it the controller's answer, unless that is
 * to wait. */
static void
hand_out (struct remote_channel *c)
{
  struct nbd_range_grant grant;
  uint8_t packet[NBD_RANGE_GRANT_SIZE];

  if (range_controller_next (c->rc->ranges, &c->holder, &grant) == RANGE_WAIT)
    return;
  nbd_range_grant_encode (&grant, packet);
  send (c->control, packet, sizeof packet, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The halves that wait for a range (MAX_RANGES_AHEAD) ask again. */
static void
hand_out_waiting (struct remote_copy *rc)
{
  for (unsigned i = 0; i < rc->n; i++)
    if (rc->ch[i].holder.waiting)
      hand_out (&rc->ch[i]);
}

/* A report: the range done, and a request for the next.  The first one
 * (the first channel's halves have both opened their exports) starts the
 * other channels. */
static void
take_report (struct remote_channel *c, const uint8_t *packet, size_t len)
{
  struct remote_copy *rc = c->rc;
  GError *error = NULL;
  struct nbd_range held = c->holder.range;
  uint64_t data_before = c->holder.done.data_bytes;

  if (!range_controller_take_report (rc->ranges, &c->holder, packet, len, &error)) {
    fail_copy_at (c, error);
    return;
  }
  if (held.index >= 0)
    ferry_detail ("%s: range %" PRId64 " done: offset=%" PRIu64 " length=%" PRIu64
                  " data=%" PRIu64, c->who, held.index, held.offset, held.length,
                  c->holder.done.data_bytes - data_before);
  if (!rc->all_started)
    start_rest (rc);
  /* The range done may have let the composition move on. */
  hand_out_waiting (rc);
  hand_out (c);
}

static gboolean
on_control (gint fd, GIOCondition condition, gpointer data)
{
  struct remote_channel *c = data;
  ssize_t n = recv (fd, c->rc->packet, RANGE_REPORT_ROOM, MSG_DONTWAIT);

  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return G_SOURCE_CONTINUE;
  if (n <= 0) {
    /* The half has ended; its exit status tells how. */
    g_clear_pointer (&c->control_watch, gsource_release);
    return G_SOURCE_REMOVE;
  }
  take_report (c, c->rc->packet, n);
  return G_SOURCE_CONTINUE;
}

static void
sample_progress (struct progress_counter *counters, void *data)
{
  const struct remote_copy *rc = data;
  const struct range_counts *done = range_controller_done (rc->ranges);

  counters[0].bytes = done->bytes;
  counters[0].total = range_controller_size (rc->ranges);
  counters[1].bytes = done->data_bytes;
  counters[2].bytes = done->bytes - done->data_bytes - done->same_bytes;
  if (rc->options->stream.delta)
    counters[3].bytes = done->same_bytes;
}

/* --- Signals. --- */

/* Pass @signum on to whichever halves still run: the local ones by
 * kill(2), the remote ones by the channel's "signal" request. */
static void
pass_on (struct remote_copy *rc, int signum)
{
  for (unsigned i = 0; i < rc->n; i++) {
    struct remote_channel *c = &rc->ch[i];
    if (!c->child_done && c->started)
      kill (c->child, signum);
    if (!c->relay_done)
      far_signal (rc, c->channel, signum);
  }
}

static gboolean
on_cut_grace_over (gpointer data)
{
  struct remote_copy *rc = data;

  g_clear_pointer (&rc->stop_timer, gsource_release);
  for (unsigned i = 0; i < rc->n; i++)
    if (!rc->ch[i].child_done)
      kill (rc->ch[i].child, SIGKILL);
  return G_SOURCE_REMOVE;
}

/* Give up at once, after one line: the halves get @signum, the relays go,
 * and the local halves have a moment to end before they are killed. */
static void
cut_copy (struct remote_copy *rc, int signum, const char *why)
{
  bool children = false;

  ferry_error ("%s: exiting at once", why);
  rc->cutting = true;
  pass_on (rc, signum);
  for (unsigned i = 0; i < rc->n; i++) {
    if (!rc->ch[i].relay_done)
      end_relay (&rc->ch[i], 128 + rc->stop_signum);
    children |= !rc->ch[i].child_done;
  }
  g_clear_pointer (&rc->stop_timer, gsource_release);
  if (children)
    rc->stop_timer = gsource_timer_new (CUT_GRACE_SECONDS, on_cut_grace_over, rc);
  copy_quit_if_done (rc);
}

static gboolean
on_drain_timeout (gpointer data)
{
  struct remote_copy *rc = data;
  g_autofree char *why = g_strdup_printf ("stopped by %s: the copy did not end within "
                                          "--drain-timeout %u s",
                                          signal_watch_name (rc->stop_signum),
                                          rc->drain_timeout);

  g_clear_pointer (&rc->stop_timer, gsource_release);
  cut_copy (rc, SIGKILL, why);
  return G_SOURCE_REMOVE;
}

/* SIGTERM, SIGINT, SIGHUP: all halves stop (each says how far it got), for
 * up to --drain-timeout.  A second signal cuts them with it; SIGQUIT kills
 * them.  SIGUSR1: the relays' statistics. */
static void
on_signal (int signum, void *data)
{
  struct remote_copy *rc = data;
  const char *name = signal_watch_name (signum);
  g_autofree char *why = NULL;

  if (signum == SIGUSR1) {
    for (unsigned i = 0; i < rc->n; i++)
      if (rc->ch[i].relay)
        relay_print_stats (rc->ch[i].relay);
    return;
  }
  if (rc->cutting) {
    for (unsigned i = 0; i < rc->n; i++)
      if (!rc->ch[i].child_done)
        kill (rc->ch[i].child, SIGKILL);
    return;
  }
  /* Channels not started yet never will be. */
  for (unsigned i = 0; i < rc->n && signum != SIGUSR1; i++)
    if (!rc->ch[i].started && !rc->ch[i].aborted)
      abort_channel (&rc->ch[i]);
  rc->all_started = true;
  /* No half gets a range from now on. */
  if (rc->ranges)
    range_controller_stop (rc->ranges);
  if (rc->stop_signum == 0 && signum != SIGQUIT) {
    rc->stop_signum = signum;
    rc->stop_timer = gsource_timer_new (rc->drain_timeout, on_drain_timeout, rc);
    pass_on (rc, signum);
    /* Halves waiting for a range get none. */
    hand_out_waiting (rc);
    return;
  }
  if (rc->stop_signum == 0) {
    rc->stop_signum = signum;
    why = g_strdup_printf ("stopped by %s", name);
  } else {
    why = g_strdup_printf ("stopped by %s, then %s", signal_watch_name (rc->stop_signum), name);
  }
  cut_copy (rc, signum == SIGQUIT ? SIGKILL : signum, why);
}

/* --- Exit codes. --- */

/* The halves' ends that no message of theirs explains. */
static void
report_halves (const struct remote_channel *c, int code)
{
  int stop_signum = c->rc->stop_signum;
  /* A local receiver's stream cut short by the remote sender's failure:
   * that failure's line says why, this one only where DEST is complete. */
  bool remote_failed = code == FERRY_EXIT_REMOTE ||
                       (code >= FERRY_EXIT_REMOTE_NBD && code <= FERRY_EXIT_REMOTE_TOO_SMALL);
  g_autofree char *where = remote_failed && c->cut_where ? g_strdup_printf ("; %s", c->cut_where)
                                                         : g_strdup ("");
  /* A copy on this host has no remote half: it runs the receiver here. */
  const char *local_half = c->rc->same_host ? "the sending half" : "the local half";
  const char *remote_half = c->rc->same_host ? "the receiving half" : "the remote half";

  /* The relay's idle timeout said why, and the cut stream follows from it. */
  if (!remote_failed && code != FERRY_EXIT_TIMEOUT)
    print_deferred_line (c);
  if (WIFSIGNALED (c->child_status) && !c->child_silenced)
    ferry_error ("%s%s%s was killed by SIG%s", c->rc->ranged ? c->who : "",
                 c->rc->ranged ? ": " : "", local_half, sigabbrev_np (WTERMSIG (c->child_status)));
  if (c->remote_cut && stop_signum)
    ferry_error ("%s: %s had not ended when %s stopped: its channel was closed (ran: %s)%s",
                 c->who, remote_half, local_half, c->command, where);
  else if (c->remote_signal)
    ferry_error ("%s: %s was killed by SIG%s (ran: %s)%s", c->who, remote_half,
                 c->remote_signal, c->command, where);
  else if (code == FERRY_EXIT_REMOTE && c->remote_status < 0)
    ferry_error ("%s: %s ended without an exit status: killed by a signal, or its session "
                 "died (ran: %s)%s", c->who, remote_half, c->command, where);
  else if (code == FERRY_EXIT_REMOTE)
    ferry_error ("%s: %s exited with status %d (ran: %s)%s", c->who, remote_half,
                 c->remote_status, c->command, where);
}

static int
channel_code (const struct remote_channel *c, int stop_code)
{
  /* A local half killed here did not fail: the remote one did. */
  int local = c->child_silenced ? FERRY_EXIT_OK : remote_child_code (c->child_status);
  /* A remote half whose channel was closed here, before its status came,
   * did not fail either, unless the local receiver's stream was cut short
   * (cut_reason): then it ended first, and its status was on its way. */
  int remote = c->remote_cut && (c->rc->upload || !c->cut_reason) && !c->rc->stop_signum
               ? FERRY_EXIT_OK : remote_exit_code (c->remote_status, c->remote_signal, stop_code,
                                                    c->rc->same_host);

  return remote_copy_exit_code (c->rc->upload, local, remote, c->relay_code, stop_code,
                                c->rc->same_host);
}

/* --- The copy. --- */

/* @c's remote command, and the names its messages go by. */
static void
name_channel (struct remote_copy *rc, struct remote_channel *c)
{
  /* A copy on this host names DST, as ferry copy's other lines do. */
  const char *host = rc->same_host ? rc->options->stream.remote_receive
                                   : ferry_ssh_conn_name (rc->conn);

  c->command = remote_command (rc->options, rc->helper, rc->ranged, c->number);
  c->channel_name = g_strdup (host);
  c->who = rc->ranged ? g_strdup_printf ("%s (stream %u)", host, c->number) : g_strdup (host);
}

/* @c's remote half runs (c->channel): let its child go, and relay. */
static bool
run_channel (struct remote_copy *rc, struct remote_channel *c, GError **error)
{
  if (write (c->go, "g", 1) != 1) {
    g_clear_pointer (&c->channel, endpoint_free);
    return ferry_set_error (error, FERRY_EXIT_FAILURE, "cannot start the local half: %s",
                            g_strerror (errno));
  }
  c->started = true;
  ferry_detail ("%s: channel open, ran: %s", c->who, c->command);
  if (rc->upload) {
    c->go_watch = g_unix_fd_source_new (c->go, G_IO_IN);
    g_source_set_priority (c->go_watch, G_PRIORITY_HIGH);
    g_source_set_callback (c->go_watch, (GSourceFunc) (void (*) (void)) on_sender_deferred,
                           c, NULL);
    gsource_attach (c->go_watch);
  }
  c->relay = relay_new (endpoint_socket_new (c->fd, "the local half"), c->channel, &rc->config,
                        on_relay_done, c);
  c->fd = -1;
  if (c->control >= 0) {
    c->control_watch = g_unix_fd_source_new (c->control, G_IO_IN | G_IO_HUP | G_IO_ERR);
    g_source_set_callback (c->control_watch, (GSourceFunc) (void (*) (void)) on_control,
                           c, NULL);
    gsource_attach (c->control_watch);
  }
  return true;
}

/* Whether the other channels' remote halves may run with the first one's,
 * in its round trip: over ssh, when the far image is a path that each
 * remote ferry opens itself.  An NBD server could serve one client at a
 * time, and must serve the first stream's; the others wait for its first
 * report (start_rest).  Their local halves and relays wait for it anyway,
 * so that a missing or unusable image fails the copy in one line. */
static bool
runs_rest_early (const struct remote_copy *rc)
{
  const struct nbd_stream_options *o = &rc->options->stream;

  return rc->n > 1 && !rc->same_host &&
         image_is_path (rc->upload ? o->remote_receive : o->remote_send);
}

/* Run the first channel's remote half (and with runs_rest_early, the
 * others' too), let its child go, and relay. */
static bool
start_first (struct remote_copy *rc, GError **error)
{
  size_t failed, n = runs_rest_early (rc) ? rc->n : 1;

  for (size_t i = 0; i < n; i++)
    name_channel (rc, &rc->ch[i]);
  if (!far_run (rc, &rc->ch[0], n, &failed, error))
    return false;
  if (run_channel (rc, &rc->ch[0], error))
    return true;
  for (size_t i = 1; i < n; i++)
    drop_unrelayed (&rc->ch[i]);
  return false;
}

/* The first channel's halves are both up: start the others, all at once,
 * on the channels opened with the first (rc->spares), unless their remote
 * halves ran already.  Running them blocks the main loop for the exec's
 * round trip; the first relay's data waits in libssh meanwhile. */
static void
start_rest (struct remote_copy *rc)
{
  size_t n = rc->n - 1, failed = 0;
  g_autoptr (GError) error = NULL;
  bool ok = true;

  rc->all_started = true;
  if (!runs_rest_early (rc)) {
    for (size_t i = 0; i < n; i++)
      name_channel (rc, &rc->ch[i + 1]);
    ok = far_run (rc, &rc->ch[1], n, &failed, &error);
  }
  for (size_t i = 0; ok && i < n; i++)
    if (!run_channel (rc, &rc->ch[i + 1], &error))
      ok = false, failed = i;
  if (!ok && signal_watch_stop_pending ()) {
    /* Stopped while they opened: the main loop passes the stop on to the
     * first channel's halves; the others never ran. */
    for (unsigned j = 1; j < rc->n; j++)
      abort_channel (&rc->ch[j]);
  } else if (!ok) {
    fail_copy (rc, &rc->ch[failed + 1], g_steal_pointer (&error));
  }
  /* The channels hold their references on the session from now on. */
  g_clear_pointer (&rc->spares, endpoint_ssh_spares_free);
  g_clear_pointer (&rc->conn, ferry_ssh_conn_unref);
}

/* Connect once (the host key, the login) and, with --streams, each
 * stream's session (ssh-stream-sessions.h: by default, the one); then
 * every stream's channel opens at once.  A copy on this host has nothing
 * to connect to.
 * A stop signal gives up the handshake, the login (and its prompt, which
 * puts the terminal's echo back) and the channel's opening, with "stopped
 * by SIGTERM while connecting to ADDRESS": not in the handler, which would
 * leave the echo off.  The local halves see their pipes close, and end
 * without a word. */
static bool
far_connect (struct remote_copy *rc, const struct address *address, GError **error)
{
  size_t n = rc->ranged ? rc->n : 1, own;
  g_autofree struct ferry_ssh_conn **conns = g_new0 (struct ferry_ssh_conn *, n);
  g_autofree char *why = NULL;

  if (rc->same_host)
    return true;
  if (!ssh_stream_sessions_connect (address, &rc->options->connect, n,
                                    rc->options->stream.session_per_stream, conns, &own, &why,
                                    error))
    return false;
  rc->conn = ferry_ssh_conn_ref (conns[0]);
  if (rc->options->stream.verbose && why)
    ferry_report ("%s: %zu of %zu streams share another stream's session: %s",
                  ferry_ssh_conn_name (rc->conn), n - 1 - own, n, why);
  for (size_t i = 0; i < n; i++)
    ferry_ssh_conn_report_failure_myself (conns[i]);
  if (rc->ranged)
    rc->spares = endpoint_ssh_open_spares (conns, n, error);
  for (size_t i = 0; i < n; i++)
    ferry_ssh_conn_unref (conns[i]);
  return !rc->ranged || rc->spares;
}

/* Connect, run the first remote half, let its child go and relay; the
 * others follow (start_rest).  The results in @rc.  False (with the
 * error) if the copy never started. */
static bool
relay_copy (const struct ferry_options *options, const struct address *address,
            struct remote_copy *rc, GError **error)
{
  bool started;

  rc->options = options;
  rc->config = options->relay;
  rc->config.verbose = false;
  rc->config.nbd.enabled = false;
  rc->config.label = NULL;
  rc->config.peers_report_loss = true;
  rc->all_started = rc->n == 1;
  started = far_connect (rc, address, error) && start_first (rc, error);
  if (rc->all_started)
    g_clear_pointer (&rc->conn, ferry_ssh_conn_unref);
  if (!started)
    return false;
  rc->start_us = g_get_monotonic_time ();
  for (unsigned i = 0; i < rc->n; i++)
    g_child_watch_add (rc->ch[i].child, on_child_exit, &rc->ch[i]);
  if (rc->ranged)
    rc->progress = nbd_stream_progress_new (&options->stream, sample_progress, rc);
  g_main_loop_run (rc->loop);
  g_clear_pointer (&rc->progress, progress_finish);
  return true;
}

/* Fork the local halves, before anything else exists. */
static bool
start_children (const struct nbd_stream_options *o, struct remote_copy *rc, int *exit_code)
{
  int size = SOCKET_BUFFER;
  int (*fds)[6] = g_malloc_n (rc->n, sizeof *fds);

  /* For each: the stream's socketpair, the go socketpair (its "g" written
   * here, a deferred line written there) and the controller's socketpair;
   * the child's ends are odd. */
  for (unsigned i = 0; i < rc->n; i++) {
    int *f = fds[i];
    f[4] = f[5] = -1;
    if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f) < 0 ||
        socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, f + 2) < 0 ||
        (rc->ranged && socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, f + 4) < 0)) {
      ferry_error ("cannot set up the local half: %s", g_strerror (errno));
      *exit_code = FERRY_EXIT_FAILURE;
      g_free (fds);
      return false;
    }
    for (int k = 0; k < 2; k++) {
      setsockopt (f[k], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
      setsockopt (f[k], SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    }
  }
  /* --stats=json: each local half's object comes back on a pipe. */
  int (*stats)[2] = g_malloc_n (rc->n, sizeof *stats);
  for (unsigned i = 0; i < rc->n; i++)
    if (!ferry_stats_enabled () || pipe2 (stats[i], O_CLOEXEC) < 0)
      stats[i][0] = stats[i][1] = -1;
  /* A stop signal passed on before a child's handlers are in place waits
   * for them (its stream mode's signal_watch_new unblocks it), instead of
   * killing the child by its default action. */
  sigset_t parent_mask;
  signal_watch_block (&parent_mask);
  for (unsigned i = 0; i < rc->n; i++) {
    struct remote_channel *c = &rc->ch[i];
    pid_t child = fork ();
    if (child < 0) {
      ferry_error ("cannot start the local half: %s", g_strerror (errno));
      *exit_code = FERRY_EXIT_FAILURE;
      /* The children so far see their pipes close, and end. */
      pthread_sigmask (SIG_SETMASK, &parent_mask, NULL);
      g_free (fds);
      return false;
    }
    /* Set by both, whichever runs first: signals for the copy reach the
     * local half through on_signal only. */
    setpgid (child == 0 ? 0 : child, 0);
    if (child == 0) {
      /* Only this half's own ends stay open in it. */
      for (unsigned j = 0; j < rc->n; j++) {
        for (int k = 0; k < 6; k++)
          if (fds[j][k] >= 0 && (j != i || k % 2 == 0))
            close (fds[j][k]);
        for (int k = 0; k < 2; k++)
          if (stats[j][k] >= 0 && (j != i || k == 0))
            close (stats[j][k]);
      }
      /* main() writes the half's object, with its exit code, there. */
      ferry_stats_to_fd (stats[i][1]);
      *exit_code = run_local_half (o, fds[i][1], fds[i][3], fds[i][5], c->number);
      g_free (fds);
      g_free (stats);
      return false;
    }
    c->child = child;
  }
  for (unsigned i = 0; i < rc->n; i++) {
    if (stats[i][1] >= 0)
      close (stats[i][1]);
    rc->ch[i].stats = stats[i][0];
  }
  g_free (stats);
  pthread_sigmask (SIG_SETMASK, &parent_mask, NULL);
  for (unsigned i = 0; i < rc->n; i++) {
    struct remote_channel *c = &rc->ch[i];
    close (fds[i][1]);
    close (fds[i][3]);
    if (fds[i][5] >= 0)
      close (fds[i][5]);
    c->fd = fds[i][0];
    c->go = fds[i][2];
    c->control = fds[i][4];
    g_unix_set_fd_nonblocking (c->fd, TRUE, NULL);
  }
  g_free (fds);
  return true;
}

/* How long @c's stream ran, up to @now if it still runs. */
static double
stream_seconds (const struct remote_copy *rc, const struct remote_channel *c, gint64 now)
{
  return ((c->end_us ? c->end_us : now) - rc->start_us) / 1e6;
}

/* --delta: the blocks compared and those found the same.  Only the
 * export's last block is short: same_bytes rounds up to blocks. */
static void
delta_blocks (const struct remote_copy *rc, uint64_t *compared, uint64_t *same)
{
  *compared = (range_controller_size (rc->ranges) + STREAM_BLOCK_SIZE - 1) / STREAM_BLOCK_SIZE;
  *same = (range_controller_done (rc->ranges)->same_bytes + STREAM_BLOCK_SIZE - 1) /
          STREAM_BLOCK_SIZE;
}

/* -v with --streams: a line per channel, and the image digest composed
 * from the block digests (doc/nbd-stream.md, section 5). */
static void
print_streams_summary (struct remote_copy *rc, bool complete)
{
  gint64 now = g_get_monotonic_time ();
  const struct range_counts *done = range_controller_done (rc->ranges);
  uint64_t size = range_controller_size (rc->ranges);
  g_autofree char *digest = complete ? range_controller_digest (rc->ranges) : NULL;

  for (unsigned i = 0; i < rc->n; i++) {
    const struct remote_channel *c = &rc->ch[i];
    const struct range_counts *its = &c->holder.done;
    double secs = stream_seconds (rc, c, now);
    ferry_report ("stream %u: ranges=%" PRIu64 " image=%" PRIu64 " data=%" PRIu64
                  " seconds=%.3f data_rate=%.1fMiB/s", c->number, its->ranges, its->bytes,
                  its->data_bytes, secs,
                  secs > 0 ? its->data_bytes / secs / (1024 * 1024) : 0.0);
  }
  if (!digest)
    return;
  ferry_report ("copy: streams=%u ranges=%" PRIu64 " image=%" PRIu64 " data=%" PRIu64
                " seconds=%.3f digest=%s", rc->n, range_controller_n_ranges (rc->ranges), size,
                done->data_bytes, (now - rc->start_us) / 1e6, digest);
  uint64_t blocks, same;
  delta_blocks (rc, &blocks, &same);
  if (rc->delta)
    ferry_report ("delta: compared=%" PRIu64 " blocks, sent=%" PRIu64 " same=%" PRIu64
                  " saved=%" PRIu64 " bytes", blocks, blocks - same, same, done->same_bytes);
}

/* --stats=json: print_streams_summary's counts, as members of the final
 * object (ferry(1), STATISTICS). */
static void
record_streams_stats (struct remote_copy *rc, bool complete)
{
  gint64 now = g_get_monotonic_time ();
  const struct range_counts *done = range_controller_done (rc->ranges);
  uint64_t size = range_controller_size (rc->ranges);
  g_autofree char *digest = complete ? range_controller_digest (rc->ranges) : NULL;
  StatsValue *per_stream = stats_array_new ();

  for (unsigned i = 0; i < rc->n; i++) {
    const struct remote_channel *c = &rc->ch[i];
    const struct range_counts *its = &c->holder.done;
    double secs = stream_seconds (rc, c, now);
    StatsValue *o = stats_object_new ();
    stats_object_set_int (o, "stream", c->number);
    stats_object_set_int (o, "ranges", its->ranges);
    stats_object_set_int (o, "image", its->bytes);
    stats_object_set_int (o, "data", its->data_bytes);
    ferry_stats_object_set_ms (o, secs);
    ferry_stats_object_set_rate (o, its->data_bytes, secs);
    stats_array_add (per_stream, o);
  }
  ferry_stats_set ("per_stream", per_stream);
  ferry_stats_set_int ("ranges", range_controller_n_ranges (rc->ranges));
  ferry_stats_set_int ("image", size);
  ferry_stats_set_int ("data", done->data_bytes);
  ferry_stats_set_int ("milliseconds", (now - rc->start_us + 500) / 1000);
  if (digest)
    ferry_stats_set_string ("digest", digest);
  if (rc->delta) {
    uint64_t blocks, same;
    delta_blocks (rc, &blocks, &same);
    StatsValue *d = stats_object_new ();
    stats_object_set_int (d, "compared", blocks);
    stats_object_set_int (d, "sent", blocks - same);
    stats_object_set_int (d, "same", same);
    stats_object_set_int (d, "saved_bytes", done->same_bytes);
    ferry_stats_set ("delta", d);
  }
}

/* --stats=json: the local halves' objects, in stream order, as "local"
 * (a remote half's counts stay on its host). */
static void
record_local_stats (struct remote_copy *rc)
{
  StatsValue *local = stats_array_new ();

  for (unsigned i = 0; i < rc->n; i++) {
    StatsValue *half = ferry_stats_read_fd (rc->ch[i].stats);
    if (half == NULL)
      half = stats_object_new ();
    stats_object_set_int (half, "stream", rc->ch[i].number);
    stats_array_add (local, half);
  }
  ferry_stats_set ("local", local);
}

/* Whether every half ended well and DST is complete: no line printed. */
static bool
copy_succeeded (const struct remote_copy *rc, int stop_code)
{
  if (rc->failed || (rc->ranges && range_controller_error (rc->ranges)))
    return false;
  for (unsigned i = 0; i < rc->n; i++)
    if (!rc->ch[i].aborted && channel_code (&rc->ch[i], stop_code) != FERRY_EXIT_OK)
      return false;
  return !rc->ranged || range_controller_check_complete (rc->ranges, NULL);
}

/* The session died: that is the one cause, whatever each half then saw
 * (no status, a cut stream), in one line with how far DST is complete
 * where this side knows it: a download's local receivers report what they
 * applied; an upload's senders report ranges as sent, and what the remote
 * receivers applied of them was lost with the link. */
static int
report_link_lost (const struct remote_copy *rc)
{
  g_autoptr (GError) missing = NULL;
  const char *where = NULL, *format = rc->options->stream.dst_format;

  if (!rc->upload && rc->ranged && !range_controller_check_complete (rc->ranges, &missing))
    where = missing->message;
  else if (!rc->upload)
    where = rc->ch[0].cut_where;
  else if (format == NULL || strcmp (format, "raw") == 0)   /* --delta writes raw alone */
    where = "how far DST on the host is complete went with it (--delta sends only what "
            "is missing)";
  else
    where = "how far DST on the host is complete went with it";
  ferry_error ("ssh connection to %s lost: %s%s%s", rc->ch[0].channel_name, rc->link_lost,
               where ? "; " : "", where ? where : "");
  return FERRY_EXIT_LINK_LOST;
}

/* The exit code of the whole copy, and the lines that explain it. */
static int
copy_result (struct remote_copy *rc, const struct nbd_stream_options *o)
{
  int stop_code = rc->stop_signum ? 128 + rc->stop_signum : 0, code = FERRY_EXIT_OK;
  const GError *error = rc->ranges ? range_controller_error (rc->ranges) : NULL;
  g_autoptr (GError) missing = NULL;
  bool complete;

  if (rc->cutting) {
    for (unsigned i = 0; i < rc->n; i++)
      print_deferred_line (&rc->ch[i]);
    return stop_code;
  }
  if (rc->link_lost && !copy_succeeded (rc, stop_code))
    return report_link_lost (rc);
  if (error) {
    ferry_error ("%s", error->message);
    return error->code;
  }
  if (rc->failed) {
    code = channel_code (rc->failed, stop_code);
    report_halves (rc->failed, code);
    return code;
  }
  for (unsigned i = 0; i < rc->n; i++) {
    if (rc->ch[i].aborted)
      continue;
    int c = channel_code (&rc->ch[i], stop_code);
    report_halves (&rc->ch[i], c);
    if (code == FERRY_EXIT_OK || code == stop_code)
      code = c;
  }
  if (!rc->ranged)
    return code;
  complete = range_controller_check_complete (rc->ranges, &missing);
  if (code == FERRY_EXIT_OK && !complete) {
    ferry_error ("%s: %s", rc->ch[0].channel_name, missing->message);
    code = stop_code ? stop_code : missing->code;
  }
  if (o->verbose)
    print_streams_summary (rc, code == FERRY_EXIT_OK && complete);
  if (ferry_stats_enabled ())
    record_streams_stats (rc, code == FERRY_EXIT_OK && complete);
  return code;
}

/* Set up @rc for the copy: its channels (from the options), its local
 * halves forked, its main loop and the controller's room.  False (with
 * the exit code) if it cannot run; a forked child also returns false,
 * with its own exit code. */
static bool
setup_copy (const struct nbd_stream_options *o, struct remote_copy *rc, int *code)
{
  signal (SIGPIPE, SIG_IGN);
  nbd_stream_keep_freed_memory ();
  rc->upload = o->remote_receive != NULL;
  rc->n = o->streams ? o->streams : o->no_verify ? 1 : NBD_DEFAULT_STREAMS;
  rc->ranged = rc->n > 1;
  rc->delta = o->delta;
  rc->ch = g_new0 (struct remote_channel, rc->n);
  for (unsigned i = 0; i < rc->n; i++)
    rc->ch[i] = (struct remote_channel) { .rc = rc, .number = i + 1, .remote_status = -1,
                                          .fd = -1, .go = -1, .control = -1, .stats = -1,
                                          .holder = RANGE_HOLDER_INIT };
  if (!start_children (o, rc, code)) {
    g_free (rc->ch);
    return false;
  }
  rc->loop = g_main_loop_new (NULL, FALSE);
  if (rc->ranged) {
    rc->ranges = range_controller_new (rc->n);
    rc->packet = g_malloc (RANGE_REPORT_ROOM);
  }
  return true;
}

/* Run the copy; its exit code, with the lines that explain it. */
static int
run_copy (const struct ferry_options *options, const struct address *address,
          struct remote_copy *rc)
{
  g_autoptr (GError) error = NULL;
  int wstatus;

  if (relay_copy (options, address, rc, &error))
    return copy_result (rc, &options->stream);
  ferry_error ("%s", error->message);
  /* The children see their go sockets close, and end without a word. */
  for (unsigned i = 0; i < rc->n; i++) {
    if (rc->ch[i].go >= 0)
      close (rc->ch[i].go);
    rc->ch[i].go = -1;
  }
  for (unsigned i = 0; i < rc->n; i++)
    while (waitpid (rc->ch[i].child, &wstatus, 0) < 0 && errno == EINTR)
      ;
  return error->code;
}

/* Free what the copy held, and its signal watch (after the stop timer,
 * before the main loop, as they were made). */
static void
free_copy (struct remote_copy *rc, struct signal_watch *signals)
{
  endpoint_ssh_spares_free (rc->spares);
  if (rc->conn)
    ferry_ssh_conn_unref (rc->conn);
  for (unsigned i = 0; i < rc->n; i++) {
    struct remote_channel *c = &rc->ch[i];
    g_clear_pointer (&c->go_watch, gsource_release);
    if (c->go >= 0)
      close (c->go);
    if (c->fd >= 0)
      close (c->fd);
    stop_control (c);
    g_free (c->who);
    g_free (c->channel_name);
    g_free (c->command);
    g_free (c->remote_signal);
    g_free (c->cut_reason);
    g_free (c->cut_where);
    if (c->stats >= 0)
      close (c->stats);
  }
  g_free (rc->link_lost);
  g_clear_pointer (&rc->stop_timer, gsource_release);
  signal_watch_free (signals);
  g_main_loop_unref (rc->loop);
  g_clear_pointer (&rc->ranges, range_controller_free);
  g_free (rc->packet);
  g_free (rc->ch);
}

int
nbd_remote_main (const struct ferry_options *options)
{
  bool same_host = options->stream.same_host;
  g_autoptr (GError) error = NULL;
  g_autoptr (FerryAddress) address = same_host ? NULL
                                               : address_parse_flags (options->address,
                                                                      ADDRESS_SSH_SESSION,
                                                                      &error);
  g_autofree char *self = same_host ? g_file_read_link ("/proc/self/exe", &error) : NULL;
  struct remote_copy rc = { .drain_timeout = options->drain_timeout, .same_host = same_host };
  struct signal_watch *signals;
  int code = FERRY_EXIT_OK;

  if (address && address->kind != ADDRESS_SSH)
    ferry_set_error (&error, FERRY_EXIT_USAGE, "invalid address '%s': --remote-nbd-send "
                     "and --remote-nbd-receive take ssh://[USER@]HOST[:PORT]",
                     options->address);
  if (error) {
    ferry_error ("%s", error->message);
    return error->domain == FERRY_ERROR ? error->code : FERRY_EXIT_FAILURE;
  }
  rc.helper = same_host ? self
            : options->connect.remote_helper ? options->connect.remote_helper : "ferry";
  if (!same_host) {
    ferry_stats_set_string ("type", "remote-copy");
    ferry_stats_set_string ("direction", options->stream.remote_receive ? "upload"
                                                                        : "download");
  }
  if (!setup_copy (&options->stream, &rc, &code))
    return code;
  ferry_stats_set_int ("streams", rc.n);
  signals = signal_watch_new (on_signal, &rc);
  code = run_copy (options, address, &rc);
  if (ferry_stats_enabled ())
    record_local_stats (&rc);
  free_copy (&rc, signals);
  return code;
}
