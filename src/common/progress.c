/* ferry: the live progress line (see progress.h). */
#include <config.h>

#include "progress.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "gsource-release.h"
#include "message.h"

#define REFRESH_MS 250
/* Rates are over the last second: this many refreshes back. */
#define RATE_WINDOW 4

struct sample {
  gint64 time;                /* monotonic microseconds */
  guint64 bytes[PROGRESS_MAX_COUNTERS];
};

struct progress {
  struct progress_spec spec;
  int last_percent;           /* PROGRESS_FD: the last P written; -1 before */
  struct progress_counter counters[PROGRESS_MAX_COUNTERS];
  size_t n_counters;
  progress_sample_fn sample;
  void *data;
  gint64 started;
  GSource *timer;
  struct sample history[RATE_WINDOW + 1];  /* a ring: the last refreshes */
  size_t n_samples;           /* taken so far; the next goes at n % size */
};

bool
progress_spec_parse (const char *value, struct progress_spec *spec, GError **error)
{
  char *end;
  guint64 fd;

  if (value == NULL || g_str_equal (value, "auto"))
    spec->mode = PROGRESS_AUTO;
  else if (g_str_equal (value, "always"))
    spec->mode = PROGRESS_ALWAYS;
  else if (g_str_equal (value, "never"))
    spec->mode = PROGRESS_NEVER;
  else if (g_str_has_prefix (value, "fd:") && g_ascii_isdigit (value[3]) &&
           (fd = g_ascii_strtoull (value + 3, &end, 10)) <= G_MAXINT && *end == '\0') {
    int flags = fcntl ((int) fd, F_GETFL);
    /* Said now, as a usage error: the lines would go nowhere, silently. */
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
      g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE, "invalid --progress '%s': %s", value,
                   flags < 0 ? g_strerror (errno) : "not open for writing");
      return false;
    }
    spec->mode = PROGRESS_FD;
    spec->fd = (int) fd;
  } else {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "invalid --progress '%s': expected auto, always, never or fd:N", value);
    return false;
  }
  return true;
}

bool
progress_wanted (const struct progress_spec *spec)
{
  /* -q: no line on stderr; fd:N is another program's. */
  if (spec->mode == PROGRESS_FD)
    return true;
  if (ferry_verbosity () < FERRY_NORMAL)
    return false;
  return spec->mode == PROGRESS_ALWAYS ||
         (spec->mode == PROGRESS_AUTO && isatty (STDERR_FILENO));
}

guint64
progress_input_size (int fd)
{
  struct stat st;
  guint64 size = 0;
  off_t offset;

  if (fstat (fd, &st) < 0)
    return 0;
  if (S_ISREG (st.st_mode))
    size = st.st_size;
  else if (!S_ISBLK (st.st_mode) || ioctl (fd, BLKGETSIZE64, &size) < 0)
    return 0;
  offset = lseek (fd, 0, SEEK_CUR);
  return offset > 0 && (guint64) offset < size ? size - offset : size;
}

/* "812 B", "9.53 KiB", "12.5 MiB", "1023 GiB": three significant digits. */
static void
append_size (GString *line, guint64 bytes)
{
  static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
  double v = bytes;
  size_t u = 0;

  if (bytes < 1024) {
    g_string_append_printf (line, "%" G_GUINT64_FORMAT " B", bytes);
    return;
  }
  for (v /= 1024; v >= 1024 && u + 1 < G_N_ELEMENTS (units); u++)
    v /= 1024;
  g_string_append_printf (line, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s",
                          v, units[u]);
}

/* H:MM:SS; elapsed time is truncated, an ETA rounded up. */
static void
append_duration (GString *line, guint64 s)
{
  g_string_append_printf (line, "%" G_GUINT64_FORMAT ":%02u:%02u", s / 3600,
                          (unsigned) (s / 60 % 60), (unsigned) (s % 60));
}

/* ELAPSED  LABEL BYTES RATE [PERCENT ETA]  LABEL ...  e.g.
 * "0:00:03  up 48.0 MiB 16.1 MiB/s 75% ETA 0:00:01  down 0 B 0.0 MiB/s".
 * @final: rates are averages over the run, and there is no ETA. */
