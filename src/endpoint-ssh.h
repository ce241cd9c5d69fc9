/* ferry: an ssh channel as a relay endpoint. */
#ifndef FERRY_ENDPOINT_SSH_H
#define FERRY_ENDPOINT_SSH_H

#include <glib.h>

#include "address.h"
#include "connect.h"
#include "endpoint.h"

struct ferry_ssh_conn;

/* Open a channel on @conn to @address's remote target, the way its proxy=
 * says: a direct-streamlocal or direct-tcpip channel, or (exec) the remote
 * helper run as "HELPER unix:PATH".  auto tries direct, then exec, and
 * reports both failures.  The endpoint holds a reference on @conn.
 * Blocks for the exchange, bounded by the connect timeout. */
struct endpoint *endpoint_ssh_open (struct ferry_ssh_conn *conn, const struct address *address,
                                    const struct connect_options *options,
                                    GError **error);

/* A new session to @address's host (an ssh:// session address), and
 * @command (quoted for the remote shell already) run on it over an exec
 * channel, for the remote stream mode: each line of its
 * stderr becomes ferry's, as "ferry: USER@HOST:PORT: MESSAGE"; its exit
 * status is left to the caller (endpoint_ssh_exit_status), and the
 * endpoint's exit_code reports nothing.  Errors: ferry_ssh_conn_new's,
 * or FERRY_EXIT_CONNECT. */
struct endpoint *endpoint_ssh_exec (const struct address *address,
                                    const struct connect_options *options,
                                    const char *command, GError **error);
/* An exec channel's remote exit status, or -1 while it is not known (or
 * the channel closed without one). */
int endpoint_ssh_exit_status (struct endpoint *ep);

/* A new session to @address's host, and one channel on it. */
struct endpoint *ferry_ssh_connect_address (const struct address *address,
                                      const struct connect_options *options,
                                      GError **error);

#endif
