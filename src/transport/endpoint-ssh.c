/* ferry: an ssh channel as a relay endpoint.
 *
 * The session (ssh-session.c) owns the fd watch and says when to try; this
 * file moves bytes.  Reads pull with ssh_channel_read() at the relay's free
 * space, never through the data callback: libssh grows the receive window
 * until what it holds plus the window is the count asked for, so the window
 * follows ferry's free buffer (speed at high RTT) and stops growing while
 * the buffer is full (backpressure).
 *
 * A channel is always the remote end, so the window is both the down
 * direction's speed limit (one window per round trip) and its memory
 * bound.  A channel's down buffer is at least receive_window(): sized to
 * the round trip measured as the channel opened, so a distant host gets a
 * wide window and a near one a narrow one (8 MiB cost loopback a fifth of
 * its speed), and split among the streams of a copy.  ferry's buffer,
 * libssh's and the bytes in flight together stay under that buffer plus
 * twice LIBSSH_WINDOW_FLOOR (2.5 MiB), the window libssh grants on its
 * own: channel_endpoint_readv keeps those grants from piling up. */
#include <config.h>

#include "endpoint-ssh.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libssh/callbacks.h>
#include <libssh/ssh2.h>

#include "error.h"
#include "message.h"
#include "signal-watch.h"
#include "ssh-session.h"

/* The down rate the window is sized for: 8 MiB at 50 ms, where 1 MiB
 * allowed 20 MiB/s.  Within [MIN, MAX]: MIN is OpenSSH's window, and at
 * least LIBSSH_WINDOW_FLOOR, which channel_endpoint_readv needs to make progress. */
#define SSH_WINDOW_RATE (160 * 1024 * 1024)
#define SSH_WINDOW_MIN (2 * 1024 * 1024)
#define SSH_WINDOW_MAX (8 * 1024 * 1024)
/* The window libssh 0.10 keeps open by itself (WINDOWBASE in channels.c). */
#define LIBSSH_WINDOW_FLOOR 1280000

struct channel_endpoint {
  struct endpoint base;
  struct ferry_ssh_conn *conn;      /* a reference */
  struct ferry_ssh_client client;
  ssh_channel channel;
  char *command;              /* exec: the remote command; NULL for a direct channel */
  char *direct_error;         /* proxy=auto fell back to exec: the server's refusal
                                 of the direct channel */
  int exit_status;            /* exec: the remote command's; -1 until known */
  bool status_to_caller;      /* endpoint_ssh_exec_on: the caller reports the
                                 status (endpoint_ssh_exit_status), not exit_code */
  GString *stderr_line;       /* endpoint_ssh_exec_on: the remote stderr's unfinished
                                 line; its lines are ferry's, naming the host */
  struct ssh_channel_callbacks_struct callbacks;  /* endpoint_ssh_exec_on: exit-signal */
  char *stderr_label;         /* endpoint_ssh_exec_on: the stderr lines' prefix,
                                 if not the session's name */
  bool stderr_discarded;      /* endpoint_ssh_discard_stderr: read, never passed on */
  char *exit_signal;          /* the signal that killed the remote command
                                 ("TERM"), once the server said so */
  bool eof_sent;
};

static ssize_t
channel_failed (struct channel_endpoint *se)
{
  ssh_session s = ferry_ssh_conn_session (se->conn);

  ferry_ssh_conn_update (se->conn);
  errno = ferry_ssh_conn_is_dead (se->conn) || ssh_get_error_code (s) == SSH_FATAL
    ? ECONNRESET : EPIPE;
  return -1;
}

static void
write_stderr (const char *buf, size_t n)
{
  for (ssize_t done = 0, w; (size_t) done < n; done += w)
    if ((w = write (STDERR_FILENO, buf + done, n - done)) <= 0)
      break;
}

/* endpoint_ssh_exec_on: the remote ferry's lines become ferry's, naming
 * the host (or the label). */
static void
pass_stderr_lines (struct channel_endpoint *se, bool flush)
{
  ferry_pass_lines (se->stderr_line,
                    se->stderr_label ? se->stderr_label : ferry_ssh_conn_name (se->conn), flush);
}

/* The remote command's stderr is ferry's.  Only while no stdout bytes wait
 * in libssh (unless @all, as the channel goes), and never an empty read:
 * any read may widen the window that both streams share (see
 * channel_endpoint_readv). */
