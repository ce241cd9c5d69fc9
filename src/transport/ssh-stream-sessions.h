/* ferry: the ssh sessions of a remote copy's streams (--streams=N).  By
 * default they are channels on one session; with --session-per-stream,
 * each stream has a session of its own where one can be made: its own TCP
 * connection and its own sshd on the far host (a process, so a core, per
 * stream there), and no stream's packets wake another's channel here.
 *
 * The others connect, on threads and all at once, only once the first has
 * logged in without a prompt, so that a login that fails, or one that
 * asks at the terminal, is tried once: they could not answer, and a
 * server (OpenSSH's PerSourcePenalties) counts each failure.  They connect
 * to the first one's numeric peer address, so that a name with several
 * addresses cannot split the copy over machines, and log in with the
 * agent and key files alone, to a server that offers the host key that the
 * first checked.  None tries through a proxy (--proxy, a ProxyCommand),
 * whose far end they could not pin.  A stream without a session of its
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
 * one); with @per_stream, up to 8 more after it (sshd's MaxStartups, 10 by
 * default, counts the connections not logged in yet, and another client's
 * may be among them).  @conns[i] is the i-th stream's session: its own, or
 * a reference on one of those made, in turn.  *@own: how many were made
 * after the first; *@why: with @per_stream, the first reason why a stream
 * has none of its own (NULL if all have).  False, with ferry_ssh_conn_new's
 * errors, if the first failed. */
bool ssh_stream_sessions_connect (const struct address *address,
                                  const struct connect_options *options, size_t n,
                                  bool per_stream, struct ferry_ssh_conn **conns, size_t *own,
                                  char **why, GError **error);

#endif
