/* ferry: TCP connections, direct or through --proxy (proxy.c), for a TCP
 * address (connect.c) and an ssh:// session (ssh-session.c).  Blocking,
 * bounded by the connect timeout: it happens before a relay starts. */
#include <config.h>

#include "tcp-connect.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "error.h"
#include "proxy.h"
#include "signal-watch.h"

/* nc -s / -p: bind @fd, of @family, to the local address asked for.
 * Returns false with errno set. */
static bool
bind_source (int fd, int family, const struct connect_options *opts)
{
  struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_STREAM,
                            .ai_flags = AI_PASSIVE };
  struct addrinfo *list = NULL;
  int r;

  if (opts->bind_host == NULL && opts->bind_port == NULL)
    return true;
  if ((r = getaddrinfo (opts->bind_host, opts->bind_port, &hints, &list)) != 0) {
    errno = r == EAI_SYSTEM ? errno : EADDRNOTAVAIL;
    return false;
  }
  r = bind (fd, list->ai_addr, list->ai_addrlen);
  freeaddrinfo (list);
  return r == 0;
}

int
connect_tcp_addrinfo (const struct addrinfo *ai, const struct connect_options *opts)
{
  int timeout_ms = connect_timeout_ms (opts);
  int fd = socket (ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                   ai->ai_protocol);
  gint64 deadline = timeout_ms < 0 ? -1 : g_get_monotonic_time () + timeout_ms * G_GINT64_CONSTANT (1000);
  int err = 0;
  socklen_t errlen = sizeof err;

  if (fd < 0)
    return -1;
  /* Before connect, so TCP's window scale can reflect SO_RCVBUF. */
  socket_setup (fd, opts);
  if (!bind_source (fd, ai->ai_family, opts)) {
    err = errno;
    goto fail;
  }
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
  struct addrinfo numeric = hints, *list = NULL;
  int fd = -1, err = 0, r;

  /* A numeric address is taken as it is: AI_ADDRCONFIG would drop ::1
   * where loopback is the host's only IPv6 address. */
  numeric.ai_flags = AI_NUMERICHOST;
  r = getaddrinfo (host, port, &numeric, &list);
  if (r == EAI_NONAME)
    r = getaddrinfo (host, port, &hints, &list);

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
    fd = connect_tcp_addrinfo (ai, opts);
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
tcp_connect (const char *host, const char *port, const char *name,
             const struct connect_options *opts, GError **error)
{
  struct proxy *proxy = opts->proxy;
  g_autofree char *what = NULL;
  enum proxy_result result = PROXY_RETRY;
  int fd = -1;

  if (proxy == NULL) {
    what = g_strdup_printf ("'%s'", name);
    return connect_tcp_direct (host, port, opts, what, name, error);
  }
  what = g_strdup_printf ("proxy %s", proxy->name);
  while (result == PROXY_RETRY) {
    if (fd >= 0)
      close (fd);
    fd = connect_tcp_direct (proxy->host, proxy->port, opts, what, name, error);
    if (fd < 0)
      return -1;
    result = proxy_handshake (proxy, fd, host, port, name, connect_timeout_ms (opts), error);
  }
  if (result == PROXY_FAILED) {
    close (fd);
    return -1;
  }
  return fd;
}
