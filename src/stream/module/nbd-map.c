/* ferry: the allocation map ahead of a reader (nbd-map.h), from the
 * export's block status (export-ops.h: an NBD server's base:allocation,
 * or a file's SEEK_DATA and SEEK_HOLE). */
#include <config.h>

#include <inttypes.h>
#include <string.h>

#include "error.h"
#include "nbd-map.h"
#include "nbd-stream-format.h"

#define B STREAM_BLOCK_SIZE
/* Zero runs are merged over map windows up to this length. */
#define MAX_ZERO_RECORD (64ull << 30)

void
nbd_map_init (struct nbd_map *m, struct nbd_export *e, uint64_t start, uint64_t limit,
              uint64_t *requests, void (*done) (void *data, GError *error), void *data)
{
  *m = (struct nbd_map) { .export = e, .end = start, .limit = limit,
                          .requests = requests, .done = done, .data = data };
  m->extents = g_array_new (FALSE, FALSE, sizeof (struct nbd_extent));
  if (!e->has_map) {
    struct nbd_extent all = { start, limit - start, false };
    g_array_append_val (m->extents, all);
    m->end = limit;
  }
}

void
nbd_map_clear (struct nbd_map *m)
{
  g_clear_pointer (&m->extents, g_array_unref);
}

static int
extent_entries (void *data, const char *context, uint64_t offset, uint32_t *entries,
                size_t n, int *error)
{
  struct nbd_map *m = data;

  if (strcmp (context, LIBNBD_CONTEXT_BASE_ALLOCATION) != 0 || *error)
    return 0;
  /* A server may answer for less than was asked, never for more. */
  for (size_t i = 0; i + 1 < n && offset < m->asked; i += 2) {
    struct nbd_extent e = { offset, entries[i], entries[i + 1] & LIBNBD_STATE_ZERO };
    if (e.length == 0)
      break;
    if (e.length > m->asked - offset)
      e.length = m->asked - offset;
    g_array_append_val (m->extents, e);
    offset += e.length;
    m->end = offset;
  }
  return 0;
}

static int
map_done (void *data, int *error)
{
  struct nbd_map *m = data;

  m->pending = false;
  m->export->conn[0].in_flight--;
  m->done (m->data, *error ? g_error_new (FERRY_ERROR, FERRY_EXIT_NBD,
                                          "%s: block status at offset %" PRIu64 " failed: %s",
                                          m->export->name, m->end, nbd_export_strerror (*error))
                           : NULL);
  return 1;
}

static void
ask_map (struct nbd_map *m)
{
  struct nbd_export *e = m->export;
  struct nbd_conn *c = &e->conn[0];
  uint64_t count = MIN (NBD_STREAM_MAP_WINDOW, m->limit - m->end);
  int error;

  m->asked = m->end + count;
  m->pending = true;
  c->in_flight++;
  (*m->requests)++;
  if (!e->ops->block_status (e, c, count, m->end,
                             (nbd_extent_callback) { .callback = extent_entries,
                                                     .user_data = m },
                             (nbd_completion_callback) { .callback = map_done,
                                                         .user_data = m },
                             &error)) {
    c->in_flight--;
    m->pending = false;
    m->done (m->data, g_error_new (FERRY_ERROR, FERRY_EXIT_NBD,
                                   "%s: block status at offset %" PRIu64 ": %s",
                                   e->name, m->end, nbd_export_strerror (error)));
  }
}

/* nbd_map_next without the block status requests. */
static bool
next_range (struct nbd_map *m, uint64_t off, uint64_t *length)
{
  uint64_t size = m->limit;
  guint i = m->first;

  *length = 0;
  while (i < m->extents->len) {
    struct nbd_extent *e = &g_array_index (m->extents, struct nbd_extent, i);
    if (e->offset + e->length > off)
      break;
    i++;
  }
  m->first = i;
  if (i == m->extents->len)
    return false;                       /* wait for the map */
  struct nbd_extent *e = &g_array_index (m->extents, struct nbd_extent, i);
  if (e->zero) {
    uint64_t end = e->offset + e->length;
    for (guint j = i + 1; j < m->extents->len; j++) {
      struct nbd_extent *f = &g_array_index (m->extents, struct nbd_extent, j);
      if (!f->zero)
        break;
      end = f->offset + f->length;
    }
    /* A zero run that reaches the map's end may go on: wait for the next
     * window, so that holes cross as few records as possible. */
    if (end == m->end && end < size && end - off < MAX_ZERO_RECORD)
      return false;
    if (end < size)
      end -= end % B;
    if (end > off) {
      *length = end - off;
      return true;
    }
    if (end == m->end && end < size && m->end - off < B)
      return false;                     /* a block not mapped to its end yet */
  }
  /* Data: up to a request, and to the first block that may be all zero. */
  uint64_t end = MIN (off + m->export->request_size, size);
  for (guint j = i + 1; j < m->extents->len; j++) {
    struct nbd_extent *f = &g_array_index (m->extents, struct nbd_extent, j);
    if (f->offset >= end)
      break;
    if (f->zero) {
      uint64_t z = f->offset + (B - f->offset % B) % B;
      if (z > off && z < end)
        end = z;
      break;
    }
  }
  if (end > m->end) {
    if (m->end < size && m->end - m->end % B <= off)
      return false;
    if (m->end < size)
      end = m->end - m->end % B;
  }
  *length = end - off;
  return false;
}

bool
nbd_map_next (struct nbd_map *m, uint64_t pos, uint64_t *length)
{
  bool zero;

  if (m->end < m->limit && !m->pending && m->end - pos < NBD_STREAM_MAP_WINDOW / 2)
    ask_map (m);
  zero = next_range (m, pos, length);
  if (*length == 0 && !m->pending && m->end < m->limit)
    ask_map (m);
  return zero;
}

bool
nbd_map_next_read (struct nbd_map *m, uint64_t pos, uint64_t in_flight, uint64_t limit,
                   uint64_t *length)
{
  struct nbd_export *e = m->export;
  bool zero = nbd_map_next (m, pos, length);

  if (!zero && ((in_flight + *length > limit && in_flight > 0) ||
                nbd_export_in_flight (e) >= e->n_conns * NBD_STREAM_REQUESTS_PER_CONNECTION))
    *length = 0;
  return zero;
}
