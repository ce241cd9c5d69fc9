/* ferry: open an export of the kind its name says (export-open.h). */
#include <config.h>

#include "export-open.h"

#include <string.h>

#include "export-ops.h"
#include "image-format.h"

bool
nbd_export_open (struct nbd_export *e, const struct nbd_stream_options *options,
                 const char *name, bool writing, GError **error)
{
  /* The executable's rule (image-format.h), through its exported symbol. */
  e->ops = image_is_path (name) ? &file_export_ops : &nbd_export_ops;
  /* Messages name the image as the user gave it. */
  e->name = options->image_name ? options->image_name
           : strcmp (name, "[") == 0 ? options->command[0] : name;
  return e->ops->open (e, options, name, writing, error);
}