static void
drain_stderr (struct channel_endpoint *se, bool all)
{
  char buf[4096];
  int n;

  while ((all || ssh_channel_poll (se->channel, 0) <= 0) &&
         ssh_channel_poll (se->channel, 1) > 0 &&
         (n = ssh_channel_read (se->channel, buf, sizeof buf, 1)) > 0) {
    if (se->stderr_discarded)
      continue;
    if (se->stderr_line) {
      g_string_append_len (se->stderr_line, buf, n);
      pass_stderr_lines (se, false);
    } else {
      write_stderr (buf, n);
    }
  }
}

/* Remote EOF: for a remote command, only once its exit status is in (or
 * the channel closed without one), so the status can become ferry's. */
static bool
at_end (struct channel_endpoint *se)
{
  if (se->command) {
    drain_stderr (se, false);
    if (se->exit_status < 0)
      se->exit_status = ssh_channel_get_exit_status (se->channel);
  }
  return ssh_channel_is_eof (se->channel) &&
         (!se->command || se->exit_status >= 0 || ssh_channel_is_closed (se->channel));
}

static ssize_t
channel_endpoint_readv (struct endpoint *ep, const struct iovec *iov, int iovcnt)
{
  struct channel_endpoint *se = (struct channel_endpoint *) ep;
  size_t total = 0, offered = 0;
  int empty_rounds = 0, held;

  if (ferry_ssh_conn_is_dead (se->conn))
    return channel_failed (se);
  if (se->command)
    drain_stderr (se, false);
  /* After any read that leaves the window under half of LIBSSH_WINDOW_FLOOR,
   * libssh grants that floor again, whatever it still holds: small reads
   * out of a large backlog, one per drain of a slow reader, widened the
   * window each time, and the down direction piled up without bound.  So read
   * only while what it holds fits in the free space, give or take a floor;
   * until then the buffer counts as full. */
  for (int i = 0; i < iovcnt; i++)
    offered += iov[i].iov_len;
  held = ssh_channel_poll (se->channel, 0);
  if (held > 0 && (size_t) held > offered + LIBSSH_WINDOW_FLOOR) {
    se->client.maybe_buffered = true;
    ferry_ssh_conn_update (se->conn);
    errno = ENOBUFS;
    return -1;
  }
  for (int i = 0; i < iovcnt; i++) {
    size_t off = 0;
    while (off < iov[i].iov_len) {
      uint32_t want = (uint32_t) MIN (iov[i].iov_len - off, (size_t) 1 << 30);
      guint64 heard = ferry_ssh_conn_bytes_in (se->conn);
      int n = ssh_channel_read (se->channel, (char *) iov[i].iov_base + off, want, 0);
      if (n < 0) {
        if (total > 0)
          goto out;           /* the error shows on the next read */
        return channel_failed (se);
      }
      if (n == 0) {
        /* libssh reads the socket 4 KiB per call, and this one got some:
         * more may wait in the kernel, so go on, and one readiness report
         * moves more than one packet. */
        if (++empty_rounds < 64 && ferry_ssh_conn_bytes_in (se->conn) != heard)
          continue;
        /* Drained.  Now stderr's turn: its unread bytes hold the window
         * that both streams share, and keep the EOF back (libssh reports
         * it only once both are empty).  An EOF behind the data shows on
         * the next read, which no fd readiness will prompt; the channel's
         * callbacks note anything that comes meanwhile. */
        se->client.maybe_buffered = false;
        if (se->command)
          drain_stderr (se, false);
        if (total > 0 && ssh_channel_is_eof (se->channel))
          se->client.maybe_buffered = true;
        goto out;
      }
      off += (size_t) n;
      total += (size_t) n;
    }
  }
  se->client.maybe_buffered = true;   /* full: libssh may hold more */
out:
  ferry_ssh_conn_update (se->conn);
  if (total > 0)
    return (ssize_t) total;
  if (at_end (se))
    return 0;
  errno = EAGAIN;
  return -1;
}

