/* ferry: the signals that stop ferry or ask it for statistics, delivered
 * on the main loop.
 *
 * glib's g_unix_signal_add does not take SIGQUIT, and it restores a
 * signal's default action when its source goes, so that a signal after
 * the main loop (nbdcopy SIGTERMs its [ CMD ] as the copy ends) would kill
 * ferry instead of letting it exit with its code.  Here one handler, on
 * whichever thread, writes the signal's number into a pipe that the main
 * loop reads. */
#ifndef FERRY_SIGNAL_WATCH_H
#define FERRY_SIGNAL_WATCH_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>

#include <glib.h>

/* Called on the main loop, once per signal received. */
typedef void (*signal_watch_fn) (int signum, void *data);

struct signal_watch;

/* Catch SIGTERM, SIGINT, SIGHUP, SIGQUIT and SIGUSR1 from now on, and
 * unblock them.  A stop signal that was ignored when ferry started (nohup,
 * a non-interactive shell's background job) is left ignored: the first
 * call in the process, or signal_watch_block, remembers which were. */
struct signal_watch *signal_watch_new (signal_watch_fn callback, void *data);

/* For a poll loop that runs without the main loop (nc -u's datagram
 * relay): the fd to poll for POLLIN, and the call that reads it and calls
 * back, as the main loop does. */
int signal_watch_fd (const struct signal_watch *watch);
void signal_watch_dispatch (struct signal_watch *watch);

/* Block the signals that signal_watch_new catches, the old mask in @old:
 * around a fork, so that the child is not killed by a signal's default
 * action before its own signal_watch_new, which unblocks them. */
void signal_watch_block (sigset_t *old);

/* Whether @signum (a watched one) was ignored when ferry started, as the
 * first call here, signal_watch_new or signal_watch_block found it: after
 * signal_watch_free every one is ignored, which says nothing of that. */
bool signal_watch_ignored_at_start (int signum);

/* Stop calling back; the signals are ignored from then on (ferry is
 * exiting with a code already decided). */
void signal_watch_free (struct signal_watch *watch);

/* Stop calling back, the signals blocked and not ignored: one that comes
 * meanwhile waits for the next signal_watch_new (an ignored one would be
 * discarded, even blocked). */
void signal_watch_hand_over (struct signal_watch *watch);

/* Until called again with NULL, a signal that stops ferry ends it in its
 * handler, with "ferry: stopped by SIGTERM" and @suffix (which must stay
 * valid, and end with a newline) on stderr and exit code 128 + the signal:
 * for a blocking call that retries on EINTR (libnbd's connect), before
 * anything was done that needs undoing. */
void signal_watch_exit_on_stop (const char *suffix);

/* Whether a signal that stops ferry has arrived: the first one's number,
 * or 0.  A blocking connect that sees EINTR gives up instead of waiting
 * on. */
int signal_watch_stop_pending (void);

/* Wait for @events on @fd: 1 once it is ready, 0 once the monotonic time
 * @deadline (microseconds; -1: none) has passed, -1 with errno EINTR once
 * a stop signal is pending (or with poll's errno if it failed).  It looks
 * for the stop at least every 200 ms: poll(2) returns at a signal, but
 * only in the thread that took it, and a forwarder's workers never do. */
int signal_watch_poll (int fd, short events, gint64 deadline);
/* The same for @n fds: 1 once any of them is ready. */
int signal_watch_poll_many (struct pollfd *fds, nfds_t n, gint64 deadline);

/* A connect (a socket's, an ssh channel's) that a stop signal gave up:
 * *@error says "stopped by SIGTERM while connecting to @what", with 128 +
 * the signal as its code, since nothing was read yet.  False, and
 * *@error untouched, if no stop signal came. */
bool signal_watch_set_stopped (GError **error, const char *what);

/* The signal's name, such as "SIGTERM". */
const char *signal_watch_name (int signum);

#endif
