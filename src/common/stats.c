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
static JsonObject *root;      /* the final object, created on first use */

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

static JsonObject *
root_object (void)
{
  if (root == NULL)
    root = json_object_new ();
  return root;
}

void
ferry_stats_set (const char *name, JsonNode *value)
{
  if (!enabled) {
    json_node_unref (value);
    return;
  }
  g_mutex_lock (&lock);
  json_object_set_member (root_object (), name, value);
  g_mutex_unlock (&lock);
}

void
ferry_stats_set_string (const char *name, const char *value)
{
  JsonNode *node = json_node_new (JSON_NODE_VALUE);
  g_autofree char *valid = g_utf8_make_valid (value, -1);

  json_node_set_string (node, valid);
  ferry_stats_set (name, node);
}

void
ferry_stats_set_int (const char *name, gint64 value)
{
  JsonNode *node = json_node_new (JSON_NODE_VALUE);

  json_node_set_int (node, value);
  ferry_stats_set (name, node);
}

static void
merge_member (JsonObject *object, const char *name, JsonNode *node, gpointer data)
{
  (void) object, (void) data;
  ferry_stats_set (name, json_node_copy (node));
}

void
ferry_stats_merge (JsonObject *members)
{
  if (enabled && members)
    json_object_foreach_member (members, merge_member, NULL);
}

/* One line to @fd or the destination; the caller holds @lock. */
static void
write_object (JsonObject *object, int fd)
{
  g_autoptr (JsonNode) node = json_node_new (JSON_NODE_OBJECT);
  g_autoptr (JsonGenerator) generator = json_generator_new ();
  g_autofree char *text = NULL;
  g_autofree char *line = NULL;
  size_t len;

  json_node_set_object (node, object);
  json_generator_set_root (generator, node);
  text = json_generator_to_data (generator, NULL);
  line = g_strconcat (text, "\n", NULL);
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
ferry_stats_line (JsonObject *object)
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
    json_object_set_int_member (root_object (), "exit_code", exit_code);
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
  g_clear_pointer (&root, json_object_unref);
  g_mutex_unlock (&lock);
}

JsonObject *
ferry_stats_read_fd (int fd)
{
  g_autoptr (GString) text = g_string_new (NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  char chunk[4096];
  ssize_t n;
  JsonNode *top;

  if (fd < 0)
    return NULL;
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
  while ((n = read (fd, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0)
      g_string_append_len (text, chunk, n);
  if (text->len == 0 || !json_parser_load_from_data (parser, text->str, text->len, NULL))
    return NULL;
  top = json_parser_get_root (parser);
  if (top == NULL || !JSON_NODE_HOLDS_OBJECT (top))
    return NULL;
  return json_object_ref (json_node_get_object (top));
}

void
ferry_stats_object_set_ms (JsonObject *object, double seconds)
{
  json_object_set_int_member (object, "milliseconds", (gint64) llround (seconds * 1000));
}

void
ferry_stats_object_set_rate (JsonObject *object, guint64 bytes, double seconds)
{
  json_object_set_int_member (object, "bytes_per_second",
                              seconds > 0 ? (gint64) llround (bytes / seconds) : 0);
}

void
ferry_stats_object_set_text (JsonObject *object, const char *name, const char *text)
{
  g_autofree char *valid = g_utf8_make_valid (text, -1);

  json_object_set_string_member (object, name, valid);
}

void
ferry_stats_object_copy_members (JsonObject *to, JsonObject *from)
{
  GList *names = json_object_get_members (from);

  for (GList *l = names; l; l = l->next)
    json_object_set_member (to, l->data, json_object_dup_member (from, l->data));
  g_list_free (names);
}