static ssize_t
channel_endpoint_writev (struct endpoint *ep, const struct iovec *iov, int iovcnt)
{
  struct channel_endpoint *se = (struct channel_endpoint *) ep;
  ssh_session s = ferry_ssh_conn_session (se->conn);
  size_t total = 0;

  if (ferry_ssh_conn_is_dead (se->conn) || ssh_channel_is_closed (se->channel))
    return channel_failed (se);
  /* The kernel took nothing of the last write yet: that is backpressure.
   * Another channel's read or write may be what flushes it, and no fd
   * event follows that: the session's prepare looks for it. */
  if (ssh_get_poll_flags (s) & SSH_WRITE_PENDING) {
    se->client.write_blocked = true;
    errno = EAGAIN;
    return -1;
  }
  for (int i = 0; i < iovcnt; i++) {
    uint32_t len = (uint32_t) MIN (iov[i].iov_len, (size_t) 1 << 30);
    int n = ssh_channel_write (se->channel, iov[i].iov_base, len);
    if (n < 0) {
      if (total > 0)
        break;
      return channel_failed (se);
    }
    total += (size_t) n;
    if ((uint32_t) n < len) {
      se->client.write_blocked = true;    /* the peer's window is full */
      break;
    }
  }
  ferry_ssh_conn_update (se->conn);
  if (total > 0)
    return (ssize_t) total;
  errno = EAGAIN;
  return -1;
}

static int
channel_endpoint_shutdown_write (struct endpoint *ep)
{
  struct channel_endpoint *se = (struct channel_endpoint *) ep;

  if (se->eof_sent)
    return 0;
  se->eof_sent = true;
  se->client.want_write = false;
  if (ferry_ssh_conn_is_dead (se->conn))
    return channel_failed (se);
  if (ssh_channel_is_closed (se->channel)) {
    errno = ENOTCONN;
    return -1;
  }
  /* SSH_AGAIN: the EOF is queued, and libssh's flush of the session's
   * output would block (other channels' data is ahead of it, as with
   * --streams); the session's watch sends it. */
  if (ssh_channel_send_eof (se->channel) == SSH_ERROR)
    return channel_failed (se);
  ferry_ssh_conn_update (se->conn);
  return 0;
}

static void
channel_endpoint_set_interest (struct endpoint *ep, bool want_read, bool want_write)
{
  struct channel_endpoint *se = (struct channel_endpoint *) ep;

  bool more = (want_read && !se->client.want_read) ||
              (want_write && !se->eof_sent && !se->client.want_write);

  /* The session's source asks each client before every poll. */
  se->client.want_read = want_read;
  se->client.want_write = want_write && !se->eof_sent;
  if (more)
    ferry_ssh_conn_wake_dead (se->conn);
}

/* The channel is closed (the server's end went away, or the remote
 * command exited), not just at EOF; or the whole session failed. */
static bool
channel_endpoint_peer_gone (struct endpoint *ep)
{
  struct channel_endpoint *se = (struct channel_endpoint *) ep;

  return ferry_ssh_conn_is_dead (se->conn) || ssh_channel_is_closed (se->channel);
}

/* The session's death was reported, for every channel at once. */
static bool
channel_endpoint_failure_reported (struct endpoint *ep)
{
  struct channel_endpoint *se = (struct channel_endpoint *) ep;

  return ferry_ssh_conn_is_dead (se->conn);
}

/* After our EOF, the server's close says that it has written everything
 * out: before that, ending the session would lose what sshd holds. */
static bool
channel_endpoint_delivering (struct endpoint *ep)
{
  struct channel_endpoint *se = (struct channel_endpoint *) ep;

  return se->eof_sent && !channel_endpoint_peer_gone (ep);
}

static int
channel_endpoint_exit_code (struct endpoint *ep)
{
  struct channel_endpoint *se = (struct channel_endpoint *) ep;
  const char *name = ferry_ssh_conn_name (se->conn);
  g_autofree char *before = se->direct_error
    ? g_strdup_printf (" (ferry ran it after %s)", se->direct_error)
    : g_strdup ("");

  if (se->command == NULL || se->exit_status == 0 || se->status_to_caller)
    return FERRY_EXIT_OK;
  if (se->exit_status < 0) {
    ferry_error ("remote command '%s' on %s ended without an exit status%s",
                 se->command, name, before);
    return FERRY_EXIT_FAILURE;
  }
  ferry_error ("remote command '%s' on %s exited with status %d%s", se->command,
               name, se->exit_status, before);
  return se->exit_status;
}

