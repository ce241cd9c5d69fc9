/* ferry: one-line diagnostics on stderr, prefixed with the program name
 * ("ferry", "nc" or "virt-ssh-helper", whichever personality runs).
 * Errors say what failed and why; reports are what was asked for (-v and
 * NBD statistics) or a notice that is no failure (a drain on SIGTERM). */
#ifndef FERRY_MESSAGE_H
#define FERRY_MESSAGE_H

#include <stdbool.h>

#include <glib.h>

/* How much ferry says, set once from the command line before anything
 * runs: FERRY_QUIET (-q) only errors, FERRY_NORMAL as without options,
 * FERRY_VERBOSE (-v) the summaries, FERRY_DETAIL (-vv) also a line per
 * connection, channel or range. */
enum {
  FERRY_QUIET = -1,
  FERRY_NORMAL = 0,
  FERRY_VERBOSE = 1,
  FERRY_DETAIL = 2,
};
void ferry_set_verbosity (int level);
int ferry_verbosity (void);

/* An error, or a warning: printed at every level. */
void ferry_error (const char *fmt, ...) G_GNUC_PRINTF (1, 2);
/* A report or a notice: not with -q. */
void ferry_report (const char *fmt, ...) G_GNUC_PRINTF (1, 2);
/* -vv's detail: a line per connection, channel or range. */
void ferry_detail (const char *fmt, ...) G_GNUC_PRINTF (1, 2);

/* Another ferry's stderr, read into @pending: each whole line
 * ("ferry: MESSAGE") becomes ferry's own "LABEL: MESSAGE" (or "MESSAGE"
 * with @label NULL), through ferry_error, so that it erases a --progress
 * line first; with @flush the unfinished rest too. */
void ferry_pass_lines (GString *pending, const char *label, bool flush);

/* Another program's stderr @text as one reason: trimmed, its
 * "@program: " prefix skipped, its lines joined with "; ". */
char *ferry_program_words (const char *text, const char *program);

/* "HOST:PORT", an IPv6 literal in brackets ("[::1]:22"), as addresses
 * and messages write a host and its port. */
char *ferry_host_port (const char *host, const char *port);

/* A status line (progress.c): drawn over itself with "\r", kept below the
 * messages (ferry_error erases it before its line), ended by a newline. */
void ferry_status (const char *text);
void ferry_status_end (void);

#endif
