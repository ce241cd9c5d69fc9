/* ferry: the block-hash image digest of doc/nbd-stream.md, section 5
 * (SHA-256 per block, one precomputed digest for zero blocks, SHA-256 over
 * the block digests and the little-endian size), on libcrypto. */
#ifndef FERRY_BLKHASH_H
#define FERRY_BLKHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BLKHASH_SIZE 32

struct blkhash_worker;

struct blkhash {
  void *outer;                /* EVP_MD_CTX over the block digests */
  struct blkhash_worker *worker;   /* hashing on a thread, if started */
  uint64_t size;              /* the image's size */
  uint64_t next;              /* the image offset hashed up to */
  uint32_t block_size;
  unsigned char zero_digest[BLKHASH_SIZE];   /* of a full block of zeros */
  uint8_t *blocks;            /* if set (after blkhash_init): each block's digest
                                 is also stored here, at 32 * its index counted
                                 from @blocks_from */
  uint64_t blocks_from;       /* an image offset; 0 unless blkhash_keep_blocks */
};

bool blkhash_init (struct blkhash *b, uint64_t size, uint32_t block_size);
/* The next @len bytes of the image (from b->next), whole blocks except at
 * the image's end. */
void blkhash_data (struct blkhash *b, const uint8_t *buf, size_t len);
/* The next @len bytes are zero. */
void blkhash_zero (struct blkhash *b, uint64_t len);
/* Before hashing: start at image offset @offset (a multiple of the block
 * size) instead of 0, and store the digest of each block hashed, in order,
 * at @digests, BLKHASH_SIZE bytes each (written on the worker thread, if
 * any: read them once blkhash_final has returned).  The image digest is
 * then of those blocks only. */
void blkhash_keep_blocks (struct blkhash *b, uint64_t offset, uint8_t *digests);
/* Hash on a worker thread from now on, in order: blkhash_data_async
 * and blkhash_zero queue their work, and each job done sets *@kicked
 * (atomically) and wakes the default main context, whose loop then calls
 * blkhash_collect. */
void blkhash_start_worker (struct blkhash *b, bool *kicked);
/* Like blkhash_data, but @data must stay valid until @release (@arg) is
 * called, from blkhash_collect, blkhash_final or blkhash_clear, on the
 * calling thread (at once without a worker). */
void blkhash_data_async (struct blkhash *b, const uint8_t *data, size_t len,
                         void (*release) (void *arg), void *arg);
/* The next @len bytes are blocks whose digests are known: @digests,
 * BLKHASH_SIZE bytes each, valid until blkhash_final or blkhash_clear
 * (a delta's blocks that the destination already holds). */
void blkhash_known (struct blkhash *b, const uint8_t *digests, uint64_t len);
/* Release the data of the jobs the worker has finished. */
void blkhash_collect (struct blkhash *b);

/* The digest, once all b->size bytes were hashed (waits for the worker);
 * frees @b. */
void blkhash_final (struct blkhash *b, unsigned char out[BLKHASH_SIZE]);
/* Stop the worker (its unhashed jobs are released), free @b. */
void blkhash_clear (struct blkhash *b);
/* @digest as 64 lower-case hex digits in @hex. */
void blkhash_hex (const unsigned char digest[BLKHASH_SIZE], char hex[2 * BLKHASH_SIZE + 1]);

#endif
