/* ferry: the remote stream mode (nbd-remote.h).
 *
 * Three parts, each one ferry already has:
 *  - the local half, the stream mode (--nbd-send or --nbd-receive), runs in
 *    a child process with one end of a socketpair as its stdout (upload) or
 *    stdin (download).  The child is forked before anything else exists
 *    (no thread, no ssh session, no main-loop source to inherit), and waits
 *    on a pipe until the remote half runs: nothing is read from or written
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
 * receiving side, local or remote, checks the sender's digest. */
#include <config.h>

#include "nbd-remote.h"

#include <glib-unix.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "endpoint-fd.h"
#include "endpoint-ssh.h"
#include "error.h"
#include "gsource-release.h"
#include "message.h"
#include "relay.h"
#include "signal-watch.h"

/* The socketpair's buffers: a few stream records' worth in each. */
#define SOCKET_BUFFER (4 * 1024 * 1024)
/* Remote failures of the stream mode (20 to 23) become 30 to 33. */
#define REMOTE_CODE_OFFSET (FERRY_EXIT_REMOTE_NBD - FERRY_EXIT_NBD)
/* After a cut, how long the local half may take to end before SIGKILL. */
#define CUT_GRACE_SECONDS 1

/* The relay between the local half and the channel, on the main loop,
 * until both it and the child are done. */
