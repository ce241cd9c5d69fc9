/* ferry: one authenticated ssh session, shared by the channels it carries.
 *
 * Connecting, host key verification and authentication (ssh-setup.c)
 * block, bounded by the connect timeout, before any relay starts.  After that the session is
 * non-blocking in ferry's main loop: the session owns the one watch on
 * ssh_get_fd() and tells each channel endpoint (its "clients") when it may
 * make progress.  G_IO_OUT is asked for only while libssh has output
 * pending, so an idle session costs nothing. */
#ifndef FERRY_SSH_SESSION_H
#define FERRY_SSH_SESSION_H

#include <stdbool.h>

#include <glib.h>
#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include "address.h"
#include "socket-options.h"
#include "endpoint.h"

struct ferry_ssh_conn;

/* A channel endpoint as the session sees it; embedded in the endpoint.
 * libssh processes every channel's input in whichever call reads the
 * socket, so the session learns from the channel's callbacks which one
 * got something, and wakes only that one: with --streams, waking every
 * channel for every packet cost a zero-timeout poll each. */
struct ferry_ssh_client {
  struct endpoint *ep;        /* told through ep->ready */
  ssh_channel channel;        /* its callbacks set the flags below; its
                                 window says whether a write can go */
  struct ssh_channel_callbacks_struct callbacks;
  bool want_read, want_write; /* the relay's interest, as last set */
  bool maybe_buffered;        /* libssh holds input (data, EOF, the exit
                                 status) that the client has not read: no fd
                                 readiness will announce it */
  bool state_changed;         /* EOF, close or an exit status came: even a
                                 relay that waits for nothing must hear it */
  bool write_blocked;         /* the last write stopped at the peer's window
                                 or at libssh's pending output: neither the
                                 window's adjust nor a flush by another
                                 channel's call is announced */
};

/* Connect to @address's host, verify its key and authenticate.  Errors:
 * FERRY_EXIT_CONNECT, FERRY_EXIT_SSH_HOSTKEY or FERRY_EXIT_SSH_AUTH, each
 * naming the host and the reason. */
struct ferry_ssh_conn *ferry_ssh_conn_new (const struct address *address,
                               const struct connect_options *options,
                               GError **error);
/* Where the sessions after a first one go, and what they must find there
 * (a copy's streams: ssh-stream-sessions.h). */
struct ferry_ssh_pin {
  char *peer;                 /* the first's peer address, numeric, */
  unsigned port;              /* and port */
  char *local;                /* its own address: the others leave from it */
  ssh_key key;                /* the host key the first checked */
};
/* @conn's pin; false (and @pin empty) if it does not run over TCP (a
 * ProxyCommand's pipe). */
bool ferry_ssh_conn_pin (struct ferry_ssh_conn *conn, struct ferry_ssh_pin *pin);
void ferry_ssh_pin_clear (struct ferry_ssh_pin *pin);
/* Another session to a first one's host, on any thread: to @pin's
 * address from @pin's local address (TCP connect bounded as the
 * handshake is, without --connect-timeout), whatever the name resolves
 * to now (the name stays the host key's and the config's).  Its server
 * must offer @pin's key, and it logs in with the agent and key files
 * alone, never at a prompt.  Not watched yet: ferry_ssh_conn_watch, on the
 * main loop's thread.  Errors as ferry_ssh_conn_new's. */
struct ferry_ssh_conn *ferry_ssh_conn_new_beside (const struct address *address,
                                                  const struct connect_options *options,
                                                  const struct ferry_ssh_pin *pin,
                                                  GError **error);
/* The session joins the main loop (ferry_ssh_conn_new's do already). */
bool ferry_ssh_conn_watch (struct ferry_ssh_conn *conn, const struct address *address,
                           GError **error);
/* The login took a passphrase, a password or keyboard-interactive answers
 * at the terminal: another session would need them again. */
bool ferry_ssh_conn_prompted (struct ferry_ssh_conn *conn);
struct ferry_ssh_conn *ferry_ssh_conn_ref (struct ferry_ssh_conn *conn);
/* The last reference flushes what libssh still holds (bounded), then
 * disconnects. */
void ferry_ssh_conn_unref (struct ferry_ssh_conn *conn);

ssh_session ferry_ssh_conn_session (struct ferry_ssh_conn *conn);
/* "USER@HOST:PORT", for messages. */
const char *ferry_ssh_conn_name (struct ferry_ssh_conn *conn);
/* The session failed (reported once, on stderr, unless the owner reports
 * it: ferry_ssh_conn_report_failure_myself). */
bool ferry_ssh_conn_is_dead (struct ferry_ssh_conn *conn);
/* The owner will report a failure of the session itself, in one line with
 * what the failure cost (the remote copy: how far DST is complete). */
void ferry_ssh_conn_report_failure_myself (struct ferry_ssh_conn *conn);
/* Why the session failed ("Socket error: disconnected"), or NULL. */
const char *ferry_ssh_conn_failure (struct ferry_ssh_conn *conn);
/* Bytes libssh has read from the session's socket so far. */
guint64 ferry_ssh_conn_bytes_in (struct ferry_ssh_conn *conn);

/* ferry_ssh_wait (ssh-setup.h) on the session, for at most the connect
 * timeout. */
int ferry_ssh_conn_wait (struct ferry_ssh_conn *conn, int (*step) (void *data), void *data,
                   int again);
/* The same for @step over channels of @n sessions (which may repeat). */
int ferry_ssh_conn_wait_many (struct ferry_ssh_conn *const *conns, size_t n,
                              int (*step) (void *data), void *data, int again);

/* After the session died, @client's interest grew (a relay whose buffer
 * drained wants to read again): one more dispatch tells it of the failure,
 * which no fd event will. */
void ferry_ssh_conn_wake_dead (struct ferry_ssh_conn *conn);
/* @client's endpoint reads and writes @channel; whatever libssh already
 * holds for it counts as buffered. */
void ferry_ssh_conn_attach (struct ferry_ssh_conn *conn, struct ferry_ssh_client *client,
                            ssh_channel channel);
/* Before the channel is closed or freed. */
void ferry_ssh_conn_detach (struct ferry_ssh_conn *conn, struct ferry_ssh_client *client);
/* libssh ran (a read or write of any channel processes the session's
 * input): see whether the session died, and re-derive the fd watch from
 * libssh's pending output. */
void ferry_ssh_conn_update (struct ferry_ssh_conn *conn);

typedef struct ferry_ssh_conn FerrySshConn;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FerrySshConn, ferry_ssh_conn_unref)

#endif
