/* ferry: nc -u, the nc personality's UDP: a socket connected to HOST PORT,
 * or with -l bound and connected to the first datagram's sender (with -k
 * not connected: datagrams from anyone), then the datagram relay
 * (datagram.h has its end-of-stream rules, netcat-openbsd 1.219's).
 * Differences from netcat, on purpose (ferry(1), nc):
 *  - a datagram received is written whole; netcat cuts one at 16 KiB.
 *  - a refused datagram is one line and exit 1; netcat exits 0 silently.
 *  - with -q, datagrams that come before the deadline are still written;
 *    netcat stops reading at stdin's EOF.
 *  - -l -k leaves stdin unread, where netcat reads it and drops it.
 *  - -v sends no probe datagrams (netcat's sends five "X" over 3 s) and
 *    prints the counts at the end.
 *  - a stop signal delivers what was read and exits 0. */
#include <config.h>

#include "compat.h"

#include <unistd.h>

#include "address.h"
#include "datagram.h"
#include "error.h"
#include "message.h"
#include "udp.h"

/* netcat's read size: each read of stdin is one datagram, as netcat's. */
#define NC_UDP_READ 16384

int
compat_nc_udp (const struct ferry_options *options, const char *host, const char *port,
               int quit_seconds, bool read_stdin)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *peer = ferry_host_port (host, port);
  g_autofree char *name = g_strdup_printf ("udp '%s'", peer);
  struct datagram_config config = {
    .name = name,
    .connect_first = options->listen && !options->keep_listening,
    .max_read = NC_UDP_READ,
    /* -k: no single peer to send to; stdin is left unread, so nothing of
     * it is lost (netcat reads it and drops it). */
    .read_stdin = read_stdin && !options->keep_listening,
    .net_eof_ends = options->listen,
    .endless = options->keep_listening,
    .eof_wait = quit_seconds,
    .idle_timeout = options->relay.idle_timeout,
    .verbose = options->relay.verbose,
  };
  int fd, rc;

  if (!address_is_host_port (host, port)) {
    ferry_error ("invalid address %s: not a host name or an IP address", name);
    return FERRY_EXIT_USAGE;
  }
  fd = options->listen ? udp_bind (host, port, options->connect.family, &error)
                       : udp_connect (host, port, options->connect.family, &error);
  if (fd < 0) {
    ferry_error ("%s", error->message);
    return error->code;
  }
  rc = datagram_relay (fd, &config);
  close (fd);
  return rc;
}
