/* ferry: --stats=json's values (stats-value.h). */
#include <config.h>

#include "stats-value.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum stats_kind {
  STATS_NULL,
  STATS_INT,
  STATS_DOUBLE,
  STATS_BOOL,
  STATS_STRING,
  STATS_OBJECT,
  STATS_ARRAY,
};

struct stats_value {
  enum stats_kind kind;
  union {
    gint64 i;
    double d;
    bool b;
    char *s;
  };
  GPtrArray *items;           /* an object's values or an array's items */
  GPtrArray *names;           /* an object's: names[k] for items[k] */
};

/* A parsed value nests no deeper: the text comes from our own halves. */
#define MAX_DEPTH 32

static StatsValue *
value_new (enum stats_kind kind)
{
  StatsValue *v = g_new0 (StatsValue, 1);

  v->kind = kind;
  if (kind == STATS_OBJECT || kind == STATS_ARRAY)
    v->items = g_ptr_array_new_with_free_func ((GDestroyNotify) stats_value_free);
  if (kind == STATS_OBJECT)
    v->names = g_ptr_array_new_with_free_func (g_free);
  return v;
}

StatsValue *
stats_object_new (void)
{
  return value_new (STATS_OBJECT);
}

StatsValue *
stats_array_new (void)
{
  return value_new (STATS_ARRAY);
}

void
stats_value_free (StatsValue *v)
{
  if (v == NULL)
    return;
  if (v->kind == STATS_STRING)
    g_free (v->s);
  if (v->items)
    g_ptr_array_unref (v->items);
  if (v->names)
    g_ptr_array_unref (v->names);
  g_free (v);
}

bool
stats_value_is_object (const StatsValue *v)
{
  return v->kind == STATS_OBJECT;
}

StatsValue *
stats_value_copy (const StatsValue *v)
{
  StatsValue *copy;

  if (v->kind != STATS_OBJECT && v->kind != STATS_ARRAY) {
    copy = g_memdup2 (v, sizeof *v);
    if (v->kind == STATS_STRING)
      copy->s = g_strdup (v->s);
    return copy;
  }
  copy = value_new (v->kind);
  if (v->kind == STATS_OBJECT)
    stats_object_copy_members (copy, v);
  else
    for (guint k = 0; k < v->items->len; k++)
      stats_array_add (copy, stats_value_copy (g_ptr_array_index (v->items, k)));
  return copy;
}

static gint
find_member (const StatsValue *object, const char *name)
{
  g_return_val_if_fail (object->kind == STATS_OBJECT, -1);
  for (guint k = 0; k < object->names->len; k++)
    if (strcmp (g_ptr_array_index (object->names, k), name) == 0)
      return (gint) k;
  return -1;
}

void
stats_object_set (StatsValue *object, const char *name, StatsValue *value)
{
  gint k = find_member (object, name);

  if (k < 0) {
    g_ptr_array_add (object->names, g_strdup (name));
    g_ptr_array_add (object->items, value);
    return;
  }
  stats_value_free (g_ptr_array_index (object->items, k));
  g_ptr_array_index (object->items, k) = value;
}

void
stats_object_set_int (StatsValue *object, const char *name, gint64 value)
{
  StatsValue *v = value_new (STATS_INT);

  v->i = value;
  stats_object_set (object, name, v);
}

void
stats_object_set_double (StatsValue *object, const char *name, double value)
{
  StatsValue *v = value_new (STATS_DOUBLE);

  v->d = value;
  stats_object_set (object, name, v);
}

void
stats_object_set_bool (StatsValue *object, const char *name, bool value)
{
  StatsValue *v = value_new (STATS_BOOL);

  v->b = value;
  stats_object_set (object, name, v);
}

static StatsValue *
string_new (const char *value)
{
  StatsValue *v = value_new (STATS_STRING);

  v->s = g_strdup (value);
  return v;
}

void
stats_object_set_string (StatsValue *object, const char *name, const char *value)
{
  stats_object_set (object, name, string_new (value));
}

StatsValue *
stats_object_get (const StatsValue *object, const char *name)
{
  gint k = find_member (object, name);

  return k < 0 ? NULL : g_ptr_array_index (object->items, k);
}

gint64
stats_object_get_int (const StatsValue *object, const char *name, gint64 otherwise)
{
  const StatsValue *v = stats_object_get (object, name);

  return v && v->kind == STATS_INT ? v->i : otherwise;
}

