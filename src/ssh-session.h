/* ferry: one authenticated ssh session, shared by the channels it carries.
 *
 * Connecting, host key verification and authentication block, bounded by
 * the connect timeout, before any relay starts.  After that the session is
 * non-blocking in ferry's main loop: the session owns the one watch on
 * ssh_get_fd() and tells each channel endpoint (its "clients") when it may
 * make progress.  G_IO_OUT is asked for only while libssh has output
 * pending, so an idle session costs nothing. */
#ifndef FERRY_SSH_SESSION_H
#define FERRY_SSH_SESSION_H

#include <stdbool.h>

#include <glib.h>
#include <libssh/libssh.h>

#include "address.h"
#include "connect.h"
#include "endpoint.h"

struct ssh_conn;

/* A channel endpoint as the session sees it; embedded in the endpoint. */
struct ssh_conn_client {
  struct endpoint *ep;        /* told through ep->ready */
  bool want_read, want_write; /* the relay's interest, as last set */
  bool maybe_buffered;        /* libssh processed input since this client last
                                 found its channel empty: it may hold data
                                 that no fd readiness will announce */
};

/* Connect to @address's host, verify its key and authenticate.  Errors:
 * FERRY_EXIT_CONNECT, FERRY_EXIT_SSH_HOSTKEY or FERRY_EXIT_SSH_AUTH, each
 * naming the host and the reason. */
struct ssh_conn *ssh_conn_new (const struct address *address,
                               const struct connect_options *options,
                               GError **error);
struct ssh_conn *ssh_conn_ref (struct ssh_conn *conn);
/* The last reference flushes what libssh still holds (bounded), then
 * disconnects. */
void ssh_conn_unref (struct ssh_conn *conn);

ssh_session ssh_conn_session (struct ssh_conn *conn);
/* "USER@HOST:PORT", for messages. */
const char *ssh_conn_name (struct ssh_conn *conn);
/* The session failed (reported once, on stderr). */
bool ssh_conn_is_dead (struct ssh_conn *conn);
/* Bytes libssh has read from the session's socket so far. */
guint64 ssh_conn_bytes_in (struct ssh_conn *conn);

/* Repeat @step while it returns @again, waiting for the session's fd in
 * between, for at most the connect timeout.  Returns @step's last result,
 * or @again on timeout.  Blocks the main loop: only for short exchanges
 * (opening a channel) before a relay starts. */
int ssh_conn_wait (struct ssh_conn *conn, int (*step) (void *data), void *data,
                   int again);

void ssh_conn_attach (struct ssh_conn *conn, struct ssh_conn_client *client);
void ssh_conn_detach (struct ssh_conn *conn, struct ssh_conn_client *client);
/* libssh ran for @client (a read or write processes input for every
 * channel): the others may now hold buffered data.  Then re-derive the
 * fd watch from every client's interest and libssh's pending output. */
void ssh_conn_update (struct ssh_conn *conn, struct ssh_conn_client *client);

typedef struct ssh_conn FerrySshConn;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FerrySshConn, ssh_conn_unref)

#endif
