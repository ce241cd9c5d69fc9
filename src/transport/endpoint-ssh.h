/* ferry: an ssh channel as a relay endpoint. */
#ifndef FERRY_ENDPOINT_SSH_H
#define FERRY_ENDPOINT_SSH_H

#include <stdbool.h>

#include <glib.h>

#include "address.h"
#include "socket-options.h"
#include "endpoint.h"

struct ferry_ssh_conn;

/* Open a channel on @conn to @address's remote target, the way its proxy=
 * says: a direct-streamlocal or direct-tcpip channel, or (exec) the remote
 * helper run as "HELPER unix:PATH".  auto tries direct, then exec where
 * the refusal may mean that the server forwards nothing and the server
 * has the helper; an error names the refusal.  The endpoint holds a reference on @conn.
 * Blocks for the exchange, bounded by the connect timeout. */
struct endpoint *endpoint_ssh_open (struct ferry_ssh_conn *conn, const struct address *address,
                                    const struct connect_options *options,
                                    GError **error);

/* ssh-session.h's session, declared again for callers that cannot include
 * libssh.h (its legacy names clash with buffer.h's). */
struct ferry_ssh_conn *ferry_ssh_conn_new (const struct address *address,
                               const struct connect_options *options,
                               GError **error);
void ferry_ssh_conn_unref (struct ferry_ssh_conn *conn);
const char *ferry_ssh_conn_name (struct ferry_ssh_conn *conn);
void ferry_ssh_conn_report_failure_myself (struct ferry_ssh_conn *conn);
struct ferry_ssh_conn *ferry_ssh_conn_ref (struct ferry_ssh_conn *conn);

/* Session channels opened ahead (endpoint_ssh_open_spares). */
struct endpoint_ssh_spares;

/* @command (quoted for the remote shell already) run over an exec channel
 * on @conn, an authenticated session (ferry_ssh_conn_new), for the remote
 * stream mode: each line of its stderr becomes ferry's, as
 * "ferry: LABEL: MESSAGE" (@label, one channel's of several with
 * --streams, or if NULL the session's name, USER@HOST:PORT), printed as
 * ferry_error prints, below no progress line.  Its exit status is left to
 * the caller (endpoint_ssh_exit_status), and the endpoint's exit_code
 * reports nothing.  The endpoint holds a reference on @conn.  The channel
 * is the next of @spares, if it has one left, else a new one.  Errors:
 * FERRY_EXIT_CONNECT, or 128 + a stop signal. */
struct endpoint *endpoint_ssh_exec_on (struct ferry_ssh_conn *conn,
                                       struct endpoint_ssh_spares *spares,
                                       const char *command, const char *label,
                                       GError **error);
/* The same for @n commands (@labels[j] for @commands[j]) on @n channels
 * opened at once: each request goes out on every channel before the
 * answers are awaited, so that n channels take the round trips of one.
 * All of them in @endpoints; or none, false, and *@failed the first one
 * that failed. */
bool endpoint_ssh_exec_many (struct ferry_ssh_conn *conn, struct endpoint_ssh_spares *spares,
                             size_t n, const char *const *commands, const char *const *labels,
                             struct endpoint **endpoints, size_t *failed, GError **error);
/* @n session channels opened at once, the j-th on @conns[j] (one session
 * each, or the same one repeated), for commands that run later
 * (endpoint_ssh_exec_on and _many take them in turn): a command on a
 * spare costs the exec's round trip alone.  With --streams, the other
 * channels open in the first one's round trip.  The spares hold a
 * reference on each session.  Errors as endpoint_ssh_exec_on's. */
struct endpoint_ssh_spares *endpoint_ssh_open_spares (struct ferry_ssh_conn *const *conns,
                                                      size_t n, GError **error);
/* Closes the spares not taken. */
void endpoint_ssh_spares_free (struct endpoint_ssh_spares *spares);
/* An exec channel's remote stderr is dropped from now on, and at its end:
 * a command given up before anything read it (its lines would repeat the
 * one that gave it up). */
void endpoint_ssh_discard_stderr (struct endpoint *ep);
/* An exec channel's remote exit status, or -1 while it is not known (or
 * the channel closed without one). */
int endpoint_ssh_exit_status (struct endpoint *ep);
/* An exec channel's remote command was killed by this signal (RFC 4254's
 * name, without "SIG": "TERM"), or NULL. */
const char *endpoint_ssh_exit_signal (struct endpoint *ep);
/* Why the channel's session failed (ferry_ssh_conn_failure), or NULL. */
const char *endpoint_ssh_link_failure (struct endpoint *ep);
/* Send signal @name ("TERM") to an exec channel's remote command: OpenSSH's
 * sshd (7.9 and later) delivers it to the command's process group.  False
 * if the channel or the session is gone, or the request could not be
 * queued; a server that does not support it ignores it. */
bool endpoint_ssh_signal (struct endpoint *ep, const char *name);

/* A new session to @address's host, and one channel on it. */
struct endpoint *ferry_ssh_connect_address (const struct address *address,
                                      const struct connect_options *options,
                                      GError **error);

#endif
