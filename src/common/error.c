/* ferry: the GError domain. */
#include "error.h"

G_DEFINE_QUARK (ferry-error-quark, ferry_error)

bool
ferry_set_error (GError **error, int code, const char *fmt, ...)
{
  va_list ap;

  if (error == NULL)
    return false;
  va_start (ap, fmt);
  *error = g_error_new_valist (FERRY_ERROR, code, fmt, ap);
  va_end (ap);
  return false;
}