static void
channel_endpoint_free (struct endpoint *ep)
{
  struct channel_endpoint *se = (struct channel_endpoint *) ep;

  ferry_ssh_conn_detach (se->conn, &se->client);
  if (se->stderr_line && !se->stderr_discarded) {
    if (se->channel)
      drain_stderr (se, true);
    pass_stderr_lines (se, true);
  }
  if (se->stderr_line)
    g_string_free (se->stderr_line, TRUE);
  if (se->channel) {
    /* libssh keeps a channel freed before the server closed it, and would
     * call its callbacks (here, in @se) for the packets still to come:
     * with other channels on the session (--streams), it reads them. */
    if (se->callbacks.userdata)
      ssh_remove_channel_callbacks (se->channel, &se->callbacks);
    ssh_channel_close (se->channel);
    ssh_channel_free (se->channel);
    ferry_ssh_conn_update (se->conn);
  }
  ferry_ssh_conn_unref (se->conn);
  g_free (se->command);
  g_free (se->exit_signal);
  g_free (se->stderr_label);
  g_free (se->direct_error);
  endpoint_clear_names (ep);
  g_free (se);
}

static const struct endpoint_ops ssh_ops = {
  .readv = channel_endpoint_readv,
  .writev = channel_endpoint_writev,
  .shutdown_write = channel_endpoint_shutdown_write,
  .set_interest = channel_endpoint_set_interest,
  .free = channel_endpoint_free,
  .exit_code = channel_endpoint_exit_code,
  .peer_gone = channel_endpoint_peer_gone,
  .delivering = channel_endpoint_delivering,
  .failure_reported = channel_endpoint_failure_reported,
};

/* One non-blocking libssh request, repeated by ferry_ssh_conn_wait. */
struct open_step {
  struct ferry_ssh_conn *conn;  /* the channel's session (not a reference) */
  ssh_channel channel;
  const struct address_ssh *ssh;
  int tcp_port;
  const char *command;
  gint64 round_trip;          /* microseconds the first step took */
  int exit_status;            /* step_exit_status: the command's */
  bool opened_ahead;          /* a spare (endpoint_ssh_open_spares): the
                                 session channel is open, and its
                                 round_trip measured */
  size_t shares;              /* the spares opened with it, the streams
                                 that share the link; 0 for a channel
                                 opened alone */
};

static int
step_forward_unix (void *data)
{
  struct open_step *p = data;

  return ssh_channel_open_forward_unix (p->channel, p->ssh->path, "127.0.0.1", 0);
}

static int
step_forward_tcp (void *data)
{
  struct open_step *p = data;

  return ssh_channel_open_forward (p->channel, p->ssh->tcp_host, p->tcp_port, "127.0.0.1", 0);
}

static int
step_session (void *data)
{
  struct open_step *p = data;

  return p->opened_ahead ? SSH_OK : ssh_channel_open_session (p->channel);
}

static int
step_exec (void *data)
{
  struct open_step *p = data;

  return ssh_channel_request_exec (p->channel, p->command);
}

/* Until the command has exited: SSH_OK with its status, SSH_ERROR if the
 * channel closed without one. */
static int
step_exit_status (void *data)
{
  struct open_step *p = data;

  if ((p->exit_status = ssh_channel_get_exit_status (p->channel)) >= 0)
    return SSH_OK;
  return ssh_channel_is_closed (p->channel) ? SSH_ERROR : SSH_AGAIN;
}

/* @step on each of @n channels at once: each request goes out on every
 * channel before any answer is awaited, so that n channels open in the
 * round trips of one.  Repeated by ferry_ssh_conn_wait until no channel
 * waits any more; then the first failure, if any. */
struct open_batch {
  struct open_step *p;
  size_t n;
  int (*step) (void *data);
  int *rc;                    /* each channel's answer; SSH_AGAIN while it waits */
};

static int
step_batch (void *data)
{
  struct open_batch *b = data;
  bool waiting = false;

  for (size_t j = 0; j < b->n; j++) {
    if (b->rc[j] == SSH_AGAIN)
      b->rc[j] = b->step (&b->p[j]);
    waiting |= b->rc[j] == SSH_AGAIN;
  }
  if (waiting)
    return SSH_AGAIN;
  for (size_t j = 0; j < b->n; j++)
    if (b->rc[j] != SSH_OK)
      return b->rc[j];
  return SSH_OK;
}

/* Run @steps in turn on @n channels (p[j].channel: new ones on @conn,
 * where a spare was not given; a spare's on its own session), each step on
 * all of them at once.  False with *@why (and *@failed, the first channel
 * that failed) if any failed: then none is left open. */