struct remote_copy {
  GMainLoop *loop;
  bool upload;
  struct relay *relay;        /* until it is done */
  bool relay_done;
  struct endpoint *channel;   /* the relay's remote end (the relay owns it) */
  char *host;                 /* USER@HOST:PORT, for messages */
  int relay_code;             /* the relay's exit code */
  int remote_status;          /* the remote helper's exit status; -1 unknown */
  char *remote_signal;        /* or the signal that killed it ("TERM"); NULL if none */
  pid_t child;                /* the local half */
  bool child_silenced;        /* killed here: the remote half's failure
                                 ended the copy, and was reported */
  bool remote_cut;            /* the channel was closed on a remote half
                                 that had not ended */
  bool child_done;
  int child_status;           /* the child's wait status */
  unsigned drain_timeout;     /* --drain-timeout: how long the halves may take to stop */
  int stop_signum;            /* the first signal that stopped the copy; 0 before */
  bool cutting;               /* a second signal, SIGQUIT or the drain timeout:
                                 the relay is gone, the exit code is the stop's */
  GSource *stop_timer;        /* the drain timeout, then the cut's grace */
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
 * that concern it. */
static char *
remote_command (const struct ferry_options *options)
{
  const struct nbd_stream_options *o = &options->stream;
  GString *command = g_string_new (NULL);
  bool upload = o->remote_receive != NULL;

  append_arg (command, options->connect.remote_helper ? options->connect.remote_helper
                                                      : "ferry");
  if (upload)
    append_arg_printf (command, "--nbd-receive=%s", o->remote_receive);
  else
    append_arg_printf (command, "--nbd-send=%s", o->remote_send);
  append_arg_printf (command, "--request-size=%zu", o->request_size);
  append_arg_printf (command, "--in-flight=%zu", o->in_flight);
  if (o->connections)
    append_arg_printf (command, "--connections=%u", o->connections);
  if (o->no_verify)
    append_arg (command, "--no-verify");
  if (upload && o->destination_is_zero)
    append_arg (command, "--destination-is-zero");
  if (upload && o->allocated)
    append_arg (command, "--allocated");
  if (!upload && o->no_extents)
    append_arg (command, "--no-extents");
  if (o->verbose)
    append_arg (command, "-v");
  return g_string_free (command, FALSE);
}

/* The child: wait until the remote half runs, then be the local half.
 * Returns its exit code; 0 at once if the parent gave up (and said why). */
static int
run_local_half (const struct nbd_stream_options *o, int fd, int go)
{
  struct nbd_stream_options local = *o;
  bool upload = o->remote_receive != NULL;
  char c;
  ssize_t n;

  do
    n = read (go, &c, 1);
  while (n < 0 && errno == EINTR);
  close (go);
  if (n != 1) {
    close (fd);
    return FERRY_EXIT_OK;
  }
  if (dup2 (fd, upload ? STDOUT_FILENO : STDIN_FILENO) < 0) {
    ferry_error ("cannot set up the local half: %s", g_strerror (errno));
    return FERRY_EXIT_FAILURE;
  }
  close (fd);
  local.remote_send = local.remote_receive = NULL;
  return nbd_stream_main (&local);
}

static void
copy_quit_if_done (struct remote_copy *rc)
{
  if (rc->relay_done && rc->child_done)
    g_main_loop_quit (rc->loop);
}

/* The remote half's outcome is in: the relay (and the channel) can go. */
static void
end_relay (struct remote_copy *rc, int exit_code)
{
  const char *signal = endpoint_ssh_exit_signal (rc->channel);

  rc->relay_done = true;
  rc->relay_code = exit_code;
  rc->remote_status = endpoint_ssh_exit_status (rc->channel);
  rc->remote_signal = g_strdup (signal);
  /* Closing the socketpair now tells a local sender still writing. */
  g_clear_pointer (&rc->relay, relay_free);
  rc->channel = NULL;
}

/* An upload's remote receiver failed, and said why (or report_halves
 * will): the local sender, still writing, would add a line about the
 * closed stream.  It is killed before the socketpair closes, and waited
 * for (without reaping it: on_child_exit does). */
static void
silence_child (struct remote_copy *rc)
{
  siginfo_t info;

  rc->child_silenced = true;
  kill (rc->child, SIGKILL);
  while (waitid (P_PID, rc->child, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
    ;
}

static void
on_relay_done (struct relay *relay, int exit_code, void *data)
{
  struct remote_copy *rc = data;

  if (rc->upload && !rc->child_done && !rc->stop_signum &&
      endpoint_ssh_exit_status (rc->channel) != 0)
    silence_child (rc);
  end_relay (rc, exit_code);
  copy_quit_if_done (rc);
}

/* A local receiver that failed or stopped wants nothing more: the remote
 * sender's rest would fill the channel's window, and sshd would wait to
 * deliver it before it closed the channel.  The channel goes at once, with
 * the remote's lines so far; the local half said why. */
static void
on_child_exit (GPid pid, gint wstatus, gpointer data)
{
  struct remote_copy *rc = data;

  g_spawn_close_pid (pid);
  rc->child_done = true;
  rc->child_status = wstatus;
  if (!rc->upload && !rc->relay_done && !(WIFEXITED (wstatus) && WEXITSTATUS (wstatus) == 0)) {
    end_relay (rc, FERRY_EXIT_OK);
    rc->remote_cut = rc->remote_status < 0 && rc->remote_signal == NULL;
  }
  copy_quit_if_done (rc);
}

/* Pass @signum on to whichever halves still run: the local one by kill(2),
 * the remote one by the channel's "signal" request. */
static void
pass_on (struct remote_copy *rc, int signum)
{
  if (!rc->child_done)
    kill (rc->child, signum);
  if (!rc->relay_done)
    endpoint_ssh_signal (rc->channel, sigabbrev_np (signum));
}

static gboolean
on_cut_grace_over (gpointer data)
{
  struct remote_copy *rc = data;

  g_clear_pointer (&rc->stop_timer, gsource_release);
  if (!rc->child_done)
    kill (rc->child, SIGKILL);
  return G_SOURCE_REMOVE;
}

/* Give up at once, after one line: the halves get @signum, the relay goes,
 * and the local half has a moment to end before it is killed. */
static void
cut_copy (struct remote_copy *rc, int signum, const char *why)
{
  ferry_error ("%s: exiting at once", why);
  rc->cutting = true;
  pass_on (rc, signum);
  if (!rc->relay_done)
    end_relay (rc, 128 + rc->stop_signum);
  g_clear_pointer (&rc->stop_timer, gsource_release);
  if (!rc->child_done)
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

/* SIGTERM, SIGINT, SIGHUP: both halves stop (each says how far it got), for
 * up to --drain-timeout.  A second signal cuts them with it; SIGQUIT kills
 * them.  SIGUSR1: the relay's statistics. */
static void
on_signal (int signum, void *data)
{
  struct remote_copy *rc = data;
  const char *name = signal_watch_name (signum);
  g_autofree char *why = NULL;

  if (signum == SIGUSR1) {
    if (rc->relay)
      relay_print_stats (rc->relay);
    return;
  }
  if (rc->cutting) {
    if (!rc->child_done)
      kill (rc->child, SIGKILL);
    return;
  }
  if (rc->stop_signum == 0 && signum != SIGQUIT) {
    rc->stop_signum = signum;
    rc->stop_timer = gsource_timer_new (rc->drain_timeout, on_drain_timeout, rc);
    pass_on (rc, signum);
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

/* The remote helper's exit status as ferry's exit code; after a stop
 * signal (@stop_code, 128 + its number), its own 128 + N, or its death by
 * that signal, is the stop's. */
static int
remote_code (int status, const char *signal, int stop_code)
{
  if (status == 0)
    return FERRY_EXIT_OK;
  if (stop_code && (status == stop_code || (status < 0 && signal == NULL) ||
                    (status < 0 && g_strcmp0 (signal, sigabbrev_np (stop_code - 128)) == 0)))
    return stop_code;
  /* Its export failed, and its message came through. */
  if (status == FERRY_EXIT_CONNECT)
    return FERRY_EXIT_REMOTE_NBD;
  if (status >= FERRY_EXIT_NBD && status <= FERRY_EXIT_TOO_SMALL)
    return status + REMOTE_CODE_OFFSET;
  return FERRY_EXIT_REMOTE;
}

static int
child_code (int wstatus)
{
  return WIFEXITED (wstatus) ? WEXITSTATUS (wstatus) : 128 + WTERMSIG (wstatus);
}

/* The halves' ends that no message of theirs explains. */
static void
report_halves (const struct remote_copy *rc, int code, const char *command)
{
  if (WIFSIGNALED (rc->child_status) && !rc->child_silenced)
    ferry_error ("the local half was killed by SIG%s", sigabbrev_np (WTERMSIG (rc->child_status)));
  if (rc->remote_cut && rc->stop_signum)
    ferry_error ("%s: the remote half had not ended when the local half stopped: its "
                 "channel was closed (ran: %s)", rc->host, command);
  else if (rc->remote_signal)
    ferry_error ("%s: the remote half was killed by SIG%s (ran: %s)", rc->host,
                 rc->remote_signal, command);
  else if (code == FERRY_EXIT_REMOTE && rc->remote_status < 0)
    ferry_error ("%s: the remote half ended without an exit status: killed by a signal, or "
                 "its session died (ran: %s)", rc->host, command);
  else if (code == FERRY_EXIT_REMOTE)
    ferry_error ("%s: the remote half exited with status %d (ran: %s)", rc->host,
                 rc->remote_status, command);
}

/* Which side failed: the receiver's failure, unless it only saw the stream
 * break (21) because the sender had failed first; then the sender's; then
 * the transport's.  After a stop signal (@stop_code, 128 + its number; 0
 * without one), a half that stopped for it, a receiver that saw the stream
 * cut and a relay that lost its peers yield to a half that failed for a
 * reason of its own: the code is the stop's unless both halves completed. */
static int
copy_exit_code (bool upload, int local, int remote, int relay, int stop_code)
{
  int sender = upload ? local : remote, receiver = upload ? remote : local;
  int broken = upload ? FERRY_EXIT_STREAM + REMOTE_CODE_OFFSET : FERRY_EXIT_STREAM;
  bool stopped = false;

  if (stop_code) {
    if (receiver == stop_code || receiver == broken)
      receiver = FERRY_EXIT_OK, stopped = true;
    if (sender == stop_code)
      sender = FERRY_EXIT_OK, stopped = true;
    if (relay != FERRY_EXIT_OK)
      relay = FERRY_EXIT_OK, stopped = true;
  }
  if (receiver != FERRY_EXIT_OK && !(receiver == broken && sender != FERRY_EXIT_OK))
    return receiver;
  if (sender != FERRY_EXIT_OK)
    return sender;
  return stopped ? stop_code : relay;
}

/* Connect (the host key, the login), run the remote half, let the child
 * go and relay; the relay's, the remote's and the child's results in @rc.
 * False (with the error) if the copy never started. */
static bool
relay_copy (const struct ferry_options *options, const struct address *address, int fd,
            int go, pid_t child, struct remote_copy *rc, char **command, GError **error)
{
  struct relay_config config = options->relay;
  g_autofree char *connecting = g_strdup_printf (" while connecting to %s\n", options->address);

  *command = remote_command (options);
  /* libssh's handshake and login retry their poll on EINTR: a host that
   * never answers would make SIGTERM wait for its timeout.  The local half
   * sees its pipe close, and ends without a word. */
  signal_watch_exit_on_stop (connecting);
  rc->channel = endpoint_ssh_exec (address, &options->connect, *command, error);
  signal_watch_exit_on_stop (NULL);
  if (rc->channel == NULL)
    return false;
  rc->host = g_strdup (rc->channel->name);
  if (write (go, "g", 1) != 1) {
    g_clear_pointer (&rc->channel, endpoint_free);
    return ferry_set_error (error, FERRY_EXIT_FAILURE, "cannot start the local half: %s",
                            g_strerror (errno));
  }
  config.verbose = false;
  config.nbd.enabled = false;
  config.label = NULL;
  config.peers_report_loss = true;
  rc->relay = relay_new (endpoint_socket_new (fd, "the local half"), rc->channel, &config,
                         on_relay_done, rc);
  g_child_watch_add (child, on_child_exit, rc);
  g_main_loop_run (rc->loop);
  return true;
}

int
nbd_remote_main (const struct ferry_options *options)
{
  const struct nbd_stream_options *o = &options->stream;
  bool upload = o->remote_receive != NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (FerryAddress) address = address_parse_flags (options->address,
                                                          ADDRESS_SSH_SESSION, &error);
  g_autofree char *command = NULL;
  struct remote_copy rc = { .remote_status = -1, .drain_timeout = options->drain_timeout };
  struct signal_watch *signals;
  int sv[2], go[2], wstatus, size = SOCKET_BUFFER, local, remote, code, stop_code;
  pid_t child;

  if (address && address->kind != ADDRESS_SSH)
    ferry_set_error (&error, FERRY_EXIT_USAGE, "invalid address '%s': --remote-nbd-send "
                     "and --remote-nbd-receive take ssh://[USER@]HOST[:PORT]",
                     options->address);
  if (error) {
    ferry_error ("%s", error->message);
    return error->code;
  }
  signal (SIGPIPE, SIG_IGN);
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
      pipe2 (go, O_CLOEXEC) < 0) {
    ferry_error ("cannot set up the local half: %s", g_strerror (errno));
    return FERRY_EXIT_FAILURE;
  }
  for (int i = 0; i < 2; i++) {
    setsockopt (sv[i], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    setsockopt (sv[i], SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  }
  child = fork ();
  if (child < 0) {
    ferry_error ("cannot start the local half: %s", g_strerror (errno));
    return FERRY_EXIT_FAILURE;
  }
  /* Set by both, whichever runs first: signals for the copy reach the
   * local half through on_signal only. */
  setpgid (child == 0 ? 0 : child, 0);
  if (child == 0) {
    close (sv[0]);
    close (go[1]);
    return run_local_half (o, sv[1], go[0]);
  }
  close (sv[1]);
  close (go[0]);
  g_unix_set_fd_nonblocking (sv[0], TRUE, NULL);
  rc.loop = g_main_loop_new (NULL, FALSE);
  rc.upload = upload;
  rc.child = child;
  signals = signal_watch_new (on_signal, &rc);
  if (!relay_copy (options, address, sv[0], go[1], child, &rc, &command, &error)) {
    ferry_error ("%s", error->message);
    close (sv[0]);
    close (go[1]);
    while (waitpid (child, &wstatus, 0) < 0 && errno == EINTR)
      ;
    signal_watch_free (signals);
    g_main_loop_unref (rc.loop);
    g_free (rc.host);
    return error->code;
  }
  close (go[1]);
  g_clear_pointer (&rc.stop_timer, gsource_release);
  signal_watch_free (signals);
  g_main_loop_unref (rc.loop);
  stop_code = rc.stop_signum ? 128 + rc.stop_signum : 0;
  /* A local half killed here did not fail: the remote one did. */
  local = rc.child_silenced ? FERRY_EXIT_OK : child_code (rc.child_status);
  remote = remote_code (rc.remote_status, rc.remote_signal, stop_code);
  if (rc.cutting) {
    code = stop_code;
  } else {
    code = copy_exit_code (upload, local, remote, rc.relay_code, stop_code);
    report_halves (&rc, code, command);
  }
  g_free (rc.host);
  g_free (rc.remote_signal);
  return code;
}
