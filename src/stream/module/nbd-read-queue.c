/* ferry: the ordered read queue of a pipelined reader (nbd-read-queue.h). */
#include <config.h>

#include <inttypes.h>

#include "error.h"
#include "nbd-ranges.h"
#include "nbd-read-queue.h"

/* A block status is done (the map's callback, with the handle locked). */
static void
map_done (void *data, GError *error)
{
  struct nbd_read_queue *q = data;

  __atomic_store_n (q->kicked, true, __ATOMIC_RELEASE);
  if (error)
    nbd_range_keep_failure (q->failure, error);
}

void
nbd_read_queue_init (struct nbd_read_queue *q, struct nbd_export *e,
                     uint64_t in_flight_limit, uint64_t *requests, bool *kicked,
                     GError **failure, size_t read_size, void (*clear) (struct nbd_read *r))
{
  *q = (struct nbd_read_queue) { .export = e, .in_flight_limit = in_flight_limit,
                                 .requests = requests, .kicked = kicked, .failure = failure,
                                 .read_size = read_size, .clear = clear };
  g_queue_init (&q->reads);
  buffer_arena_init (&q->arena, in_flight_limit, e->request_size);
}

void
nbd_read_queue_range (struct nbd_read_queue *q, uint64_t start, uint64_t end)
{
  q->next_offset = start;
  q->end = end;
  nbd_map_clear (&q->map);
  nbd_map_init (&q->map, q->export, start, end, q->requests, map_done, q);
}

/* A read is done (libnbd's callback, with the handle locked). */
static int
read_done (void *data, int *error)
{
  struct nbd_read *r = data;

  r->queue->reads_in_flight--;
  return nbd_command_done (&r->io, error);
}

void
nbd_read_queue_issue (struct nbd_read_queue *q)
{
  while (!*q->failure && q->next_offset < q->end) {
    uint64_t length;
    bool zero = nbd_map_next_read (&q->map, q->next_offset, q->in_flight,
                                   q->in_flight_limit, &length);

    if (length == 0)
      break;
    struct nbd_read *r = g_malloc0 (q->read_size);
    r->queue = q;
    r->refs = 1;
    r->offset = q->next_offset;
    r->length = length;
    if (zero) {
      r->io.done = true;
    } else {
      r->buf = buffer_arena_take (&q->arena, length, &r->piece);
      r->io.kicked = q->kicked;
      q->in_flight += length;
      (*q->requests)++;
      /* read_done may already have run when this returns. */
      q->reads_in_flight++;
      if (!nbd_export_pread (q->export, r->buf, length, r->offset, &r->io.conn,
                             (nbd_completion_callback) { .callback = read_done,
                                                         .user_data = r },
                             &r->io.error)) {
        r->io.done = true;
        q->reads_in_flight--;
      }
    }
    g_queue_push_tail (&q->reads, r);
    q->next_offset += length;
  }
}

struct nbd_read *
nbd_read_queue_ready (struct nbd_read_queue *q)
{
  struct nbd_read *r = g_queue_peek_head (&q->reads);

  if (!r || !r->io.done || *q->failure)
    return NULL;
  if (r->io.error) {
    nbd_range_keep_failure (q->failure,
                            g_error_new (FERRY_ERROR, FERRY_EXIT_NBD,
                                         "%s: read at offset %" PRIu64 " (%" PRIu64 " bytes) "
                                         "failed: %s", q->export->name, r->offset, r->length,
                                         nbd_export_strerror (r->io.error)));
    return NULL;
  }
  return r;
}

void
nbd_read_queue_pop (struct nbd_read_queue *q)
{
  nbd_read_unref (g_queue_pop_head (&q->reads));
}

void
nbd_read_unref (void *read)
{
  struct nbd_read *r = read;

  if (--r->refs > 0)
    return;
  r->queue->in_flight -= r->buf ? r->length : 0;
  if (r->queue->clear)
    r->queue->clear (r);
  buffer_arena_give (&r->queue->arena, r->buf, r->piece);
  g_free (r);
}

void
nbd_read_queue_clear (struct nbd_read_queue *q)
{
  while (!g_queue_is_empty (&q->reads))
    nbd_read_queue_pop (q);
  nbd_map_clear (&q->map);
  buffer_arena_clear (&q->arena);
}
