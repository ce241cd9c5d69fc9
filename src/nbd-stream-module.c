/* ferry: the entry point of the stream mode's module (src/meson.build),
 * which nbd-stream.c loads to run --nbd-send, --nbd-receive or
 * --nbd-digest. */
#include <config.h>

#include <malloc.h>

#include "nbd-block-digests.h"
#include "nbd-stream.h"

int
nbd_stream_module_run (const struct nbd_stream_options *options)
{
  const char *test_range = g_getenv ("FERRY_TEST_BLOCK_DIGESTS");

  /* Every request and record is a buffer of up to --request-size, freed
   * when its write or send completes.  glibc's default trim threshold
   * hands the freed pages back to the kernel, and the next buffer faults
   * them in again, zeroed: a fifth of a dense copy's CPU.  Keep them (the
   * in-flight bound still caps how many are live).  Setting one threshold
   * turns off glibc's dynamic choice of both, so set the mmap one too. */
  mallopt (M_MMAP_THRESHOLD, 64 * 1024 * 1024);
  mallopt (M_TRIM_THRESHOLD, 256 * 1024 * 1024);
  if (options->digest && test_range)
    return nbd_block_digests_test_main (options, test_range);
  return options->receive ? nbd_receive_main (options)
                          : nbd_send_main (options, options->digest != NULL);
}
