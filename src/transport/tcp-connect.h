/* ferry: TCP connections, direct or through --proxy. */
#ifndef FERRY_TCP_CONNECT_H
#define FERRY_TCP_CONNECT_H

#include <glib.h>
#include <netdb.h>

#include "socket-options.h"

/* A TCP connection to @host @port (every resolved address in turn, as nc
 * does), through @options' proxy if there is one: the connected socket,
 * non-blocking, with socket_setup's options, or -1 with a
 * FERRY_EXIT_CONNECT error naming @name ("cannot connect to 'NAME':
 * REASON"), or the proxy and its answer, or a stop signal's. */
int tcp_connect (const char *host, const char *port, const char *name,
                 const struct connect_options *options, GError **error);

/* Connect a TCP socket to one resolved address, with @options' socket
 * options, source address (nc's -s/-p) and timeout (nc -z reports each
 * address).  Returns the non-blocking fd, or -1 with errno set (ETIMEDOUT
 * when the timeout passed). */
int connect_tcp_addrinfo (const struct addrinfo *ai, const struct connect_options *options);

#endif