static void
progress_draw (struct progress *p, bool final)
{
  struct sample *now = &p->history[p->n_samples % G_N_ELEMENTS (p->history)];
  const struct sample *then;
  g_autoptr (GString) line = g_string_new (NULL);
  double elapsed, window;

  p->sample (p->counters, p->data);
  now->time = g_get_monotonic_time ();
  for (size_t i = 0; i < p->n_counters; i++)
    now->bytes[i] = p->counters[i].bytes;
  /* The oldest sample kept, up to RATE_WINDOW refreshes ago. */
  then = p->n_samples < RATE_WINDOW || final ? NULL
       : &p->history[(p->n_samples - RATE_WINDOW) % G_N_ELEMENTS (p->history)];
  p->n_samples++;

  elapsed = (now->time - p->started) / 1e6;
  window = then ? (now->time - then->time) / 1e6 : elapsed;
  append_duration (line, (guint64) elapsed);
  for (size_t i = 0; i < p->n_counters; i++) {
    const struct progress_counter *c = &p->counters[i];
    guint64 moved = c->bytes - (then ? then->bytes[i] : 0);
    double rate = window > 0 ? moved / window / (1024 * 1024) : 0;
    double average = elapsed > 0 ? c->bytes / elapsed : 0;

    g_string_append_printf (line, "  %s ", c->label);
    append_size (line, c->bytes);
    g_string_append_printf (line, rate < 100 ? " %.1f MiB/s" : " %.0f MiB/s", rate);
    if (c->total == 0)
      continue;
    g_string_append_printf (line, " %u%%",
                            (unsigned) (MIN (c->bytes, c->total) * 100 / c->total));
    if (final)
      continue;
    g_string_append (line, " ETA ");
    if (c->bytes >= c->total)
      append_duration (line, 0);
    else if (average > 0) {
      double eta = (c->total - c->bytes) / average;
      append_duration (line, (guint64) eta + ((guint64) eta < eta));
    }
    else
      g_string_append (line, "-:--:--");
  }
  ferry_status (line->str);
}

/* nbdcopy's --progress=fd:N: "P/100\n" each time the first counter's
 * percent changes.  Best effort: a reader that went away costs nothing. */
static void
progress_write_percent (struct progress *p)
{
  const struct progress_counter *c = &p->counters[0];
  int percent;

  p->sample (p->counters, p->data);
  percent = c->total ? (int) (MIN (c->bytes, c->total) * 100 / c->total) : 100;
  if (percent != p->last_percent) {
    g_autofree char *line = g_strdup_printf ("%d/100\n", percent);
    if (write (p->spec.fd, line, strlen (line)) < 0) {
      /* Nothing to do: progress never fails the transfer. */
    }
    p->last_percent = percent;
  }
}

static gboolean
on_refresh (gpointer data)
{
  struct progress *p = data;

  if (p->spec.mode == PROGRESS_FD)
    progress_write_percent (p);
  else
    progress_draw (p, false);
  return G_SOURCE_CONTINUE;
}

struct progress *
progress_new (const struct progress_spec *spec, const struct progress_counter *counters,
              size_t n_counters, progress_sample_fn sample, void *data)
{
  struct progress *p;

  g_return_val_if_fail (n_counters <= PROGRESS_MAX_COUNTERS, NULL);
  if (!progress_wanted (spec))
    return NULL;
  p = g_new0 (struct progress, 1);
  p->spec = *spec;
  p->last_percent = -1;
  memcpy (p->counters, counters, n_counters * sizeof *counters);
  p->n_counters = n_counters;
  p->sample = sample;
  p->data = data;
  p->started = g_get_monotonic_time ();
  p->timer = g_timeout_source_new (REFRESH_MS);
  g_source_set_callback (p->timer, on_refresh, p, NULL);
  gsource_attach (p->timer);
  return p;
}

void
progress_finish (struct progress *p)
{
  if (p == NULL)
    return;
  g_clear_pointer (&p->timer, gsource_release);
  if (p->spec.mode == PROGRESS_FD) {
    progress_write_percent (p);
  } else {
    progress_draw (p, true);
    ferry_status_end ();
  }
  g_free (p);
}