void
stats_object_copy_members (StatsValue *to, const StatsValue *from)
{
  g_return_if_fail (from->kind == STATS_OBJECT);
  for (guint k = 0; k < from->names->len; k++)
    stats_object_set (to, g_ptr_array_index (from->names, k),
                      stats_value_copy (g_ptr_array_index (from->items, k)));
}

void
stats_array_add (StatsValue *array, StatsValue *value)
{
  g_return_if_fail (array->kind == STATS_ARRAY);
  g_ptr_array_add (array->items, value);
}

void
stats_array_add_string (StatsValue *array, const char *value)
{
  stats_array_add (array, string_new (value));
}

/* --- Writing. --- */

static void
write_string (GString *out, const char *s)
{
  g_string_append_c (out, '"');
  for (; *s; s++) {
    unsigned char c = *s;
    if (c == '"' || c == '\\')
      g_string_append_c (out, '\\'), g_string_append_c (out, c);
    else if (c < 0x20)
      g_string_append_printf (out, "\\u%04x", c);
    else
      g_string_append_c (out, c);
  }
  g_string_append_c (out, '"');
}

static void
write_value (GString *out, const StatsValue *v)
{
  char number[G_ASCII_DTOSTR_BUF_SIZE];

  switch (v->kind) {
  case STATS_NULL:
    g_string_append (out, "null");
    break;
  case STATS_INT:
    g_string_append_printf (out, "%" G_GINT64_FORMAT, v->i);
    break;
  case STATS_DOUBLE:
    /* JSON has no NaN or infinity. */
    g_string_append (out, isfinite (v->d) ? g_ascii_dtostr (number, sizeof number, v->d)
                                          : "null");
    break;
  case STATS_BOOL:
    g_string_append (out, v->b ? "true" : "false");
    break;
  case STATS_STRING:
    write_string (out, v->s);
    break;
  case STATS_OBJECT:
  case STATS_ARRAY:
    g_string_append_c (out, v->kind == STATS_OBJECT ? '{' : '[');
    for (guint k = 0; k < v->items->len; k++) {
      if (k > 0)
        g_string_append_c (out, ',');
      if (v->kind == STATS_OBJECT) {
        write_string (out, g_ptr_array_index (v->names, k));
        g_string_append_c (out, ':');
      }
      write_value (out, g_ptr_array_index (v->items, k));
    }
    g_string_append_c (out, v->kind == STATS_OBJECT ? '}' : ']');
    break;
  }
}

char *
stats_value_to_json (const StatsValue *v)
{
  GString *out = g_string_new (NULL);

  write_value (out, v);
  return g_string_free (out, FALSE);
}

/* --- Reading (RFC 8259). --- */

struct reader {
  const char *p, *end;
};

static void
skip_space (struct reader *r)
{
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
    r->p++;
}

static bool
take (struct reader *r, const char *word)
{
  size_t n = strlen (word);

  if ((size_t) (r->end - r->p) < n || memcmp (r->p, word, n) != 0)
    return false;
  r->p += n;
  return true;
}

static int
hex_digit (char c)
{
  return g_ascii_xdigit_value (c);
}

/* Four hex digits after \u, or -1. */
static gint32
take_hex4 (struct reader *r)
{
  gint32 u = 0;

  if (r->end - r->p < 4)
    return -1;
  for (int k = 0; k < 4; k++) {
    int d = hex_digit (r->p[k]);
    if (d < 0)
      return -1;
    u = u * 16 + d;
  }
  r->p += 4;
  return u;
}

/* A string's body after its opening quote, up to and past the closing one;
 * NULL if malformed. */
static char *
read_string (struct reader *r)
{
  g_autoptr (GString) s = g_string_new (NULL);

  while (r->p < r->end && *r->p != '"') {
    unsigned char c = *r->p++;
    if (c < 0x20)
      return NULL;
    if (c != '\\') {
      g_string_append_c (s, c);
      continue;
    }
    if (r->p == r->end)
      return NULL;
    c = *r->p++;
    const char *plain = strchr ("\"\\/bfnrt", c);
    if (c != 'u' && (plain == NULL || c == '\0'))
      return NULL;
    if (c != 'u') {
      g_string_append_c (s, "\"\\/\b\f\n\r\t"[plain - "\"\\/bfnrt"]);
      continue;
    }
    gint32 u = take_hex4 (r);
    if (u < 0)
      return NULL;
    /* A surrogate pair, or U+FFFD for half of one. */
    if (u >= 0xd800 && u < 0xdc00 && take (r, "\\u")) {
      gint32 low = take_hex4 (r);
      if (low < 0)
        return NULL;
      u = low >= 0xdc00 && low < 0xe000 ? 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00)
                                        : 0xfffd;
    } else if (u >= 0xd800 && u < 0xe000) {
      u = 0xfffd;
    }
    g_string_append_unichar (s, u);
  }
  if (r->p == r->end)
    return NULL;
  r->p++;
  return g_utf8_validate (s->str, s->len, NULL) ? g_strndup (s->str, s->len) : NULL;
}

