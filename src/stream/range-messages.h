/* ferry: --streams, the messages between a local half and the copy's
 * controller, both ends (doc/nbd-stream.md, section 8).
 *
 * The remote mode's parent process is the controller: it cuts the image
 * into ranges (nbd_range_length) and hands the next free one to whichever
 * local half asks, over a SOCK_SEQPACKET socketpair, one message a packet:
 *   half -> controller: a report (NBD_RANGE_REPORT_SIZE bytes), then
 *     @n_blocks block digests (32 bytes each) of the range just done, if
 *     any;
 *   controller -> half: a grant (NBD_RANGE_GRANT_SIZE bytes).
 * Both are packed here field by field, little-endian, with no padding:
 * the half (the module, stream/module/nbd-ranges.c) and the parent
 * (nbd-remote.c) share this one encoding.  The
 * constants and the schedule are the parent's and the module's alike. */
#ifndef FERRY_RANGE_MESSAGES_H
#define FERRY_RANGE_MESSAGES_H

#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
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

/* A half's report: the range it did, and a request for the next. */
struct nbd_range_report {
  uint64_t size;              /* the image's size as this half sees it */
  int64_t index;              /* the range done, or -1 */
  uint64_t data_bytes;        /* of that range, sent as DATA */
  uint64_t same_bytes;        /* of that range, SAME records' (--delta) */
  uint32_t n_blocks;          /* digests that follow */
};

/* The controller's answer. */
struct nbd_range_grant {
  int64_t index;              /* -1: no range left; -2: the copy is over
                                 (a failure, or the sizes differ) */
  uint64_t offset, length;
};

/* On the wire: the fields above, in order, with no padding. */
#define NBD_RANGE_REPORT_SIZE (4 * 8 + 4)
#define NBD_RANGE_GRANT_SIZE (3 * 8)

/* The grant's index for "no range left" and for "the copy is over". */
#define NBD_RANGE_NONE_LEFT (-1)
#define NBD_RANGE_COPY_OVER (-2)

void nbd_range_report_encode (const struct nbd_range_report *report,
                              uint8_t out[NBD_RANGE_REPORT_SIZE]);
/* False if @len is short of a report; the digests follow at
 * NBD_RANGE_REPORT_SIZE. */
bool nbd_range_report_decode (const uint8_t *packet, size_t len,
                              struct nbd_range_report *report);
void nbd_range_grant_encode (const struct nbd_range_grant *grant,
                             uint8_t out[NBD_RANGE_GRANT_SIZE]);
/* False unless @len is exactly a grant's. */
bool nbd_range_grant_decode (const uint8_t *packet, size_t len, struct nbd_range_grant *grant);

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
