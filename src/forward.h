/* ferry: listen-and-forward.  Every accepted connection gets its own relay
 * to its own new connection to TARGET (relay.h: the accepted connection is
 * the local end, the connection to TARGET the remote one).  The main loop
 * accepts; the relays run on worker threads, one per core, or on the main
 * loop for an ssh:// TARGET.
 *
 * One relay's failure ends that relay alone.  Past --max-connections the
 * listeners pause, so new clients wait in the kernel backlog.  A stop
 * (SIGTERM, SIGINT, SIGHUP) closes the listeners and drains the live
 * relays. */
#ifndef FERRY_FORWARD_H
#define FERRY_FORWARD_H

#include <stdbool.h>

#include <glib.h>

#include "address.h"
#include "options.h"

struct forward;

/* Called once, from the main loop, when ferry should exit with @exit_code:
 * without -k when the first connection is done, after --exit-idle-time,
 * or when a stop has drained every relay. */
typedef void (*forward_done_fn) (int exit_code, void *data);

/* Listen on @listen_at, or (when it is NULL) on @options' socket-activation
 * fds, and relay to @remote (TARGET).  @options and @remote must outlive
 * the forward.  Returns NULL with a FERRY_EXIT_CONNECT error when a
 * listener cannot be set up. */
struct forward *forward_new (const struct ferry_options *options,
                             const struct address *listen_at,
                             const struct address *remote,
                             forward_done_fn done, void *data, GError **error);

/* Stop accepting and drain the live relays for up to --drain-timeout; what
 * is still buffered then is dropped with a message.  done follows with 0
 * if every live relay delivered everything, else @signal_exit_code.
 * Returns false if a stop was already under way (the caller then exits at
 * once). */
bool forward_stop (struct forward *forward, const char *signal_name,
                   int signal_exit_code);

/* A second signal, or SIGQUIT: stop as forward_stop does if not yet
 * stopping, and give up on every live relay now, each with one line that
 * counts what it drops; done follows with @signal_exit_code of the first
 * signal once their ends are reported (a relay still connecting to its
 * remote end ends when that is over). */
void forward_cut (struct forward *forward, const char *signal_name,
                  int signal_exit_code);

/* SIGUSR1: one line with the counts of connections, then each live relay's
 * statistics (as --verbose prints at its end). */
void forward_print_stats (struct forward *forward);

/* Free the listeners and any relays still live. */
void forward_free (struct forward *forward);

#endif
