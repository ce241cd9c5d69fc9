/* ferry: the stream mode's sender (nbd-send.c): --nbd-send, and
 * --nbd-digest, which reads and hashes as it would send. */
#ifndef FERRY_NBD_SEND_H
#define FERRY_NBD_SEND_H

#include <stdbool.h>

#include "nbd-stream.h"

/* Runs the sender (or with @digest_only, the digest) and returns the exit
 * code. */
int nbd_send_main (const struct nbd_stream_options *options, bool digest_only);

#endif
