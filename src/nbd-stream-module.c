/* ferry: the entry point of the stream mode's module (src/meson.build),
 * which nbd-stream.c loads to run --nbd-send, --nbd-receive or
 * --nbd-digest. */
#include <config.h>

#include "nbd-block-digests.h"
#include "nbd-stream.h"

int
nbd_stream_module_run (const struct nbd_stream_options *options)
{
  const char *test_range = g_getenv ("FERRY_TEST_BLOCK_DIGESTS");

  if (options->digest && test_range)
    return nbd_block_digests_test_main (options, test_range);
  return options->receive ? nbd_receive_main (options)
                          : nbd_send_main (options, options->digest != NULL);
}