static bool
open_channels (struct ferry_ssh_conn *conn, struct open_step *p, size_t n,
               int (*const *steps) (void *), size_t n_steps, size_t *failed, char **why)
{
  g_autofree struct ferry_ssh_conn **conns = g_new (struct ferry_ssh_conn *, n);
  g_autofree int *rc = g_new (int, n);
  struct open_batch batch = { p, n, NULL, rc };
  size_t opened = 0;
  int result = SSH_OK;

  for (; opened < n; opened++) {
    if (p[opened].conn == NULL)
      p[opened].conn = conn;
    conns[opened] = p[opened].conn;
    if (p[opened].channel == NULL &&
        (p[opened].channel = ssh_channel_new (ferry_ssh_conn_session (conns[opened]))) == NULL) {
      *failed = opened;
      *why = g_strdup (ssh_get_error (ferry_ssh_conn_session (conns[opened])));
      goto fail;
    }
  }
  for (size_t i = 0; i < n_steps && result == SSH_OK; i++) {
    gint64 start = g_get_monotonic_time ();
    for (size_t j = 0; j < n; j++)
      rc[j] = SSH_AGAIN;
    batch.step = steps[i];
    result = ferry_ssh_conn_wait_many (conns, n, step_batch, &batch, SSH_AGAIN);
    for (size_t j = 0; i == 0 && j < n; j++)
      if (!p[j].opened_ahead)
        p[j].round_trip = g_get_monotonic_time () - start;
  }
  if (result == SSH_OK)
    return true;
  for (*failed = 0; *failed < n - 1 && rc[*failed] == SSH_OK; (*failed)++)
    ;
  *why = g_strdup (result == SSH_AGAIN ? "timed out"
                                       : ssh_get_error (ferry_ssh_conn_session (conns[*failed])));
fail:
  /* NULL again: a caller may try @p once more (proxy=auto's fallback). */
  for (size_t j = 0; j < opened; j++)
    g_clear_pointer (&p[j].channel, ssh_channel_free);
  return false;
}

/* One new channel: @steps in turn; NULL with *@why on failure. */
static ssh_channel
open_channel (struct ferry_ssh_conn *conn, struct open_step *p,
              int (*const *steps) (void *), size_t n_steps, char **why)
{
  size_t failed;

  return open_channels (conn, p, 1, steps, n_steps, &failed, why) ? p->channel : NULL;
}

/* Opening a channel is one request and its answer: a round trip.  The
 * @shares (> 1) channels of one copy's streams split one and a half times
 * one channel's window: more fills sshd's channel buffers beyond what the
 * link takes, which sshd then moves about (memmove was 13% of all CPU),
 * and less leaves the link idle while a stream is between ranges.  1 GiB
 * (25% data) downloaded with 4 streams at 50 ms and 1 Gbit/s, medians of
 * 6-7 interleaved runs per batch: 2.6 s at 3 MiB each, 2.8 s at 4 MiB and
 * at 6 MiB; 3.0 s at 3 MiB, 3.1 s at 2.5 MiB, 3.4 s at 2 MiB; 3.2 s at
 * 3 MiB, 4.1 s (3.3-5.7) at 8 MiB. */
static size_t
receive_window (gint64 round_trip_us, size_t shares)
{
  guint64 one = (guint64) round_trip_us * SSH_WINDOW_RATE / G_USEC_PER_SEC;

  return CLAMP (shares > 1 ? 3 * one / 2 / shares : one, SSH_WINDOW_MIN, SSH_WINDOW_MAX);
}

/* The endpoint of an open @channel on @conn, attached to the session. */
static struct channel_endpoint *
channel_endpoint_new (struct ferry_ssh_conn *conn, const char *name, ssh_channel channel,
                      gint64 round_trip, size_t shares)
{
  struct channel_endpoint *se = g_new0 (struct channel_endpoint, 1);

  se->base.ops = &ssh_ops;
  se->base.name = g_strdup (name);
  se->conn = ferry_ssh_conn_ref (conn);
  se->client.ep = &se->base;
  se->base.read_buffer_min = receive_window (round_trip, shares);
  se->channel = channel;
  se->exit_status = -1;
  ferry_ssh_conn_attach (conn, &se->client, channel);
  return se;
}

static int
tcp_port_number (const char *port)
{
  struct servent *se;

  if (g_ascii_isdigit (port[0]))
    return atoi (port);
  se = getservbyname (port, "tcp");
  return se ? ntohs (se->s_port) : 0;
}

