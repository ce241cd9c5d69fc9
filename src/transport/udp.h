/* ferry: UDP sockets for nc -u: one connected to HOST PORT, or one bound
 * (the datagram relay connects it to the first datagram's sender). */
#ifndef FERRY_UDP_H
#define FERRY_UDP_H

#include <glib.h>

/* A UDP socket connected to @host @port (@family: AF_UNSPEC, AF_INET or
 * AF_INET6), or -1 with a FERRY_EXIT_CONNECT error ("cannot connect to
 * udp 'HOST:PORT': REASON"). */
int udp_connect (const char *host, const char *port, int family, GError **error);

/* A UDP socket bound to @host @port, or -1 with a FERRY_EXIT_CONNECT
 * error ("cannot listen on udp 'HOST:PORT': REASON"). */
int udp_bind (const char *host, const char *port, int family, GError **error);

#endif
