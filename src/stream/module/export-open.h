/* ferry: open an export of the kind its name says (export-open.c).  Above
 * the kinds (file-ops.c, nbd-ops.c), which stand on nbd-export.h. */
#ifndef FERRY_EXPORT_OPEN_H
#define FERRY_EXPORT_OPEN_H

#include "nbd-export.h"

/* Open the export @name, of the NBD kind for a command or a URI
 * (containing "://"), else of the file kind (more connections only with
 * multi-conn, never for a command or a file), and set it up for the copy. */
bool nbd_export_open (struct nbd_export *e, const struct nbd_stream_options *options,
                      const char *name, bool writing, GError **error);

#endif
