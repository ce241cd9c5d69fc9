/* ferry: one-line diagnostics on stderr, prefixed with the program name
 * ("ferry", "nc" or "virt-ssh-helper", whichever personality runs).
 * Errors say what failed and why; reports are what was asked for (-v and
 * NBD statistics) or a notice that is no failure (a drain on SIGTERM). */
#ifndef FERRY_MESSAGE_H
#define FERRY_MESSAGE_H

#include <glib.h>

void ferry_error (const char *fmt, ...) G_GNUC_PRINTF (1, 2);
void ferry_report (const char *fmt, ...) G_GNUC_PRINTF (1, 2);

/* A status line (progress.c): drawn over itself with "\r", kept below the
 * messages (ferry_error erases it before its line), ended by a newline. */
void ferry_status (const char *text);
void ferry_status_end (void);

#endif
