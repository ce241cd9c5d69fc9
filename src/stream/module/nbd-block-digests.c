/* ferry: the block digests of a range of an export (nbd-block-digests.h).
 *
 * The reads complete in any order; their queue (nbd-read-queue.h) holds
 * each until it and all before it are done, and then hands it to the hash
 * in order: zero blocks as zero runs (the precomputed digest), the other
 * runs of blocks to the worker thread, which releases the read's buffer
 * once hashed. */
#include <config.h>

#include <inttypes.h>

#include "error.h"
#include "gsource-release.h"
#include "iszero.h"
#include "nbd-aio-source.h"
#include "message.h"
#include "nbd-block-digests.h"
#include "nbd-stream-format.h"

#define B STREAM_BLOCK_SIZE

static void
kick (struct nbd_block_digests *d)
{
  __atomic_store_n (&d->kicked, true, __ATOMIC_RELEASE);
}

/* Hash the read at the queue's head: runs of zero blocks and runs of
 * data blocks. */
static void
hash_read (struct nbd_block_digests *d, struct nbd_read *r)
{
  if (!r->buf) {
    blkhash_zero (&d->hash, r->length);
    d->zero_blocks += (r->length + B - 1) / B;
    return;
  }
  d->read_bytes += r->length;
  for (uint64_t pos = 0, run; pos < r->length; pos += run) {
    bool zero = is_zero (r->buf + pos, MIN (B, r->length - pos));
    run = 0;
    while (pos + run < r->length &&
           is_zero (r->buf + pos + run, MIN (B, r->length - pos - run)) == zero)
      run += MIN (B, r->length - pos - run);
    if (zero) {
      blkhash_zero (&d->hash, run);
      d->zero_blocks += (run + B - 1) / B;
    } else {
      r->refs++;
      blkhash_data_async (&d->hash, r->buf + pos, run, nbd_read_unref, r);
    }
  }
}

/* Hash the reads that are done, in order. */
static void
hash_ready (struct nbd_block_digests *d)
{
  struct nbd_read *r;

  while ((r = nbd_read_queue_ready (&d->reads))) {
    hash_read (d, r);
    nbd_read_queue_pop (&d->reads);
  }
}

static void
finish (struct nbd_block_digests *d)
{
  d->finished = true;
  d->done (d, d->error, d->data);
}

static gboolean
pump (gpointer data)
{
  struct nbd_block_digests *d = data;

  if (d->finished)
    return G_SOURCE_CONTINUE;
  if (d->export->lost && !d->error)
    d->error = g_error_new (FERRY_ERROR, FERRY_EXIT_NBD, "%s (block digests of %s "
                            "were computed up to offset %" PRIu64 ")",
                            d->export->lost->message, d->export->name, d->reads.next_offset);
  blkhash_collect (&d->hash);
  hash_ready (d);
  nbd_read_queue_issue (&d->reads);
  /* Zero ranges from the map are done at once. */
  hash_ready (d);
  if (!d->error && d->reads.next_offset == d->reads.end && g_queue_is_empty (&d->reads.reads)) {
    unsigned char unused[BLKHASH_SIZE];
    /* Waits for the worker's backlog, at most the in-flight bound. */
    blkhash_final (&d->hash, unused);
    finish (d);
  } else if (d->error && ((d->reads.reads_in_flight == 0 && !d->reads.map.pending) ||
                           d->export->lost)) {
    finish (d);
  }
  return G_SOURCE_CONTINUE;
}

struct nbd_block_digests *
nbd_block_digests_start (struct nbd_export *e, uint64_t image_size, uint64_t offset,
                         uint64_t length, uint64_t in_flight, nbd_block_digests_fn done,
                         void *data, GError **error)
{
  struct nbd_block_digests *d;

  if (image_size > e->size || offset > image_size || length > image_size - offset ||
      offset % B || (length % B && offset + length != image_size)) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_STREAM,
                 "%s: the range [%" PRIu64 ", +%" PRIu64 ") is not whole %u-byte blocks "
                 "inside the image of %" PRIu64 " bytes", e->name, offset, length, B,
                 image_size);
    return NULL;
  }
  d = g_new0 (struct nbd_block_digests, 1);
  d->export = e;
  d->offset = offset;
  d->length = length;
  d->blocks = (length + B - 1) / B;
  d->digests = g_malloc (d->blocks * BLKHASH_SIZE);
  d->done = done;
  d->data = data;
  if (!blkhash_init (&d->hash, image_size, B)) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_FAILURE, "cannot set up SHA-256 (libcrypto)");
    g_free (d->digests);
    g_free (d);
    return NULL;
  }
  blkhash_keep_blocks (&d->hash, offset, d->digests);
  blkhash_start_worker (&d->hash, &d->kicked);
  nbd_read_queue_init (&d->reads, e, in_flight, &d->requests, &d->kicked, &d->error,
                       sizeof (struct nbd_read), NULL);
  nbd_read_queue_range (&d->reads, offset, offset + length);
  d->kick = nbd_kick_source_new (&d->kicked, pump, d);
  kick (d);
  return d;
}

void
nbd_block_digests_free (struct nbd_block_digests *d)
{
  if (!d)
    return;
  gsource_release (d->kick);
  /* Releases the reads that are being hashed. */
  blkhash_clear (&d->hash);
  nbd_read_queue_clear (&d->reads);
  g_clear_error (&d->error);
  g_free (d->digests);
  g_free (d);
}
