/* ferry: one-line diagnostics on stderr. */
#include "message.h"

#include <stdio.h>

void
ferry_error (const char *fmt, ...)
{
  va_list ap;
  g_autofree char *text = NULL;

  va_start (ap, fmt);
  text = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  /* One write, so lines from several relays never interleave. */
  g_autofree char *line = g_strdup_printf ("%s: %s\n", g_get_prgname (), text);
  fputs (line, stderr);
  fflush (stderr);
}
