/* ferry: the block-hash image digest (doc/nbd-stream.md, section 5). */
#include "blkhash.h"
#include "kick.h"

#include <glib.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One job: data to hash, or a zero run (@data NULL), or the end (@len 0);
 * with @known, @data holds the digests of @len bytes' blocks. */
struct job {
  const uint8_t *data;
  uint64_t len;
  bool known;
  void (*release) (void *arg);
  void *arg;
};

struct blkhash_worker {
  GThread *thread;
  GAsyncQueue *todo;          /* struct job, in order */
  GAsyncQueue *done;          /* struct job, hashed, to release */
  bool *kicked;
  bool stop;                  /* blkhash_clear: release, do not hash */
};

static void run_job (struct blkhash *b, const struct job *j);

static gpointer
worker_main (gpointer data)
{
  struct blkhash *b = data;
  struct blkhash_worker *w = b->worker;

  for (;;) {
    struct job *j = g_async_queue_pop (w->todo);
    bool end = j->len == 0;
    if (!end && !__atomic_load_n (&w->stop, __ATOMIC_ACQUIRE))
      run_job (b, j);
    g_async_queue_push (w->done, j);
    kick_from_thread (w->kicked);
    if (end)
      return NULL;
  }
}

void
blkhash_start_worker (struct blkhash *b, bool *kicked)
{
  struct blkhash_worker *w = g_new0 (struct blkhash_worker, 1);

  w->todo = g_async_queue_new ();
  w->done = g_async_queue_new ();
  w->kicked = kicked;
  b->worker = w;
  w->thread = g_thread_new ("ferry-blkhash", worker_main, b);
}

static void
push (struct blkhash *b, const uint8_t *data, uint64_t len, bool known,
      void (*release) (void *arg), void *arg)
{
  struct job *j = g_new (struct job, 1);

  *j = (struct job) { data, len, known, release, arg };
  g_async_queue_push (b->worker->todo, j);
}

static void
release_done (struct blkhash_worker *w, bool wait_for_end)
{
  for (;;) {
    struct job *j = wait_for_end ? g_async_queue_pop (w->done)
                                 : g_async_queue_try_pop (w->done);
    if (j == NULL)
      return;
    bool end = j->len == 0;
    if (j->release)
      j->release (j->arg);
    g_free (j);
    if (end)
      return;
  }
}

void
blkhash_collect (struct blkhash *b)
{
  if (b->worker)
    release_done (b->worker, false);
}

/* Wait for every job, release them all, join the thread. */
static void
stop_worker (struct blkhash *b, bool hash_the_rest)
{
  struct blkhash_worker *w = b->worker;

  if (!w)
    return;
  if (!hash_the_rest)
    __atomic_store_n (&w->stop, true, __ATOMIC_RELEASE);
  push (b, NULL, 0, false, NULL, NULL);
  release_done (w, true);
  g_thread_join (w->thread);
  g_async_queue_unref (w->todo);
  g_async_queue_unref (w->done);
  g_free (w);
  b->worker = NULL;
}

bool
blkhash_init (struct blkhash *b, uint64_t size, uint32_t block_size)
{
  unsigned char *zeros = calloc (1, block_size);

  b->worker = NULL;
  b->blocks = NULL;
  b->outer = EVP_MD_CTX_new ();
  b->size = size;
  b->next = 0;
  b->block_size = block_size;
  b->blocks = NULL;
  b->blocks_from = 0;
  if (!zeros || !b->outer || !EVP_DigestInit_ex (b->outer, EVP_sha256 (), NULL)) {
    free (zeros);
    blkhash_clear (b);
    return false;
  }
  SHA256 (zeros, block_size, b->zero_digest);
  free (zeros);
  return true;
}

void
blkhash_keep_blocks (struct blkhash *b, uint64_t offset, uint8_t *digests)
{
  b->next = offset;
  b->blocks = digests;
  b->blocks_from = offset;
}

/* The digest @d of the block of @len bytes at b->next. */
static void
add_block (struct blkhash *b, const unsigned char d[BLKHASH_SIZE], uint64_t len)
{
  EVP_DigestUpdate (b->outer, d, BLKHASH_SIZE);
  if (b->blocks)
    memcpy (b->blocks + (b->next - b->blocks_from) / b->block_size * BLKHASH_SIZE, d,
            BLKHASH_SIZE);
  b->next += len;
}

static void
hash_data (struct blkhash *b, const uint8_t *buf, size_t len)
{
  unsigned char d[BLKHASH_SIZE];

  while (len > 0) {
    size_t n = len < b->block_size ? len : b->block_size;
    SHA256 (buf, n, d);
    add_block (b, d, n);
    buf += n;
    len -= n;
  }
}

static void
hash_zero (struct blkhash *b, uint64_t len)
{
  while (len >= b->block_size) {
    add_block (b, b->zero_digest, b->block_size);
    len -= b->block_size;
  }
  if (len > 0) {
    /* Only the image's last block is short. */
    unsigned char *zeros = calloc (1, len);
    if (zeros)
      hash_data (b, zeros, len);
    free (zeros);
  }
}

static void
add_known (struct blkhash *b, const uint8_t *digests, uint64_t len)
{
  for (; len > 0; digests += BLKHASH_SIZE) {
    uint64_t n = len < b->block_size ? len : b->block_size;
    add_block (b, digests, n);
    len -= n;
  }
}

static void
run_job (struct blkhash *b, const struct job *j)
{
  if (j->known)
    add_known (b, j->data, j->len);
  else if (j->data)
    hash_data (b, j->data, j->len);
  else
    hash_zero (b, j->len);
}

void
blkhash_data (struct blkhash *b, const uint8_t *buf, size_t len)
{
  blkhash_data_async (b, buf, len, NULL, NULL);
}

void
blkhash_data_async (struct blkhash *b, const uint8_t *data, size_t len,
                    void (*release) (void *arg), void *arg)
{
  if (len == 0) {
    if (release)
      release (arg);
  } else if (b->worker) {
    push (b, data, len, false, release, arg);
  } else {
    hash_data (b, data, len);
    if (release)
      release (arg);
  }
}

void
blkhash_zero (struct blkhash *b, uint64_t len)
{
  if (len == 0)
    return;
  if (b->worker)
    push (b, NULL, len, false, NULL, NULL);
  else
    hash_zero (b, len);
}

void
blkhash_known (struct blkhash *b, const uint8_t *digests, uint64_t len)
{
  if (len == 0)
    return;
  if (b->worker) {
    push (b, digests, len, true, NULL, NULL);
  } else {
    add_known (b, digests, len);
  }
}

void
blkhash_final (struct blkhash *b, unsigned char out[BLKHASH_SIZE])
{
  unsigned char le[8];
  unsigned len;

  stop_worker (b, true);
  for (int i = 0; i < 8; i++)
    le[i] = (b->size >> (8 * i)) & 0xFF;
  EVP_DigestUpdate (b->outer, le, sizeof le);
  EVP_DigestFinal_ex (b->outer, out, &len);
  blkhash_clear (b);
}

void
blkhash_clear (struct blkhash *b)
{
  stop_worker (b, false);
  EVP_MD_CTX_free (b->outer);
  b->outer = NULL;
}

void
blkhash_hex (const unsigned char digest[BLKHASH_SIZE], char hex[2 * BLKHASH_SIZE + 1])
{
  for (int i = 0; i < BLKHASH_SIZE; i++)
    sprintf (hex + 2 * i, "%02x", digest[i]);
}