/* The server's refusal of a direct channel to @target ("unix:PATH",
 * "tcp:HOST:PORT"), as one line, and its reason code; NULL if @why
 * (ssh_get_error's) is no refusal but a timeout or the session's end.
 * libssh 0.10 gives SSH_MSG_CHANNEL_OPEN_FAILURE's reason code only in its
 * message, "Channel opening failure: channel N error (CODE) TEXT". */
static char *
refusal (const char *why, const char *kind, const char *target, unsigned *code)
{
  int text = 0;

  if (sscanf (why, "Channel opening failure: channel %*u error (%u) %n", code, &text) < 1 ||
      text == 0)
    return NULL;
  return g_strdup_printf ("the server refused %s to %s: %s (%u)", kind,
                          strchr (target, ':') + 1, why + text, *code);
}

/* Whether a refusal may mean that the server forwards nothing, so that a
 * helper run there may still reach the target.  OpenSSH 9.2 answers a
 * disabled AllowTcpForwarding (or a permitopen that leaves the target out)
 * with ADMINISTRATIVELY_PROHIBITED and a closed port with CONNECT_FAILED,
 * but a disabled AllowStreamLocalForwarding with CONNECT_FAILED, as it
 * answers a missing socket. */
static bool
forwarding_may_be_off (bool streamlocal, unsigned code)
{
  return code == SSH2_OPEN_ADMINISTRATIVELY_PROHIBITED ||
    code == SSH2_OPEN_UNKNOWN_CHANNEL_TYPE ||
    (streamlocal && code == SSH2_OPEN_CONNECT_FAILED);
}

/* proxy=auto's fallback: @p->command on a new channel, once the server
 * has said (on a second channel, opened at once) that it has @helper; the
 * shell's "command not found" would hide the refusal that led here.
 * NULL with *@why ("running ...: ...", "it has no ...") if not. */
static ssh_channel
open_helper (struct ferry_ssh_conn *conn, struct open_step *step, const char *helper,
             const char *quoted, char **why)
{
  static int (*const exec[]) (void *) = { step_session, step_exec };
  g_autofree char *probe = g_strdup_printf ("command -v %s >/dev/null 2>&1", quoted);
  g_autofree char *failed_why = NULL;
  struct open_step p[2] = { *step, *step };
  size_t failed;
  int rc;

  p[0].command = probe;
  if (!open_channels (conn, p, 2, exec, G_N_ELEMENTS (exec), &failed, &failed_why)) {
    *why = g_strdup_printf ("running '%s' there instead: %s", step->command, failed_why);
    return NULL;
  }
  rc = ferry_ssh_conn_wait (conn, step_exit_status, &p[0], SSH_AGAIN);
  ssh_channel_close (p[0].channel);
  ssh_channel_free (p[0].channel);
  step->round_trip = p[1].round_trip;
  if (rc == SSH_OK && p[0].exit_status == 0)
    return p[1].channel;
  ssh_channel_close (p[1].channel);
  ssh_channel_free (p[1].channel);
  *why = rc == SSH_OK ? g_strdup_printf ("it has no '%s' to run instead", helper)
    : g_strdup_printf ("asking it for '%s' to run instead: %s", helper,
                       rc == SSH_AGAIN ? "timed out" : "no exit status");
  return NULL;
}

