/* ferry: one-line diagnostics on stderr. */
#include "message.h"

#include <stdio.h>

static void G_GNUC_PRINTF (1, 0)
print_line (const char *fmt, va_list ap)
{
  g_autofree char *text = g_strdup_vprintf (fmt, ap);
  /* One write, so lines from several relays never interleave. */
  g_autofree char *line = g_strdup_printf ("%s: %s\n", g_get_prgname (), text);

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

  va_start (ap, fmt);
  print_line (fmt, ap);
  va_end (ap);
}
