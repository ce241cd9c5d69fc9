/* ferry: connecting to UNIX and TCP addresses, and adopting inherited fds.
 *
 * Connecting happens before a relay starts, so it may block, bounded by
 * the connect timeout. */
#include <config.h>

#include "connect.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "endpoint-fd.h"
#include "endpoint-ssh.h"
#include "error.h"
#include "proxy.h"
#include "signal-watch.h"
#include "ssh-session.h"

static void
set_connect_error (GError **error, const struct address *a, const char *reason)
{
  g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT,
               "cannot connect to '%s': %s", address_display_name (a), reason);
}

static struct endpoint *
connect_unix (const struct address *a, const struct connect_options *opts,
              GError **error)
{
  struct sockaddr_un sun;
  socklen_t len = address_unix_sockaddr (a, &sun);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

  if (fd < 0) {
    set_connect_error (error, a, g_strerror (errno));
    return NULL;
  }
  /* Blocking connect: a non-blocking one fails at once with EAGAIN when
   * the listener's backlog is full.  SO_SNDTIMEO bounds the wait. */
  if (opts->timeout > 0) {
    struct timeval tv = { .tv_sec = opts->timeout };
    setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  while (connect (fd, (struct sockaddr *) &sun, len) < 0) {
    if (errno == EINTR && !signal_watch_stop_pending ())
      continue;
    int err = errno == EAGAIN || errno == EINPROGRESS ? ETIMEDOUT : errno;
    close (fd);
    /* Stopped only if the signal cut the wait: a forwarder's worker may
     * fail on its own after the main loop took the signal. */
    if (!(err == EINTR && signal_watch_set_stopped (error, address_display_name (a))))
      set_connect_error (error, a, g_strerror (err));
    return NULL;
  }
  if (opts->timeout > 0) {
    struct timeval none = { 0 };
    setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
  }
  socket_setup (fd, opts);
  return endpoint_socket_new (fd, address_display_name (a));
}

/* Connect one resolved address, waiting at most @timeout_ms (-1: forever).
 * Returns the fd, or -1 with errno set. */
static int
connect_tcp_one (const struct addrinfo *ai, const struct connect_options *opts,
                 int timeout_ms)
{
  int fd = socket (ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                   ai->ai_protocol);
  gint64 deadline = timeout_ms < 0 ? -1 : g_get_monotonic_time () + timeout_ms * G_GINT64_CONSTANT (1000);
  int err = 0;
  socklen_t errlen = sizeof err;

  if (fd < 0)
    return -1;
  /* Before connect, so TCP's window scale can reflect SO_RCVBUF. */
  socket_setup (fd, opts);
  if (connect (fd, ai->ai_addr, ai->ai_addrlen) == 0)
    return fd;
  if (errno != EINPROGRESS) {
    err = errno;
    goto fail;
  }
  /* A stop gives up the wait (EINTR), a forwarder's worker's too. */
  switch (signal_watch_poll (fd, POLLOUT, deadline)) {
  case 0:
    err = ETIMEDOUT;
    goto fail;
  case -1:
    err = errno;
    goto fail;
  }
  if (getsockopt (fd, SOL_SOCKET, SO_ERROR, &err, &errlen) < 0)
    err = errno;
  if (err == 0)
    return fd;
fail:
  close (fd);
  errno = err;
  return -1;
}

/* Connect to @host @port, every resolved address in order, as nc does;
 * the last error stands, or EINTR for a stop signal that cut the wait or
 * skips the rest.  @what names the peer in messages ("'ADDRESS'", "proxy
 * HOST:PORT"), @stop_name in a stop's. */
static int
connect_tcp_direct (const char *host, const char *port, const struct connect_options *opts,
                    const char *what, const char *stop_name, GError **error)
{
  struct addrinfo hints = {
    .ai_family = opts->family,
    .ai_socktype = SOCK_STREAM,
    .ai_flags = AI_ADDRCONFIG,
  };
  struct addrinfo *list = NULL;
  int timeout_ms = connect_timeout_ms (opts);
  int fd = -1, err = 0;
  int r = getaddrinfo (host, port, &hints, &list);

  if (r != 0) {
    ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot connect to %s: %s", what,
                     r == EAI_SYSTEM ? g_strerror (errno) : gai_strerror (r));
    return -1;
  }
  for (struct addrinfo *ai = list; ai && fd < 0; ai = ai->ai_next) {
    if (signal_watch_stop_pending ()) {
      err = EINTR;
      break;
    }
    fd = connect_tcp_one (ai, opts, timeout_ms);
    if (fd < 0)
      err = errno;
  }
  freeaddrinfo (list);
  if (fd < 0 && !(err == EINTR && signal_watch_set_stopped (error, stop_name)))
    ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot connect to %s: %s", what,
                     g_strerror (err));
  return fd;
}

