/* ferry: the ssh sessions of a remote copy's streams (--streams=N).  By
 * default they are channels on one session; with --session-per-stream,
 * each stream has a session of its own where one can be made: its own TCP
 * connection and its own sshd on the far host (a process, so a core, per
 * stream there), and no stream's packets wake another's channel here.
 *
 * The others connect on threads once the first session's server has
 * accepted its connection (so that sshd's MaxStartups never refuses the
 * first), to the same numeric address (so that a name with several
 * addresses cannot split the copy over machines), and log in once the
 * first has: with the agent and key files alone, never at a prompt, and
 * only to a server that offers the host key that the first checked.  None
 * tries where the first took a passphrase, a password or answers at the
 * terminal, or runs through a proxy.  A stream without a session of its
 * own takes a channel on those made, in turn. */
#ifndef FERRY_SSH_STREAM_SESSIONS_H
#define FERRY_SSH_STREAM_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

#include "address.h"
#include "socket-options.h"

struct ferry_ssh_conn;

/* Connect the sessions of @n streams to @address's host: @conns[0] as
 * ferry_ssh_conn_new connects (the host key checked as its
 * known_hosts_verify= says, the login at a prompt if --ask-password allows
 * one); with @per_stream, up to 8 more beside it (MaxStartups 10 counts
 * the first, and allows for another client).  @conns[i] is the i-th
 * stream's session: its own, or a reference on one of those made, in
 * turn.  *@own: how many were made beside the first; *@why: with
 * @per_stream, the first reason why one was not (NULL if none).  False,
 * with ferry_ssh_conn_new's errors, if the first failed. */
bool ssh_stream_sessions_connect (const struct address *address,
                                  const struct connect_options *options, size_t n,
                                  bool per_stream, struct ferry_ssh_conn **conns, size_t *own,
                                  char **why, GError **error);

#endif
