/* ferry: connecting to UNIX and TCP addresses (tcp-connect.c), and adopting
 * inherited fds.
 *
 * Connecting happens before a relay starts, so it may block, bounded by
 * the connect timeout. */
#include <config.h>

#include "connect.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "endpoint-fd.h"
#include "endpoint-ssh.h"
#include "error.h"
#include "signal-watch.h"
#include "ssh-session.h"
#include "tcp-connect.h"

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

static struct endpoint *
connect_tcp (const struct address *a, const struct connect_options *opts,
             GError **error)
{
  int fd = tcp_connect (a->host, a->port, address_display_name (a), opts, error);

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