static StatsValue *
read_number (struct reader *r)
{
  const char *start = r->p;
  bool integral = true;
  StatsValue *v;

  if (r->p < r->end && *r->p == '-')
    r->p++;
  if (r->p == r->end || !g_ascii_isdigit (*r->p))
    return NULL;
  /* No leading zeros. */
  if (*r->p == '0' && r->p + 1 < r->end && g_ascii_isdigit (r->p[1]))
    return NULL;
  while (r->p < r->end && g_ascii_isdigit (*r->p))
    r->p++;
  if (r->p < r->end && *r->p == '.') {
    integral = false;
    r->p++;
    if (r->p == r->end || !g_ascii_isdigit (*r->p))
      return NULL;
    while (r->p < r->end && g_ascii_isdigit (*r->p))
      r->p++;
  }
  if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
    integral = false;
    r->p++;
    if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
      r->p++;
    if (r->p == r->end || !g_ascii_isdigit (*r->p))
      return NULL;
    while (r->p < r->end && g_ascii_isdigit (*r->p))
      r->p++;
  }
  g_autofree char *text = g_strndup (start, r->p - start);
  errno = 0;
  if (integral) {
    gint64 i = g_ascii_strtoll (text, NULL, 10);
    if (errno == 0) {
      v = value_new (STATS_INT);
      v->i = i;
      return v;
    }
  }
  v = value_new (STATS_DOUBLE);
  v->d = g_ascii_strtod (text, NULL);
  return v;
}

static StatsValue *read_value (struct reader *r, int depth);

/* An object's or an array's members after its opening bracket. */
static StatsValue *
read_container (struct reader *r, int depth, bool object)
{
  g_autoptr (StatsValue) v = value_new (object ? STATS_OBJECT : STATS_ARRAY);
  char close = object ? '}' : ']';

  skip_space (r);
  if (r->p < r->end && *r->p == close) {
    r->p++;
    return g_steal_pointer (&v);
  }
  for (;;) {
    g_autofree char *name = NULL;
    skip_space (r);
    if (object) {
      if (!take (r, "\"") || (name = read_string (r)) == NULL)
        return NULL;
      skip_space (r);
      if (!take (r, ":"))
        return NULL;
    }
    StatsValue *item = read_value (r, depth + 1);
    if (item == NULL)
      return NULL;
    if (object)
      stats_object_set (v, name, item);
    else
      stats_array_add (v, item);
    skip_space (r);
    if (take (r, ","))
      continue;
    if (r->p < r->end && *r->p == close) {
      r->p++;
      return g_steal_pointer (&v);
    }
    return NULL;
  }
}

static StatsValue *
read_value (struct reader *r, int depth)
{
  StatsValue *v;
  char *s;

  skip_space (r);
  if (r->p == r->end || depth > MAX_DEPTH)
    return NULL;
  switch (*r->p) {
  case '{':
  case '[':
    r->p++;
    return read_container (r, depth, r->p[-1] == '{');
  case '"':
    r->p++;
    if ((s = read_string (r)) == NULL)
      return NULL;
    v = value_new (STATS_STRING);
    v->s = s;
    return v;
  case 't':
  case 'f':
    v = value_new (STATS_BOOL);
    v->b = *r->p == 't';
    if (take (r, v->b ? "true" : "false"))
      return v;
    stats_value_free (v);
    return NULL;
  case 'n':
    return take (r, "null") ? value_new (STATS_NULL) : NULL;
  default:
    return read_number (r);
  }
}

StatsValue *
stats_value_parse (const char *text, size_t len)
{
  struct reader r = { text, text + len };
  g_autoptr (StatsValue) v = read_value (&r, 0);

  skip_space (&r);
  return v && r.p == r.end ? g_steal_pointer (&v) : NULL;
}
