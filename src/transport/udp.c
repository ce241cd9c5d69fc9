/* ferry: UDP sockets for nc -u, before its datagram relay starts. */
#include <config.h>

#include "udp.h"

#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "error.h"
#include "message.h"

/* Resolve, and take the first address that connects, or binds if @passive. */
static int
udp_open (const char *host, const char *port, int family, bool passive, GError **error)
{
  struct addrinfo hints = {
    .ai_family = family,
    .ai_socktype = SOCK_DGRAM,
    .ai_protocol = IPPROTO_UDP,
    .ai_flags = passive ? AI_PASSIVE : 0,
  };
  struct addrinfo *res, *ai;
  g_autofree char *name = ferry_host_port (host, port);
  const char *what = passive ? "listen on" : "connect to";
  int fd = -1, err = 0, rc, one = 1;

  if ((rc = getaddrinfo (host, port, &hints, &res)) != 0) {
    ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot %s udp '%s': %s", what, name,
                     rc == EAI_SYSTEM ? g_strerror (errno) : gai_strerror (rc));
    return -1;
  }
  for (ai = res; ai && fd < 0; ai = ai->ai_next) {
    fd = socket (ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    if (passive)
      setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if ((passive ? bind (fd, ai->ai_addr, ai->ai_addrlen)
                 : connect (fd, ai->ai_addr, ai->ai_addrlen)) < 0) {
      err = errno;
      close (fd);
      fd = -1;
    }
  }
  freeaddrinfo (res);
  if (fd < 0)
    ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot %s udp '%s': %s", what, name,
                     g_strerror (err));
  return fd;
}

int
udp_connect (const char *host, const char *port, int family, GError **error)
{
  return udp_open (host, port, family, false, error);
}

int
udp_bind (const char *host, const char *port, int family, GError **error)
{
  return udp_open (host, port, family, true, error);
}
