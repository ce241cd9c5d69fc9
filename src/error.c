/* ferry: the GError domain. */
#include "error.h"

G_DEFINE_QUARK (ferry-error-quark, ferry_error)
