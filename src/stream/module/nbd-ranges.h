/* ferry: --streams, the ranges of one copy over several channels
 * (doc/nbd-stream.md, section 8).
 *
 * The remote mode's parent process is the controller: it cuts the image
 * into ranges and hands the next free one to whichever local half asks,
 * over a SOCK_SEQPACKET socketpair, one message a packet:
 *   half -> controller: struct nbd_range_report, then @n_blocks block
 *     digests (32 bytes each) of the range just done, if any;
 *   controller -> half: struct nbd_range_grant.
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

/* The ranges the controller hands out: NBD_RANGE_SIZE while much of the
 * image is left, then shorter ones down to NBD_RANGE_MIN
 * (nbd_range_length). */
#define NBD_RANGE_SIZE (128u * 1024 * 1024)
#define NBD_RANGE_MIN (16u * 1024 * 1024)
#define NBD_MAX_STREAMS 16
#define NBD_DEFAULT_STREAMS 4
/* The largest range a ranged stream accepts: its block digests (512 KiB)
 * are held whole. */
#define NBD_RANGE_MAX (1024u * 1024 * 1024)

struct nbd_range {
  int64_t index;              /* -1: no range (none done, or none left); else
                                 the controller's number for it, in offset
                                 order (a remote half, never told it, holds
                                 0) */
  uint64_t offset, length;
};

struct nbd_range_report {
  uint64_t size;              /* the image's size as this half sees it */
  int64_t index;              /* the range done, or -1 */
  uint64_t data_bytes;        /* of that range, sent as DATA */
  uint64_t same_bytes;        /* of that range, SAME records' (--delta) */
  uint32_t n_blocks;          /* digests that follow */
};

struct nbd_range_grant {
  int64_t index;              /* -1: no range left; -2: the copy is over
                                 (a failure, or the sizes differ) */
  uint64_t offset, length;
};

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

/* How messages name a range: the controller's numbers mean nothing to a
 * remote half. */
#define NBD_RANGE_FMT "the range at offset %" PRIu64 " (%" PRIu64 " bytes)"
#define NBD_RANGE_ARGS(r) (r)->offset, (r)->length

/* The length of the range that starts @remaining bytes before the end of
 * an image copied over @streams channels.  Guided self-scheduling: a
 * @streams'th of what is left, in whole MiB, within NBD_RANGE_MIN and
 * NBD_RANGE_SIZE.  The last ranges are short, so that the channels end
 * together, rather than one carrying a dense last range alone at its one
 * window's rate.  A rest under half NBD_RANGE_MIN joins the range before
 * it. */
static inline uint64_t
nbd_range_length (uint64_t remaining, unsigned streams)
{
  const uint64_t mib = 1024 * 1024;
  uint64_t length = remaining / MAX (streams, 1);

  length = CLAMP (length - length % mib, NBD_RANGE_MIN, NBD_RANGE_SIZE);
  if (remaining < length + NBD_RANGE_MIN / 2 && remaining <= NBD_RANGE_SIZE)
    return remaining;
  return length;
}

/* Block count of a range. */
static inline uint64_t
nbd_range_blocks (const struct nbd_range *r, uint32_t block_size)
{
  return (r->length + block_size - 1) / block_size;
}

#endif
