/* ferry: a local half's deferred line, both ends of it.  A download's
 * local receiver whose stream was cut short, or an upload's local sender
 * that could not open SRC, sends its line to the remote copy's parent
 * (nbd-remote.c) instead of printing it: the parent knows whether the
 * remote half failed too, and then folds the place into the remote's line.
 * Linked into ferry; the stream module (nbd-send.c, nbd-receive.c) reaches
 * it through the executable's exported symbols. */
#ifndef FERRY_DEFERRED_LINE_H
#define FERRY_DEFERRED_LINE_H

#include <stdbool.h>

/* Send the line: @reason, and @where its destination is complete, or NULL,
 * as one datagram on @report_fd (a SOCK_SEQPACKET socket).  False if it
 * could not be sent: the caller prints it. */
bool deferred_line_send (int report_fd, const char *reason, const char *where);

/* Take the line from @fd without waiting, if one was sent: *@reason (and
 * *@where, or NULL) become newly allocated strings.  False if none came. */
bool deferred_line_take (int fd, char **reason, char **where);

#endif
