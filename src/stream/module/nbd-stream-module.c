/* ferry: the entry point of the stream mode's module (src/meson.build),
 * which nbd-stream.c loads to run --nbd-send, --nbd-receive or
 * --nbd-digest. */
#include <config.h>

#include "nbd-receive.h"
#include "nbd-send.h"
#include "nbd-stream.h"

int
nbd_stream_module_run (const struct nbd_stream_options *options)
{
  return options->receive ? nbd_receive_main (options)
                          : nbd_send_main (options, options->digest != NULL);
}
