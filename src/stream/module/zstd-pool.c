/* ferry: zstd on worker threads (zstd-pool.h). */
#include "zstd-pool.h"
#include "kick.h"

#include <glib.h>
#include <zstd.h>
#include <zstd_errors.h>

const char ZSTD_POOL_TOO_LONG[] = "more";

struct zstd_pool {
  GThread **threads;
  unsigned n_threads;
  GAsyncQueue *todo;          /* struct zstd_job; the pool itself: stop */
  bool *kicked;
};

static void
run_job (struct zstd_job *j, ZSTD_CCtx **cctx, ZSTD_DCtx **dctx)
{
  size_t n;

  if (j->decompress) {
    if (!*dctx)
      *dctx = ZSTD_createDCtx ();
    /* One pass into the caller's room: zstd allocates nothing from the
     * frame's header, and a frame that holds more fails. */
    if (!*dctx) {
      j->error = "cannot allocate zstd's context";
      return;
    }
    n = ZSTD_decompressDCtx (*dctx, j->out, j->out_cap, j->in, j->in_len);
    j->error = !ZSTD_isError (n) ? NULL
             : ZSTD_getErrorCode (n) == ZSTD_error_dstSize_tooSmall ? ZSTD_POOL_TOO_LONG
             : ZSTD_getErrorName (n);
    j->out_len = ZSTD_isError (n) ? 0 : n;
    return;
  }
  if (!*cctx)
    *cctx = ZSTD_createCCtx ();
  /* Without a context the data goes as it is. */
  n = *cctx ? ZSTD_compressCCtx (*cctx, j->out, j->out_cap, j->in, j->in_len, ZSTD_POOL_LEVEL)
            : 0;
  j->out_len = ZSTD_isError (n) ? 0 : n;
}

static gpointer
worker_main (gpointer data)
{
  struct zstd_pool *pool = data;
  ZSTD_CCtx *cctx = NULL;
  ZSTD_DCtx *dctx = NULL;
  void *item;

  while ((item = g_async_queue_pop (pool->todo)) != pool) {
    struct zstd_job *j = item;
    run_job (j, &cctx, &dctx);
    __atomic_store_n (&j->done, true, __ATOMIC_RELEASE);
    kick_from_thread (pool->kicked);
  }
  ZSTD_freeCCtx (cctx);
  ZSTD_freeDCtx (dctx);
  return NULL;
}

struct zstd_pool *
zstd_pool_new (unsigned threads, bool *kicked)
{
  struct zstd_pool *pool = g_new0 (struct zstd_pool, 1);

  pool->todo = g_async_queue_new ();
  pool->kicked = kicked;
  pool->n_threads = threads;
  pool->threads = g_new (GThread *, threads);
  for (unsigned i = 0; i < threads; i++)
    pool->threads[i] = g_thread_new ("ferry-zstd", worker_main, pool);
  return pool;
}

void
zstd_pool_push (struct zstd_pool *pool, struct zstd_job *job)
{
  job->done = false;
  g_async_queue_push (pool->todo, job);
}

bool
zstd_job_done (const struct zstd_job *job)
{
  return __atomic_load_n (&job->done, __ATOMIC_ACQUIRE);
}

void
zstd_pool_free (struct zstd_pool *pool)
{
  if (!pool)
    return;
  /* The stops go first: the jobs still queued are dropped. */
  for (unsigned i = 0; i < pool->n_threads; i++)
    g_async_queue_push_front (pool->todo, pool);
  for (unsigned i = 0; i < pool->n_threads; i++)
    g_thread_join (pool->threads[i]);
  g_async_queue_unref (pool->todo);
  g_free (pool->threads);
  g_free (pool);
}
