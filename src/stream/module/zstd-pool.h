/* ferry: --compress (doc/nbd-stream.md, CDATA records): zstd on worker
 * threads, off the main loop.  The sender compresses each DATA record
 * there, several at once; the receiver decompresses one CDATA record at a
 * time, while its loop goes on with the writes in flight.  A job's
 * buffers are the caller's, and must stay valid until the job is done or
 * the pool freed. */
#ifndef FERRY_ZSTD_POOL_H
#define FERRY_ZSTD_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* zstd's fastest level that is not negative: measured in the closing note
 * of the --compress commit against --fast levels on 2 cores. */
#define ZSTD_POOL_LEVEL 1

struct zstd_pool;

struct zstd_job {
  bool decompress;            /* else compress */
  const uint8_t *in;          /* the bytes to (de)compress */
  size_t in_len;
  uint8_t *out;               /* room for @out_cap bytes */
  size_t out_cap;
  /* Set by the worker before @done: */
  size_t out_len;             /* bytes at @out; compress: 0 if they did not
                                 fit in @out_cap (the data did not shrink) */
  const char *error;          /* decompress: zstd's reason, or NULL; "more"
                                 (ZSTD_POOL_TOO_LONG) if the frame holds more
                                 than @out_cap bytes */
  bool done;                  /* atomic: the worker has finished */
};

/* zstd's error for a frame that holds more than the room given. */
extern const char ZSTD_POOL_TOO_LONG[];

/* @threads workers; each job done sets *@kicked (atomically) and wakes
 * the default main context. */
struct zstd_pool *zstd_pool_new (unsigned threads, bool *kicked);
/* Queue @job (its @done is cleared first). */
void zstd_pool_push (struct zstd_pool *pool, struct zstd_job *job);
bool zstd_job_done (const struct zstd_job *job);
/* Stop the workers, after the job each is on (the rest are not run, and
 * stay not done); NULL is allowed. */
void zstd_pool_free (struct zstd_pool *pool);

#endif