int
connect_tcp_fd (const char *host, const char *port, const char *name,
                const struct connect_options *opts, GError **error)
{
  const struct proxy *proxy = opts->proxy;
  g_autofree char *what = NULL;
  int fd;

  if (proxy == NULL) {
    what = g_strdup_printf ("'%s'", name);
    return connect_tcp_direct (host, port, opts, what, name, error);
  }
  what = g_strdup_printf ("proxy %s", proxy->name);
  fd = connect_tcp_direct (proxy->host, proxy->port, opts, what, name, error);
  if (fd >= 0 && !proxy_handshake (proxy, fd, host, port, connect_timeout_ms (opts), error)) {
    close (fd);
    return -1;
  }
  return fd;
}

static struct endpoint *
connect_tcp (const struct address *a, const struct connect_options *opts,
             GError **error)
{
  int fd = connect_tcp_fd (a->host, a->port, address_display_name (a), opts, error);

  return fd < 0 ? NULL : endpoint_socket_new (fd, a->text);
}

static struct endpoint *
adopt_fd (const struct address *a, const struct connect_options *opts,
          GError **error)
{
  int type;
  socklen_t len = sizeof type;

  if (getsockopt (a->fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) {
    set_connect_error (error, a, errno == ENOTSOCK ? "not a socket" : g_strerror (errno));
    return NULL;
  }
  if (type != SOCK_STREAM) {
    set_connect_error (error, a, "not a stream socket");
    return NULL;
  }
  socket_setup (a->fd, opts);
  return endpoint_socket_new (a->fd, a->text);
}

struct endpoint *
connect_address (const struct address *a, const struct connect_options *opts,
                 GError **error)
{
  switch (a->kind) {
  case ADDRESS_UNIX:
    return connect_unix (a, opts, error);
  case ADDRESS_TCP:
    return connect_tcp (a, opts, error);
  case ADDRESS_FD:
    return adopt_fd (a, opts, error);
  case ADDRESS_SSH:
    return ferry_ssh_connect_address (a, opts, error);
  }
  g_assert_not_reached ();
}

struct dialer {
  const struct address *address;
  const struct connect_options *options;
  struct ferry_ssh_conn *ssh;       /* ssh://: the shared session; NULL after a failed reconnect */
};

struct dialer *
dialer_new (const struct address *a, const struct connect_options *opts, GError **error)
{
  struct dialer *d = g_new0 (struct dialer, 1);

  d->address = a;
  d->options = opts;
  if (a->kind == ADDRESS_SSH && (d->ssh = ferry_ssh_conn_new (a, opts, error)) == NULL) {
    g_free (d);
    return NULL;
  }
  return d;
}

struct endpoint *
dialer_connect (struct dialer *d, GError **error)
{
  if (d->address->kind != ADDRESS_SSH)
    return connect_address (d->address, d->options, error);
  if (d->ssh == NULL || ferry_ssh_conn_is_dead (d->ssh)) {
    g_clear_pointer (&d->ssh, ferry_ssh_conn_unref);
    d->ssh = ferry_ssh_conn_new (d->address, d->options, error);
    if (d->ssh == NULL)
      return NULL;
  }
  return endpoint_ssh_open (d->ssh, d->address, d->options, error);
}

bool
dialer_is_thread_safe (const struct dialer *d)
{
  return d->address->kind != ADDRESS_SSH;
}

void
dialer_free (struct dialer *d)
{
  if (d == NULL)
    return;
  ferry_ssh_conn_unref (d->ssh);
  g_free (d);
}
