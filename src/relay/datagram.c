/* ferry: the datagram relay of nc -u (datagram.h): one poll loop over
 * stdin, the socket, stdout and the stop signals (signal-watch.h). */
#include <config.h>

#include "datagram.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib.h>

#include "exit-codes.h"
#include "message.h"
#include "signal-watch.h"

struct dgram {
  const struct datagram_config *config;
  int fd;                     /* the UDP socket */
  char *name;                 /* the peer, for messages */
  bool waiting;               /* connect_first: no datagram came yet */
  unsigned char *up;          /* the datagram read from stdin, not sent yet */
  size_t up_len;              /* its size; 0: none */
  unsigned char *down;        /* the datagram received, not all written yet */
  size_t down_len;            /* its size; 0: none */
  size_t down_off;            /* how much of it is written */
  bool stdin_open;            /* stdin is read */
  bool net_open;              /* the socket is read: no EOF, no error yet */
  bool ending;                /* nothing more is read: deliver what was, then end */
  gint64 eof_at;              /* monotonic time of stdin's EOF; -1 before */
  gint64 last;                /* monotonic time of the last datagram either way */
  guint64 sent, sent_bytes;   /* datagrams and bytes up */
  guint64 received, received_bytes;  /* and down */
  int exit_code;
};

static void
dg_stop_reading (struct dgram *d)
{
  d->ending = true;
  d->stdin_open = false;
  d->net_open = false;
}

/* One line, with what read from stdin will not be sent; the end. */
static void
dg_fail_net (struct dgram *d, const char *doing, int err)
{
  if (d->up_len > 0)
    ferry_error ("cannot %s %s: %s (%zu bytes read from stdin not sent)", doing,
                 d->name, g_strerror (err), d->up_len);
  else
    ferry_error ("cannot %s %s: %s", doing, d->name, g_strerror (err));
  d->up_len = 0;
  d->exit_code = FERRY_EXIT_IO;
  dg_stop_reading (d);
}

/* A refusal concerns a datagram sent before, whichever call returns it. */
static void
dg_net_error (struct dgram *d, const char *doing, int err)
{
  dg_fail_net (d, err == ECONNREFUSED ? "send to" : doing, err);
}

/* nc -l: the first datagram's sender is the peer; the datagram stays
 * queued (MSG_PEEK) for dg_receive to read whole. */