struct endpoint *
endpoint_ssh_open (struct ferry_ssh_conn *conn, const struct address *a,
                   const struct connect_options *opts, GError **error)
{
  static int (*const direct_unix[]) (void *) = { step_forward_unix };
  static int (*const direct_tcp[]) (void *) = { step_forward_tcp };
  static int (*const exec[]) (void *) = { step_session, step_exec };
  const struct address_ssh *ssh = &a->ssh;
  const char *kind = ssh->path ? "direct-streamlocal" : "direct-tcpip";
  const char *helper = opts->remote_helper ? opts->remote_helper : "ferry";
  g_autofree char *target = address_ssh_target (a);
  g_autofree char *quoted_helper = g_shell_quote (helper);
  g_autofree char *quoted_target = g_shell_quote (target);
  g_autofree char *command = g_strdup_printf ("%s %s", quoted_helper, quoted_target);
  g_autofree char *direct_error = NULL, *refused = NULL, *exec_error = NULL;
  struct open_step step = { .ssh = ssh, .command = command };
  ssh_channel channel = NULL;
  struct channel_endpoint *se;
  bool fallback = false;
  unsigned code;

  if (ssh->tcp_port && (step.tcp_port = tcp_port_number (ssh->tcp_port)) <= 0) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT,
                 "cannot connect to '%s': unknown TCP service '%s'", a->text, ssh->tcp_port);
    return NULL;
  }
  if (ssh->proxy != SSH_PROXY_EXEC) {
    channel = ssh->path ? open_channel (conn, &step, direct_unix, 1, &direct_error)
                        : open_channel (conn, &step, direct_tcp, 1, &direct_error);
    if (channel == NULL && (refused = refusal (direct_error, kind, target, &code)) == NULL)
      refused = g_strdup_printf ("cannot connect to '%s': %s channel: %s",
                                 a->text, kind, direct_error);
    else if (channel == NULL)
      fallback = ssh->proxy == SSH_PROXY_AUTO && forwarding_may_be_off (ssh->path != NULL, code);
  }
  if (channel == NULL && fallback)
    channel = open_helper (conn, &step, helper, quoted_helper, &exec_error);
  else if (channel == NULL && ssh->proxy == SSH_PROXY_EXEC)
    channel = open_channel (conn, &step, exec, G_N_ELEMENTS (exec), &exec_error);
  if (channel == NULL && signal_watch_set_stopped (error, a->text))
    return NULL;
  if (channel == NULL) {
    if (exec_error == NULL)
      g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "%s", refused);
    else if (refused == NULL)
      g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT,
                   "cannot connect to '%s': running '%s': %s", a->text, command, exec_error);
    else
      g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "%s, and %s", refused, exec_error);
    return NULL;
  }

  se = channel_endpoint_new (conn, a->text, channel, step.round_trip, 1);
  if (fallback || ssh->proxy == SSH_PROXY_EXEC)
    se->command = g_steal_pointer (&command);
  if (fallback)
    se->direct_error = g_steal_pointer (&refused);
  return &se->base;
}

/* The only channel callback: data is pulled with ssh_channel_read. */
static void
on_exit_signal (ssh_session session, ssh_channel channel, const char *signal, int core,
                const char *errmsg, const char *lang, void *data)
{
  struct channel_endpoint *se = data;

  g_free (se->exit_signal);
  se->exit_signal = g_strdup (signal);
}

struct endpoint_ssh_spares {
  struct ferry_ssh_conn **conns;  /* a reference on each channel's session:
                                     the channels go first */
  struct open_step *steps;    /* the open session channels */
  size_t n;
  size_t taken;               /* steps[0..taken) are endpoints' now */
};

struct endpoint_ssh_spares *
endpoint_ssh_open_spares (struct ferry_ssh_conn *const *conns, size_t n, GError **error)
{
  static int (*const open[]) (void *) = { step_session };
  struct endpoint_ssh_spares *spares = g_new0 (struct endpoint_ssh_spares, 1);
  g_autofree char *why = NULL;
  size_t failed;

  spares->steps = g_new0 (struct open_step, n);
  for (size_t j = 0; j < n; j++)
    spares->steps[j].conn = conns[j];
  if (!open_channels (conns[0], spares->steps, n, open, G_N_ELEMENTS (open), &failed, &why)) {
    /* A session refusing a channel after others opened on it: sshd's
     * MaxSessions. */
    size_t before = 0;
    for (size_t j = 0; j < failed; j++)
      before += conns[j] == conns[failed];
    bool refused = before > 0 && strstr (why, "open failed") != NULL;
    g_autofree char *hint = refused
      ? g_strdup_printf (" (it opened %zu on the session before; the server's MaxSessions, 10 "
                         "by default in sshd, may be below --streams=%zu)", before, n)
      : g_strdup ("");
    if (!signal_watch_set_stopped (error, ferry_ssh_conn_name (conns[0])))
      g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "%s: cannot open a session channel: "
                   "%s%s", ferry_ssh_conn_name (conns[0]), why, hint);
    g_free (spares->steps);
    g_free (spares);
    return NULL;
  }
  for (size_t j = 0; j < n; j++) {
    spares->steps[j].opened_ahead = true;
    spares->steps[j].shares = n;
  }
  spares->conns = g_new (struct ferry_ssh_conn *, n);
  for (size_t j = 0; j < n; j++)
    spares->conns[j] = ferry_ssh_conn_ref (conns[j]);
  spares->n = n;
  return spares;
}

