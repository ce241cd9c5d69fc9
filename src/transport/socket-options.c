/* ferry: every option of a socket ferry relays on, in one place (see
 * socket-options.h). */
#include <config.h>

#include "socket-options.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <glib-unix.h>

static void
set_int_option (int fd, int level, int name, int value)
{
  /* A refusal is not an error: the kernel's setting stands. */
  setsockopt (fd, level, name, &value, sizeof value);
}

void
socket_setup (int fd, const struct connect_options *opts)
{
  struct sockaddr_storage addr;
  socklen_t len = sizeof addr;
  int family = getsockname (fd, (struct sockaddr *) &addr, &len) == 0 ? addr.ss_family
                                                                      : AF_UNSPEC;
  bool tcp = family == AF_INET || family == AF_INET6;
  bool v4 = family == AF_INET;

  fcntl (fd, F_SETFD, FD_CLOEXEC);
  g_unix_set_fd_nonblocking (fd, TRUE, NULL);
  if (opts->sndbuf > 0)
    set_int_option (fd, SOL_SOCKET, SO_SNDBUF, (int) opts->sndbuf);
  else if (opts->unix_sndbuf > 0 && family == AF_UNIX)
    set_int_option (fd, SOL_SOCKET, SO_SNDBUF, (int) MIN (opts->unix_sndbuf, G_MAXINT / 2));
  if (opts->rcvbuf > 0)
    set_int_option (fd, SOL_SOCKET, SO_RCVBUF, (int) opts->rcvbuf);
  if (opts->so_debug)
    set_int_option (fd, SOL_SOCKET, SO_DEBUG, 1);
  if (opts->broadcast)
    set_int_option (fd, SOL_SOCKET, SO_BROADCAST, 1);
  if (!tcp)
    return;
  if (opts->tos != 0)
    set_int_option (fd, v4 ? IPPROTO_IP : IPPROTO_IPV6, v4 ? IP_TOS : IPV6_TCLASS, opts->tos);
  if (opts->ttl != 0)
    set_int_option (fd, v4 ? IPPROTO_IP : IPPROTO_IPV6, v4 ? IP_TTL : IPV6_UNICAST_HOPS,
                    opts->ttl);
  if (opts->min_ttl != 0)
    set_int_option (fd, v4 ? IPPROTO_IP : IPPROTO_IPV6, v4 ? IP_MINTTL : IPV6_MINHOPCOUNT,
                    opts->min_ttl);
  /* Small writes (NBD headers, RPC calls) must not wait for an ACK. */
  set_int_option (fd, IPPROTO_TCP, TCP_NODELAY, 1);
  if (opts->keepalive > 0) {
    set_int_option (fd, SOL_SOCKET, SO_KEEPALIVE, 1);
    set_int_option (fd, IPPROTO_TCP, TCP_KEEPIDLE, (int) opts->keepalive);
    set_int_option (fd, IPPROTO_TCP, TCP_KEEPINTVL, (int) opts->keepalive);
    set_int_option (fd, IPPROTO_TCP, TCP_KEEPCNT, FERRY_KEEPALIVE_PROBES);
  }
}

int
connect_timeout_ms (const struct connect_options *opts)
{
  if (opts->timeout == 0)
    return -1;
  return (int) MIN ((guint64) opts->timeout * 1000, (guint64) G_MAXINT);
}