static void
dg_connect_first (struct dgram *d)
{
  struct sockaddr_storage from;
  socklen_t len = sizeof from;
  char host[NI_MAXHOST], port[NI_MAXSERV];
  g_autofree char *peer = NULL;
  char byte;

  if (recvfrom (d->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT, (struct sockaddr *) &from, &len) < 0) {
    if (errno != EINTR && errno != EAGAIN)
      dg_fail_net (d, "receive on", errno);
    return;
  }
  if (getnameinfo ((struct sockaddr *) &from, len, host, sizeof host, port, sizeof port,
                   NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    g_strlcpy (host, "?", sizeof host);
    g_strlcpy (port, "?", sizeof port);
  }
  g_free (d->name);
  peer = ferry_host_port (host, port);
  d->name = g_strdup_printf ("udp '%s'", peer);
  if (connect (d->fd, (struct sockaddr *) &from, len) < 0) {
    dg_fail_net (d, "connect to", errno);
    return;
  }
  d->waiting = false;
  d->stdin_open = d->config->read_stdin;
  if (d->config->verbose)
    ferry_report ("connection received from %s", d->name);
}

static void
dg_read_stdin (struct dgram *d)
{
  ssize_t n = read (STDIN_FILENO, d->up, d->config->max_read);

  if (n > 0) {
    d->up_len = n;
  } else if (n == 0) {
    d->stdin_open = false;
    d->eof_at = g_get_monotonic_time ();
  } else if (errno != EINTR && errno != EAGAIN) {
    ferry_error ("cannot read stdin: %s", g_strerror (errno));
    d->exit_code = FERRY_EXIT_IO;
    dg_stop_reading (d);
  }
}

static void
dg_send (struct dgram *d)
{
  ssize_t n = send (d->fd, d->up, d->up_len, MSG_DONTWAIT);

  if (n >= 0) {
    d->sent++;
    d->sent_bytes += d->up_len;
    d->up_len = 0;
    d->last = g_get_monotonic_time ();
  } else if (errno != EINTR && errno != EAGAIN && errno != ENOBUFS) {
    dg_net_error (d, "send to", errno);
  }
}

static void
dg_receive (struct dgram *d)
{
  ssize_t n = recv (d->fd, d->down, DATAGRAM_MAX, MSG_DONTWAIT);

  if (n > 0) {
    d->down_len = n;
    d->down_off = 0;
    d->received++;
    d->received_bytes += n;
    d->last = g_get_monotonic_time ();
  } else if (n == 0) {
    /* An empty datagram: netcat's EOF. */
    d->net_open = d->config->endless;
  } else if (errno != EINTR && errno != EAGAIN) {
    dg_net_error (d, "receive from", errno);
  }
}

static void
dg_write (struct dgram *d)
{
  ssize_t n = write (STDOUT_FILENO, d->down + d->down_off, d->down_len - d->down_off);

  if (n >= 0) {
    d->down_off += n;
    if (d->down_off == d->down_len)
      d->down_len = 0;
  } else if (errno != EINTR && errno != EAGAIN) {
    ferry_error ("cannot write to stdout: %s (%zu bytes of a datagram not delivered)",
                 g_strerror (errno), d->down_len - d->down_off);
    d->down_len = 0;
    d->exit_code = FERRY_EXIT_IO;
    dg_stop_reading (d);
  }
}

/* An error queued on the socket (POLLERR): an ICMP error, as a refusal. */
static void
dg_socket_error (struct dgram *d)
{
  int err = 0;
  socklen_t len = sizeof err;

  if (getsockopt (d->fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0)
    dg_net_error (d, "receive from", err);
}

/* When -q or -w ends the relay; -1: not yet known. */
static gint64
dg_deadline (const struct dgram *d)
{
  const struct datagram_config *c = d->config;
  gint64 end = -1;

  if (d->eof_at < 0 || d->up_len > 0)
    return -1;
  if (c->eof_wait >= 0)
    end = d->eof_at + c->eof_wait * G_USEC_PER_SEC;
  if (c->idle_timeout > 0) {
    gint64 idle = MAX (d->eof_at, d->last + c->idle_timeout * G_USEC_PER_SEC);
    end = end < 0 ? idle : MIN (end, idle);
  }
  return end;
}

static int
dg_poll_timeout (const struct dgram *d)
{
  gint64 end = dg_deadline (d);

  if (d->ending || end < 0)
    return -1;
  return (int) MIN (G_MAXINT, MAX (0, (end - g_get_monotonic_time () + 999) / 1000));
}

static void
dg_check_end (struct dgram *d)
{
  gint64 end = dg_deadline (d);

  if (d->ending)
    return;
  if ((end >= 0 && g_get_monotonic_time () >= end) ||
      (!d->net_open && d->up_len == 0 && (d->config->net_eof_ends || !d->stdin_open)))
    dg_stop_reading (d);
}

/* A stop signal (SIGUSR1 is none): what was read is delivered, then the end. */
static void
on_signal (int signum, void *data)
{
  if (signum != SIGUSR1)
    dg_stop_reading (data);
}

int
datagram_relay (int fd, const struct datagram_config *config)
{
  g_autofree unsigned char *up = g_malloc (DATAGRAM_MAX);
  g_autofree unsigned char *down = g_malloc (DATAGRAM_MAX);
  struct dgram d = {
    .config = config, .fd = fd, .name = g_strdup (config->name),
    .waiting = config->connect_first, .up = up, .down = down,
    /* Waiting, stdin is not read: as netcat's, it goes to the peer. */
    .stdin_open = config->read_stdin && !config->connect_first, .net_open = true,
    .eof_at = -1, .last = g_get_monotonic_time (),
  };
  struct signal_watch *signals = signal_watch_new (on_signal, &d);

  /* A reader gone must be an EPIPE to report, not a silent death. */
  signal (SIGPIPE, SIG_IGN);
  while (!(d.ending && d.up_len == 0 && d.down_len == 0)) {
    struct pollfd p[] = {
      { .fd = d.stdin_open && d.up_len == 0 ? STDIN_FILENO : -1, .events = POLLIN },
      { .fd = fd, .events = (d.net_open && d.down_len == 0 ? POLLIN : 0) |
                            (d.up_len > 0 ? POLLOUT : 0) },
      { .fd = d.down_len > 0 ? STDOUT_FILENO : -1, .events = POLLOUT },
      { .fd = signal_watch_fd (signals), .events = POLLIN },
    };

    if (poll (p, G_N_ELEMENTS (p), dg_poll_timeout (&d)) < 0) {
      if (errno == EINTR)
        continue;
      ferry_error ("cannot poll: %s", g_strerror (errno));
      d.exit_code = FERRY_EXIT_IO;
      break;
    }
    if (p[3].revents)
      signal_watch_dispatch (signals);
    if (p[0].revents)
      dg_read_stdin (&d);
    if (p[1].revents & POLLERR)
      dg_socket_error (&d);
    if (d.up_len > 0 && ((p[1].revents & POLLOUT) || p[0].revents))
      dg_send (&d);
    if (d.waiting && p[1].revents & POLLIN)
      dg_connect_first (&d);
    if (!d.waiting && d.net_open && d.down_len == 0 && p[1].revents & POLLIN)
      dg_receive (&d);
    if (d.down_len > 0)
      dg_write (&d);
    dg_check_end (&d);
  }
  if (config->verbose)
    ferry_report ("%s: sent %" G_GUINT64_FORMAT " datagrams (%" G_GUINT64_FORMAT
                  " bytes), received %" G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT " bytes)",
                  d.name, d.sent, d.sent_bytes, d.received, d.received_bytes);
  signal_watch_free (signals);
  g_free (d.name);
  return d.exit_code;
}
