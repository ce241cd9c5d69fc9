/* ferry: --stats=json[:FILE] (stats.h). */
#include <config.h>

#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "exit-codes.h"

static GMutex lock;
static bool enabled;
static char *file_name;       /* NULL: stderr */
static FILE *file;            /* file_name, once opened */
static int half_fd = -1;      /* ferry_stats_to_fd's */
static bool to_half;          /* ferry_stats_to_fd was called */
static bool finished;
static StatsValue *root;      /* the final object, created on first use */

bool
ferry_stats_parse (const char *spec, GError **error)
{
  if (strcmp (spec, "json") == 0) {
    g_clear_pointer (&file_name, g_free);
  } else if (g_str_has_prefix (spec, "json:") && spec[5] != '\0') {
    g_free (file_name);
    file_name = g_strdup (spec + 5);
  } else {
    return ferry_set_error (error, FERRY_EXIT_USAGE,
                            "invalid --stats '%s': expected json or json:FILE", spec);
  }
  enabled = true;
  return true;
}

bool
ferry_stats_open (GError **error)
{
  if (!enabled || file_name == NULL || file)
    return true;
  file = fopen (file_name, "we");
  if (file == NULL)
    return ferry_set_error (error, FERRY_EXIT_USAGE, "cannot create the --stats file '%s': %s",
                            file_name, g_strerror (errno));
  return true;
}

bool
ferry_stats_enabled (void)
{
  return enabled;
}

static StatsValue *
root_object (void)
{
  if (root == NULL)
    root = stats_object_new ();
  return root;
}

void
ferry_stats_set (const char *name, StatsValue *value)
{
  if (!enabled) {
    stats_value_free (value);
    return;
  }
  g_mutex_lock (&lock);
  stats_object_set (root_object (), name, value);
  g_mutex_unlock (&lock);
}

void
ferry_stats_set_string (const char *name, const char *value)
{
  if (!enabled)
    return;
  g_mutex_lock (&lock);
  ferry_stats_object_set_text (root_object (), name, value);
  g_mutex_unlock (&lock);
}

void
ferry_stats_set_int (const char *name, gint64 value)
{
  if (!enabled)
    return;
  g_mutex_lock (&lock);
  stats_object_set_int (root_object (), name, value);
  g_mutex_unlock (&lock);
}

void
ferry_stats_merge (StatsValue *members)
{
  if (!enabled || !members)
    return;
  g_mutex_lock (&lock);
  stats_object_copy_members (root_object (), members);
  g_mutex_unlock (&lock);
}

/* One line to @fd or the destination; the caller holds @lock. */
static void
write_object (StatsValue *object, int fd)
{
  g_autofree char *text = stats_value_to_json (object);
  g_autofree char *line = g_strconcat (text, "\n", NULL);
  size_t len;

  len = strlen (line);
  if (fd >= 0) {
    /* One write: the parent reads it after the exit. */
    while (write (fd, line, len) < 0 && errno == EINTR)
      ;
    return;
  }
  if (file) {
    fputs (line, file);
    fflush (file);
    return;
  }
  /* One write, so it never interleaves with another line. */
  while (write (STDERR_FILENO, line, len) < 0 && errno == EINTR)
    ;
}

void
ferry_stats_line (StatsValue *object)
{
  if (!enabled || to_half)
    return;
  g_mutex_lock (&lock);
  if (!finished)
    write_object (object, -1);
  g_mutex_unlock (&lock);
}

void
ferry_stats_finish (int exit_code)
{
  if (!enabled)
    return;
  g_mutex_lock (&lock);
  if (!finished && !(to_half && half_fd < 0)) {
    stats_object_set_int (root_object (), "exit_code", exit_code);
    write_object (root, to_half ? half_fd : -1);
  }
  finished = true;
  if (file) {
    fclose (file);
    file = NULL;
  }
  g_mutex_unlock (&lock);
}

void
ferry_stats_to_fd (int fd)
{
  g_mutex_lock (&lock);
  to_half = true;
  half_fd = fd;
  /* The parent's FILE is the parent's to write, and its members so far
   * are the parent's too. */
  file = NULL;
  g_clear_pointer (&root, stats_value_free);
  g_mutex_unlock (&lock);
}

StatsValue *
ferry_stats_read_fd (int fd)
{
  g_autoptr (GString) text = g_string_new (NULL);
  g_autoptr (StatsValue) top = NULL;
  char chunk[4096];
  ssize_t n;

  if (fd < 0)
    return NULL;
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
  while ((n = read (fd, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0)
      g_string_append_len (text, chunk, n);
  top = stats_value_parse (text->str, text->len);
  if (top == NULL || !stats_value_is_object (top))
    return NULL;
  return g_steal_pointer (&top);
}

void
ferry_stats_object_set_ms (StatsValue *object, double seconds)
{
  stats_object_set_int (object, "milliseconds", (gint64) llround (seconds * 1000));
}

void
ferry_stats_object_set_rate (StatsValue *object, guint64 bytes, double seconds)
{
  stats_object_set_int (object, "bytes_per_second",
                        seconds > 0 ? (gint64) llround (bytes / seconds) : 0);
}

void
ferry_stats_object_set_text (StatsValue *object, const char *name, const char *text)
{
  g_autofree char *valid = g_utf8_make_valid (text, -1);

  stats_object_set_string (object, name, valid);
}
