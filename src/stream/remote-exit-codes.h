/* ferry: the remote copy's exit codes (nbd-remote.c), as pure functions of
 * what each half and the relay reported: no channel, no process. */
#ifndef FERRY_REMOTE_EXIT_CODES_H
#define FERRY_REMOTE_EXIT_CODES_H

#include <stdbool.h>

/* The remote helper's exit @status (-1 unknown; @signal the one that
 * killed it, or NULL) as ferry's exit code; after a stop signal
 * (@stop_code, 128 + its number; 0 without one), its own 128 + N, or its
 * death by that signal, is the stop's.  Its stream mode's failures (3,
 * 20 to 23) become the remote ones (30 to 33), unless it ran on this host
 * (@same_host: a local copy with --streams), whose codes are its own;
 * killed by a signal other than the stop's, it is a failed remote half. */
int remote_exit_code (int status, const char *signal, int stop_code, bool same_host);

/* Which side failed: the relay's idle timeout (5), whose cut the halves
 * only saw; else the receiver's failure, unless it only saw the stream
 * break (21) because the sender had failed first; then the sender's; then
 * the transport's.  After a stop signal (@stop_code, 128 + its number; 0
 * without one), a half that stopped for it, a receiver that saw the stream
 * cut and a relay that lost its peers yield to a half that failed for a
 * reason of its own: the code is the stop's unless both halves completed. */
int remote_copy_exit_code (bool upload, int local, int remote, int relay, int stop_code,
                           bool same_host);

/* A local half's wait status as an exit code. */
int remote_child_code (int wstatus);

#endif
