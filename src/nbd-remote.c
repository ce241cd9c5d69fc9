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
#include "message.h"
#include "relay.h"

/* The socketpair's buffers: a few stream records' worth in each. */
#define SOCKET_BUFFER (4 * 1024 * 1024)
/* Remote failures of the stream mode (20 to 23) become 30 to 33. */
#define REMOTE_CODE_OFFSET (FERRY_EXIT_REMOTE_NBD - FERRY_EXIT_NBD)
/* ferry: HOST: the remote half ... (ran: CMD) */

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
  bool child_done;
  int child_status;           /* the child's wait status */
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
on_relay_done (struct relay *relay, int exit_code, void *data)
{
  struct remote_copy *rc = data;

  rc->relay_done = true;
  rc->relay_code = exit_code;
  rc->remote_status = endpoint_ssh_exit_status (rc->channel);
  /* Closing the socketpair now tells a local sender still writing. */
  g_clear_pointer (&rc->relay, relay_free);
  rc->channel = NULL;
  if (rc->child_done)
    g_main_loop_quit (rc->loop);
}

/* A local receiver that failed wants nothing more: the remote sender's
 * rest would fill the channel's window, and sshd would wait to deliver
 * it before it closed the channel. */
static void
on_child_exit (GPid pid, gint wstatus, gpointer data)
{
  struct remote_copy *rc = data;

  g_spawn_close_pid (pid);
  rc->child_done = true;
  rc->child_status = wstatus;
  if (!rc->upload && !rc->relay_done && !(WIFEXITED (wstatus) && WEXITSTATUS (wstatus) == 0))
    relay_abandon (rc->relay, "the local half failed", FERRY_EXIT_OK);
  if (rc->relay_done)
    g_main_loop_quit (rc->loop);
}

/* The remote helper's exit status as ferry's exit code. */
static int
remote_code (int status)
{
  if (status == 0)
    return FERRY_EXIT_OK;
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
  if (WIFEXITED (wstatus))
    return WEXITSTATUS (wstatus);
  ferry_error ("the local half was killed by signal %d", WTERMSIG (wstatus));
  return 128 + WTERMSIG (wstatus);
}

/* Which side failed: the receiver's failure, unless it only saw the stream
 * break (21) because the sender had failed first; then the sender's; then
 * the transport's. */
static int
copy_exit_code (bool upload, int local, int remote, int relay)
{
  int sender = upload ? local : remote, receiver = upload ? remote : local;
  int broken = upload ? FERRY_EXIT_STREAM + REMOTE_CODE_OFFSET : FERRY_EXIT_STREAM;

  if (receiver != FERRY_EXIT_OK && !(receiver == broken && sender != FERRY_EXIT_OK))
    return receiver;
  if (sender != FERRY_EXIT_OK)
    return sender;
  return relay;
}

/* Connect (the host key, the login), run the remote half, let the child
 * go and relay; the relay's, the remote's and the child's results in @rc.
 * False (with the error) if the copy never started. */
static bool
relay_copy (const struct ferry_options *options, const struct address *address, int fd,
            int go, pid_t child, struct remote_copy *rc, char **command, GError **error)
{
  struct relay_config config = options->relay;

  *command = remote_command (options);
  rc->channel = endpoint_ssh_exec (address, &options->connect, *command, error);
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
  struct remote_copy rc = { .remote_status = -1 };
  int sv[2], go[2], wstatus, size = SOCKET_BUFFER, local, remote, code;
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
  if (!relay_copy (options, address, sv[0], go[1], child, &rc, &command, &error)) {
    ferry_error ("%s", error->message);
    close (sv[0]);
    close (go[1]);
    while (waitpid (child, &wstatus, 0) < 0 && errno == EINTR)
      ;
    g_main_loop_unref (rc.loop);
    g_free (rc.host);
    return error->code;
  }
  close (go[1]);
  g_main_loop_unref (rc.loop);
  local = child_code (rc.child_status);
  remote = remote_code (rc.remote_status);
  code = copy_exit_code (upload, local, remote, rc.relay_code);
  /* A failure of the remote half without a message of its own. */
  if (code == FERRY_EXIT_REMOTE && rc.remote_status < 0)
    ferry_error ("%s: the remote half ended without an exit status: killed by a signal, or "
                 "its session died (ran: %s)", rc.host, command);
  else if (code == FERRY_EXIT_REMOTE)
    ferry_error ("%s: the remote half exited with status %d (ran: %s)", rc.host,
                 rc.remote_status, command);
  g_free (rc.host);
  return code;
}
