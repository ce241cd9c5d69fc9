/* ferry: the ssh sessions of a remote copy's streams (--streams=N): one
 * per stream, the others connected on threads beside the first's set-up,
 * so that N sessions cost about the round trips of one.
 *
 * Each stream then has its own TCP connection and its own sshd on the far
 * host (a process, so a core, per stream there), and no stream's packets
 * wake another's channel here.  A session beside the first never prompts:
 * it logs in with the agent and key files alone, and only to a server that
 * offers the host key that the first session checked.  Where it cannot (a
 * login that took a password at the terminal, a key that needs a
 * passphrase, a server's MaxStartups), its stream takes a channel on
 * another stream's session instead, as every stream did on the one
 * session before. */
#ifndef FERRY_SSH_STREAM_SESSIONS_H
#define FERRY_SSH_STREAM_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

#include "address.h"
#include "socket-options.h"

struct ferry_ssh_conn;

/* Connect up to @n sessions to @address's host, one for each of @n
 * streams: @conns[0] as ferry_ssh_conn_new connects (the host key checked
 * as its known_hosts_verify= says, the login at a prompt if --ask-password
 * allows one), then up to 8 more beside it.  @conns[i] is the i-th
 * stream's session: its own, or where too few were made, another
 * reference on one of those made, in turn.  *@own: how many were made
 * beside the first; *@why: the first reason why one was not (NULL if
 * none).  Without --ask-password no login can prompt, and the others
 * connect while the first does; with it, they connect once the first has
 * logged in without a prompt.  False, with ferry_ssh_conn_new's errors, if
 * the first failed. */
bool ssh_stream_sessions_connect (const struct address *address,
                                  const struct connect_options *options, size_t n,
                                  struct ferry_ssh_conn **conns, size_t *own, char **why,
                                  GError **error);

#endif
