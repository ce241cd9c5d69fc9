/* ferry: --progress for transfers of a known size. */
#include "transfer-progress.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool
parse_fd (const char *spec, int *fd)
{
  char *end;
  long n;

  if (strncmp (spec, "fd:", 3) != 0)
    return false;
  n = strtol (spec + 3, &end, 10);
  if (end == spec + 3 || *end || n < 0 || n > 65535)
    return false;
  *fd = (int) n;
  return true;
}

bool
transfer_progress_parse (const char *spec)
{
  int fd;

  return spec == NULL || *spec == '\0' || parse_fd (spec, &fd);
}

void
transfer_progress_init (struct transfer_progress *p, const char *spec, uint64_t total)
{
  memset (p, 0, sizeof *p);
  p->fd = -1;
  p->total = total;
  p->last_percent = -1;
  p->start_us = g_get_monotonic_time ();
  if (spec == NULL)
    return;
  if (*spec == '\0') {
    if (isatty (STDERR_FILENO)) {
      p->fd = STDERR_FILENO;
      p->terminal = true;
    }
  } else {
    parse_fd (spec, &p->fd);
  }
}

static void
write_line (int fd, const char *line)
{
  size_t len = strlen (line);

  while (len > 0) {
    ssize_t n = write (fd, line, len);
    if (n <= 0)
      return;                           /* progress is best effort */
    line += n;
    len -= n;
  }
}

void
transfer_progress_update (struct transfer_progress *p, uint64_t done,
                          uint64_t data, uint64_t zero, bool final)
{
  int64_t now;
  int percent;
  char line[200];

  if (p->fd < 0)
    return;
  now = g_get_monotonic_time ();
  if (!final && now - p->last_us < 100000)
    return;
  p->last_us = now;
  percent = p->total ? (int) (done * 100 / p->total) : 100;
  if (final && done == p->total)
    percent = 100;
  if (!p->terminal) {
    if (percent != p->last_percent) {
      snprintf (line, sizeof line, "%d/100\n", percent);
      write_line (p->fd, line);
      p->last_percent = percent;
    }
    return;
  }
  double secs = (now - p->start_us) / 1e6;
  double rate = secs > 0 ? done / secs : 0;
  double eta = rate > 0 ? (p->total - done) / rate : 0;
  snprintf (line, sizeof line,
            "\r%3d%%  %8.1f MiB/s  ETA %02d:%02d  data %" G_GUINT64_FORMAT
            " MiB  zero %" G_GUINT64_FORMAT " MiB\033[K%s",
            percent, rate / 1048576, (int) eta / 60, (int) eta % 60,
            data >> 20, zero >> 20, final ? "\n" : "");
  write_line (p->fd, line);
}