void
endpoint_ssh_spares_free (struct endpoint_ssh_spares *spares)
{
  if (spares == NULL)
    return;
  for (size_t j = spares->taken; j < spares->n; j++)
    ssh_channel_free (spares->steps[j].channel);
  for (size_t j = 0; j < spares->n; j++)
    ferry_ssh_conn_unref (spares->conns[j]);
  g_free (spares->conns);
  g_free (spares->steps);
  g_free (spares);
}

struct endpoint *
endpoint_ssh_exec_on (struct ferry_ssh_conn *conn, struct endpoint_ssh_spares *spares,
                      const char *command, const char *label, GError **error)
{
  struct endpoint *ep;
  size_t failed;

  return endpoint_ssh_exec_many (conn, spares, 1, &command, &label, &ep, &failed, error)
    ? ep : NULL;
}

bool
endpoint_ssh_exec_many (struct ferry_ssh_conn *conn, struct endpoint_ssh_spares *spares,
                        size_t n, const char *const *commands, const char *const *labels,
                        struct endpoint **endpoints, size_t *failed, GError **error)
{
  static int (*const exec[]) (void *) = { step_session, step_exec };
  g_autofree struct open_step *steps = g_new0 (struct open_step, n);
  g_autofree char *why = NULL;

  for (size_t j = 0; j < n; j++) {
    if (spares && spares->taken < spares->n)
      steps[j] = spares->steps[spares->taken++];
    steps[j].command = commands[j];
  }
  if (!open_channels (conn, steps, n, exec, G_N_ELEMENTS (exec), failed, &why)) {
    if (!signal_watch_set_stopped (error, ferry_ssh_conn_name (conn)))
      g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "%s: cannot run '%s': %s",
                   ferry_ssh_conn_name (conn), commands[*failed], why);
    return false;
  }
  for (size_t j = 0; j < n; j++) {
    struct channel_endpoint *se = channel_endpoint_new (steps[j].conn,
                                                        ferry_ssh_conn_name (steps[j].conn),
                                                        steps[j].channel, steps[j].round_trip,
                                                        steps[j].shares);
    se->command = g_strdup (commands[j]);
    se->status_to_caller = true;
    se->stderr_line = g_string_new (NULL);
    se->stderr_label = g_strdup (labels[j]);
    se->callbacks.userdata = se;
    se->callbacks.channel_exit_signal_function = on_exit_signal;
    ssh_callbacks_init (&se->callbacks);
    ssh_set_channel_callbacks (steps[j].channel, &se->callbacks);
    endpoints[j] = &se->base;
  }
  return true;
}

void
endpoint_ssh_discard_stderr (struct endpoint *ep)
{
  g_return_if_fail (ep->ops == &ssh_ops);
  ((struct channel_endpoint *) ep)->stderr_discarded = true;
}

const char *
endpoint_ssh_exit_signal (struct endpoint *ep)
{
  g_return_val_if_fail (ep->ops == &ssh_ops, NULL);
  return ((struct channel_endpoint *) ep)->exit_signal;
}

const char *
endpoint_ssh_link_failure (struct endpoint *ep)
{
  g_return_val_if_fail (ep->ops == &ssh_ops, NULL);
  return ferry_ssh_conn_failure (((struct channel_endpoint *) ep)->conn);
}

bool
endpoint_ssh_signal (struct endpoint *ep, const char *name)
{
  struct channel_endpoint *se = (struct channel_endpoint *) ep;
  bool sent;

  g_return_val_if_fail (ep->ops == &ssh_ops, false);
  if (ferry_ssh_conn_is_dead (se->conn) || ssh_channel_is_closed (se->channel))
    return false;
  sent = ssh_channel_request_send_signal (se->channel, name) == SSH_OK;
  ferry_ssh_conn_update (se->conn);
  return sent;
}

int
endpoint_ssh_exit_status (struct endpoint *ep)
{
  struct channel_endpoint *se = (struct channel_endpoint *) ep;

  g_return_val_if_fail (ep->ops == &ssh_ops, -1);
  if (se->exit_status < 0)
    se->exit_status = ssh_channel_get_exit_status (se->channel);
  return se->exit_status;
}

struct endpoint *
ferry_ssh_connect_address (const struct address *a, const struct connect_options *opts,
                     GError **error)
{
  g_autoptr (FerrySshConn) conn = ferry_ssh_conn_new (a, opts, error);

  return conn ? endpoint_ssh_open (conn, a, opts, error) : NULL;
}
