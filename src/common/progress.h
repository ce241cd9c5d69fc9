/* ferry: a live progress line on stderr (--progress), pv style.
 *
 * Generic over what moves: the caller names its counters (a label, and a
 * total when the size is known) and gives a function that reads them;
 * this file owns the timer, the rates, percent and ETA, and the drawing.
 * The stdio relay (run.c) reads the byte counts its pumps already keep;
 * another mode passes counters of its own.  When off, none of this
 * exists: no timer, no system call, nothing on the data path. */
#ifndef FERRY_PROGRESS_H
#define FERRY_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

enum progress_mode {
  PROGRESS_NEVER,             /* no --progress */
  PROGRESS_AUTO,              /* --progress: only when stderr is a terminal */
  PROGRESS_ALWAYS,            /* --progress=always */
  PROGRESS_FD,                /* --progress=fd:N: nbdcopy's "P/100" lines on fd N,
                                 for programs that parse them */
};

/* What --progress asked for. */
struct progress_spec {
  enum progress_mode mode;
  int fd;                     /* PROGRESS_FD: where the lines go */
};

/* "auto", "always", "never" or "fd:N"; NULL (a bare --progress) is "auto". */
bool progress_spec_parse (const char *value, struct progress_spec *spec, GError **error);

/* Whether anything would be drawn: AUTO asks whether stderr is a terminal. */
bool progress_wanted (const struct progress_spec *spec);

#define PROGRESS_MAX_COUNTERS 4

struct progress_counter {
  const char *label;          /* "up", "down", ...: outlives the progress */
  guint64 bytes;              /* moved so far */
  guint64 total;              /* bytes expected in all, for percent and ETA;
                                 0 while unknown */
};

/* Update @counters (those given to progress_new, in that order): bytes,
 * and total if it became known.  Called from the main loop at each
 * refresh, and once more by progress_finish. */
typedef void (*progress_sample_fn) (struct progress_counter *counters, void *data);

/* Start refreshing a line at most 4 times a second, on the calling
 * thread's main context, with @n_counters (at most PROGRESS_MAX_COUNTERS)
 * copied from @counters.  With PROGRESS_FD, a "P/100" line is written
 * instead whenever the first counter's percent changes.  NULL when
 * !progress_wanted (@spec). */
struct progress *progress_new (const struct progress_spec *spec,
                               const struct progress_counter *counters,
                               size_t n_counters, progress_sample_fn sample,
                               void *data);

/* Draw the line a last time (average rates over the whole run), end it
 * with a newline, stop the timer and free.  NULL is a no-op. */
void progress_finish (struct progress *progress);

/* The bytes still to read from @fd when it is a regular file or a block
 * device (its size less its offset), else 0: a total for stdin. */
guint64 progress_input_size (int fd);

#endif
