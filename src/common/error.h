/* ferry: the GError domain.  Error codes are the process exit codes of
 * exit-codes.h, so an error that reaches main() already says how to exit. */
#ifndef FERRY_ERROR_H
#define FERRY_ERROR_H

#include <stdbool.h>

#include <glib.h>

#include "exit-codes.h"

#define FERRY_ERROR (ferry_error_quark ())
GQuark ferry_error_quark (void);

/* Set *@error (if @error is not NULL) to a FERRY_ERROR with @code, an exit
 * code, and a printf-style message.  Returns false, for "return
 * ferry_set_error (...);" in functions that return bool. */
bool ferry_set_error (GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

#endif
