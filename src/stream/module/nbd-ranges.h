/* ferry: --streams, the ranges of one copy over several channels
 * (doc/nbd-stream.md, section 8).
 *
 * The remote mode's parent process is the controller: it cuts the image
 * into ranges and hands the next free one to whichever local half asks
 * (the messages, both ends: stream/range-messages.h).
 * A receiver reports a range once it applied it; a sender once it sent
 * it, with its own digests, and it checks the receiver's answer once the
 * next range is sent (a difference fails the copy).  Either asks for the
 * next range in the same message.  The functions below are the module's
 * (nbd-ranges.c). */
#ifndef FERRY_NBD_RANGES_H
#define FERRY_NBD_RANGES_H

#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

#include "range-messages.h"

/* Report @done (@digests, @data_bytes) to the controller on @fd and wait
 * for the next range in *@next (index -1: none left). */
bool nbd_range_next (int fd, uint64_t size, const struct nbd_range *done,
                     const uint8_t *digests, uint64_t data_bytes, uint64_t same_bytes,
                     struct nbd_range *next, GError **error);

/* The other direction of a ranged stream's channel, blocking (the fds may
 * be non-blocking): a request for a range (length 0: no more), and the
 * block digests that a receiver applied. */
/* The receiver took the header and opened its export: the sender may
 * start (the first message on the return direction). */
bool nbd_range_write_ready (int fd, GError **error);
bool nbd_range_read_ready (int fd, GError **error);
bool nbd_range_write_request (int fd, const struct nbd_range *range, uint64_t size,
                              GError **error);
/* Reads a request; validates it against @size (inside, block-aligned, at
 * most NBD_RANGE_MAX); index is -1 for "no more". */
bool nbd_range_read_request (int fd, uint64_t size, struct nbd_range *range,
                             GError **error);
bool nbd_range_write_digests (int fd, const struct nbd_range *range, const uint8_t *digests,
                              GError **error);
/* Reads the digests of @range into @digests (its block count's worth). */
bool nbd_range_read_digests (int fd, const struct nbd_range *range, uint8_t *digests,
                             GError **error);

struct blkhash;
/* Hash @range on its own (as an image of its length) on a worker thread,
 * its block digests into a new *@blocks (the old one freed). */
bool nbd_range_hash_start (struct blkhash *hash, const struct nbd_range *range,
                           uint8_t **blocks, bool *kicked, GError **error);

/* The error domain of a return direction that closed (its code is
 * FERRY_EXIT_STREAM): the other half ended, and says why itself. */
GQuark nbd_range_closed_quark (void);
/* The error domain of a wait on the return direction that a stop signal
 * ended: the caller leaves the stop (and its message) to its main loop. */
GQuark nbd_range_stopped_quark (void);
/* Keep @error (owned) in *@first as a pipeline's first failure, unless
 * one is there already or @error is a stop (nbd_range_stopped_quark):
 * then free it. */
void nbd_range_keep_failure (GError **first, GError *error);
/* A local half whose return direction closed: its remote half failed, and
 * the parent, which knows it, kills this half before its line would
 * repeat the cause.  Waits up to 2 s for that (or for @control_fd to
 * close). */
void nbd_range_wait_for_parent (int control_fd);

#endif
