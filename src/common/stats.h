/* ferry: --stats=json[:FILE], the statistics as JSON (ferry(1),
 * STATISTICS).  Each mode puts its counts, as -v prints them, into one
 * object (ferry_stats_set), and main() writes it once at the end with the
 * exit code (ferry_stats_finish).  A forwarder writes a line per
 * connection before it, and --nbd's --stats-interval a line per interval
 * (ferry_stats_line).  Written on one line each, to stderr or FILE,
 * whatever the verbosity (-q too).  Safe on any thread. */
#ifndef FERRY_STATS_H
#define FERRY_STATS_H

#include <stdbool.h>

#include <glib.h>

#include "stats-value.h"

/* --stats's value: "json" (to stderr) or "json:FILE". */
bool ferry_stats_parse (const char *spec, GError **error);
/* Once the command line is read: create (or truncate) FILE. */
bool ferry_stats_open (GError **error);
/* Whether --stats=json was given. */
bool ferry_stats_enabled (void);

/* A member of the final object; takes @value (an object or an array)
 * over, replacing a member of that name. */
void ferry_stats_set (const char *name, StatsValue *value);
void ferry_stats_set_string (const char *name, const char *value);
void ferry_stats_set_int (const char *name, gint64 value);
/* Every member of @members, as ferry_stats_set (@members is not taken). */
void ferry_stats_merge (StatsValue *members);

/* Another object, written now on a line of its own (@object is not taken). */
void ferry_stats_line (StatsValue *object);

/* The final object with "exit_code": @exit_code, written once; later calls
 * do nothing.  Nothing without --stats. */
void ferry_stats_finish (int exit_code);

/* In a forked half: its final object goes to @fd (a pipe to the parent,
 * which reads it with ferry_stats_read_fd) instead of stderr or FILE, and
 * lines go nowhere.  @fd < 0: nothing is written at all. */
void ferry_stats_to_fd (int fd);
/* The object a half wrote to @fd (non-blocking, after its exit), or NULL. */
StatsValue *ferry_stats_read_fd (int fd);

/* Helpers for the modes' counts, in integers: @seconds as
 * "milliseconds", and @bytes in @seconds as "bytes_per_second" (0 in no
 * time). */
void ferry_stats_object_set_ms (StatsValue *object, double seconds);
void ferry_stats_object_set_rate (StatsValue *object, guint64 bytes, double seconds);
/* A name that a user or a peer gave (a path, an export's name), which
 * need not be UTF-8: its invalid bytes become U+FFFD, so that the line
 * stays JSON. */
void ferry_stats_object_set_text (StatsValue *object, const char *name, const char *text);

#endif
