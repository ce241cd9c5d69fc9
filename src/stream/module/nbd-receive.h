/* ferry: the stream mode's receiver (nbd-receive.c): --nbd-receive. */
#ifndef FERRY_NBD_RECEIVE_H
#define FERRY_NBD_RECEIVE_H

#include "nbd-stream.h"

/* Runs the receiver and returns the exit code. */
int nbd_receive_main (const struct nbd_stream_options *options);

#endif
