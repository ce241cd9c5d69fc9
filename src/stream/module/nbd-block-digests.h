/* ferry: the block digests of a range of an export, as the destination of
 * a --delta copy holds it: BLKHASH_SIZE bytes per block of
 * STREAM_BLOCK_SIZE (the last block of the export may be short), each
 * the block's SHA-256 as doc/nbd-stream.md, section 5, defines it.
 *
 * Reads are pipelined on the main loop as nbd-send.c's (block status
 * ahead, several reads in flight up to a byte bound, spread over the
 * connections); a block that block status reports as zero is not read
 * (it gets the precomputed zero digest), nor hashed when a read finds it
 * all zero; the other blocks are hashed on blkhash's worker thread. */
#ifndef FERRY_NBD_BLOCK_DIGESTS_H
#define FERRY_NBD_BLOCK_DIGESTS_H

#include <glib.h>
#include <stdint.h>

#include "blkhash.h"
#include "nbd-read-queue.h"
#include "nbd-export.h"

struct nbd_block_digests;

/* Called once, from the main loop, when every digest is in @d->digests
 * (@error NULL) or the computation failed (@error, owned by @d, names
 * the export and the offset).  It may free @d, unless the export's
 * connection was lost (@d->export->lost): then only after closing the
 * export, as libnbd may still retire reads into @d's buffers until then. */
typedef void (*nbd_block_digests_fn) (struct nbd_block_digests *d, const GError *error,
                                      void *data);

struct nbd_block_digests {
  struct nbd_export *export;
  uint64_t offset, length;    /* the range */
  uint64_t blocks;            /* in the range */
  uint8_t *digests;           /* BLKHASH_SIZE bytes per block, in order */
  uint64_t read_bytes;        /* bytes read (the rest was zero in the map) */
  uint64_t zero_blocks;       /* blocks that got the zero digest unhashed */
  uint64_t requests;          /* NBD commands issued */

  /* The pipeline (nbd-block-digests.c). */
  struct nbd_read_queue reads;   /* of the range; each released once hashed */
  struct blkhash hash;        /* with the range's digests kept */
  bool kicked;                /* the pump has work */
  GSource *kick;
  GError *error;              /* the first failure: the pipeline drains */
  bool finished;              /* @done was called */
  nbd_block_digests_fn done;
  void *data;
};

/* Start computing the digests of [@offset, @offset + @length) of @e, as
 * blocks of an image of @image_size bytes (the stream's; at most the
 * export's, which may be larger): the range must be on block boundaries
 * (the end may be the image's end) and inside the image, with at most
 * @in_flight bytes of reads held.  NULL with @error if the range is not.
 * @done comes later, never from here. */
struct nbd_block_digests *nbd_block_digests_start (struct nbd_export *e, uint64_t image_size,
                                                   uint64_t offset, uint64_t length,
                                                   uint64_t in_flight,
                                                   nbd_block_digests_fn done, void *data,
                                                   GError **error);
/* Free @d: once @done was called (see there), or, to give up before,
 * after closing the export. */
void nbd_block_digests_free (struct nbd_block_digests *d);

#endif
