/* ferry: a command on this host as a relay's far end. */
#ifndef FERRY_ENDPOINT_PROCESS_H
#define FERRY_ENDPOINT_PROCESS_H

#include <glib.h>

#include "endpoint.h"

/* Run @argv (found through PATH when it has no '/') with one end of a
 * socketpair as its stdin and stdout, in a process group of its own.  The
 * endpoint reads and writes the other end, and is "delivering" (endpoint.h)
 * until the command has exited, so that a relay ends with the command, as
 * it ends with an ssh exec channel once its exit status came.  The lines
 * of its stderr, another ferry's, become ferry's (ferry_pass_lines, with
 * @label).  Freeing the endpoint before the command has exited kills it
 * (SIGKILL), waits for it and drops what it still had to say.  Errors:
 * FERRY_EXIT_FAILURE. */
struct endpoint *endpoint_process_spawn (char **argv, const char *name, const char *label,
                                         GError **error);

/* The command's exit status, or -1 while it runs (or if a signal killed it). */
int endpoint_process_exit_status (struct endpoint *ep);
/* The signal that killed it, without "SIG" ("TERM"), or NULL. */
const char *endpoint_process_exit_signal (struct endpoint *ep);
/* The command closes its stream as it exits, before its status is
 * reaped: if it has not exited yet, true, and @fn(@data) is called when
 * it has (not after the endpoint is freed). */
bool endpoint_process_when_exited (struct endpoint *ep, void (*fn) (void *), void *data);
/* Send it @signum, unless it has exited. */
void endpoint_process_signal (struct endpoint *ep, int signum);

#endif
