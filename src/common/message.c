/* ferry: one-line diagnostics on stderr. */
#include "message.h"

#include <stdio.h>
#include <string.h>

/* Columns of the status line now on stderr; 0: none.  Only the main
 * thread draws one (the stdio relay's --progress): forward's worker
 * threads, where it is never drawn, only read it (as 0). */
static size_t status_width;

/* ferry_set_verbosity's level; read on any thread, written before any
 * other runs. */
static int verbosity = FERRY_NORMAL;

void
ferry_set_verbosity (int level)
{
  verbosity = level;
}

int
ferry_verbosity (void)
{
  return verbosity;
}

/* @text with every control character escaped, as ls -b shows names: a
 * name that the user or a peer gave (a path, an address, a remote line)
 * can then neither end the line nor forge one after it. */
static char *
escape_controls (const char *text)
{
  GString *out = g_string_sized_new (strlen (text));

  for (const unsigned char *p = (const unsigned char *) text; *p; p++) {
    if (*p == '\n')
      g_string_append (out, "\\n");
    else if (*p == '\r')
      g_string_append (out, "\\r");
    else if (*p == '\t')
      g_string_append (out, "\\t");
    else if (*p < 0x20 || *p == 0x7f)
      g_string_append_printf (out, "\\x%02x", *p);
    else
      g_string_append_c (out, (char) *p);
  }
  return g_string_free (out, FALSE);
}

static void G_GNUC_PRINTF (1, 0)
print_line (const char *fmt, va_list ap)
{
  g_autofree char *raw = g_strdup_vprintf (fmt, ap);
  g_autofree char *text = escape_controls (raw);
  g_autofree char *blank = g_strnfill (status_width, ' ');
  /* One write, so lines from several relays never interleave.  A status
   * line is erased first ("\r", spaces, "\r"), and drawn again at its
   * next refresh. */
  g_autofree char *line = g_strdup_printf ("%s%s%s%s: %s\n",
                                           status_width ? "\r" : "", blank,
                                           status_width ? "\r" : "",
                                           g_get_prgname (), text);

  if (status_width)
    status_width = 0;
  fputs (line, stderr);
  fflush (stderr);
}

void
ferry_error (const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  print_line (fmt, ap);
  va_end (ap);
}

void
ferry_report (const char *fmt, ...)
{
  va_list ap;

  if (verbosity < FERRY_NORMAL)
    return;
  va_start (ap, fmt);
  print_line (fmt, ap);
  va_end (ap);
}

void
ferry_detail (const char *fmt, ...)
{
  va_list ap;

  if (verbosity < FERRY_DETAIL)
    return;
  va_start (ap, fmt);
  print_line (fmt, ap);
  va_end (ap);
}

void
ferry_status (const char *text)
{
  size_t width = g_utf8_strlen (text, -1);
  /* Padded over a longer previous line. */
  g_autofree char *pad = g_strnfill (status_width > width ? status_width - width : 0, ' ');
  g_autofree char *line = g_strdup_printf ("\r%s%s", text, pad);

  status_width = width;
  fputs (line, stderr);
  fflush (stderr);
}

void
ferry_status_end (void)
{
  if (status_width) {
    fputs ("\n", stderr);
    fflush (stderr);
  }
  status_width = 0;
}

void
ferry_pass_lines (GString *pending, const char *label, bool flush)
{
  char *nl;

  while ((nl = memchr (pending->str, '\n', pending->len)) || (flush && pending->len > 0)) {
    size_t len = nl ? (size_t) (nl - pending->str) : pending->len;
    const char *text = pending->str;
    if (len >= 7 && memcmp (text, "ferry: ", 7) == 0) {
      text += 7;
      len -= 7;
    }
    ferry_error ("%s%s%.*s", label ? label : "", label ? ": " : "", (int) len, text);
    g_string_erase (pending, 0, nl ? (gssize) (nl - pending->str) + 1 : (gssize) pending->len);
  }
}

char *
ferry_program_words (const char *text, const char *program)
{
  g_autofree char *words = g_strstrip (g_strdup (text));
  g_autofree char *prefix = g_strconcat (program, ": ", NULL);
  g_auto (GStrv) lines = g_strsplit (g_str_has_prefix (words, prefix) ? words + strlen (prefix)
                                                                       : words, "\n", -1);

  return g_strjoinv ("; ", lines);
}

char *
ferry_host_port (const char *host, const char *port)
{
  return g_strdup_printf (strchr (host, ':') ? "[%s]:%s" : "%s:%s", host, port);
}
