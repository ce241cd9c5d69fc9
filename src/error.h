/* ferry: the GError domain.  Error codes are the process exit codes of
 * exit-codes.h, so an error that reaches main() already says how to exit. */
#ifndef FERRY_ERROR_H
#define FERRY_ERROR_H

#include <glib.h>

#include "exit-codes.h"

#define FERRY_ERROR (ferry_error_quark ())
GQuark ferry_error_quark (void);

#endif
