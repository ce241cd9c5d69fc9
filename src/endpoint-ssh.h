/* ferry: an ssh channel as a relay endpoint. */
#ifndef FERRY_ENDPOINT_SSH_H
#define FERRY_ENDPOINT_SSH_H

#include <glib.h>

#include "address.h"
#include "connect.h"
#include "endpoint.h"
#include "ssh-session.h"

/* Open a channel on @conn to @address's remote target, the way its proxy=
 * says: a direct-streamlocal or direct-tcpip channel, or (exec) the remote
 * helper run as "HELPER unix:PATH".  auto tries direct, then exec, and
 * reports both failures.  The endpoint holds a reference on @conn.
 * Blocks for the exchange, bounded by the connect timeout. */
struct endpoint *endpoint_ssh_open (struct ferry_ssh_conn *conn, const struct address *address,
                                    const struct connect_options *options,
                                    GError **error);

/* A new session to @address's host, and one channel on it. */
struct endpoint *ferry_ssh_connect_address (const struct address *address,
                                      const struct connect_options *options,
                                      GError **error);

#endif
