/* ferry: fixed-size byte ring. */
#include <config.h>

#include "ring.h"

#include <errno.h>
#include <sys/uio.h>

#include <glib.h>

struct ring {
  struct buffer base;
  char *data;                 /* base.size bytes */
  size_t head;                /* offset of the oldest buffered byte */
};

/* Fill @iov with the @count bytes of storage from offset @start on,
 * wrapping at the end; returns the count of non-empty entries. */
static int
ring_iov (const struct ring *r, size_t start, size_t count, struct iovec iov[2])
{
  size_t first = MIN (count, r->base.size - start);

  if (count == 0)
    return 0;
  iov[0].iov_base = r->data + start;
  iov[0].iov_len = first;
  if (first == count)
    return 1;
  iov[1].iov_base = r->data;
  iov[1].iov_len = count - first;
  return 2;
}

static ssize_t
ring_fill (struct buffer *b, struct endpoint *src)
{
  struct ring *r = (struct ring *) b;
  struct iovec iov[2];
  int n_iov = ring_iov (r, (r->head + b->len) % b->size, b->size - b->len, iov);
  ssize_t n;

  if (n_iov == 0) {
    errno = EAGAIN;
    return -1;
  }
  n = src->ops->readv (src, iov, n_iov);
  if (n > 0)
    buffer_produced (b, n);
  return n;
}

static ssize_t
ring_drain (struct buffer *b, struct endpoint *dst)
{
  struct ring *r = (struct ring *) b;
  struct iovec iov[2];
  int n_iov = ring_iov (r, r->head, b->len, iov);
  ssize_t n;

  if (n_iov == 0)
    return 0;
  n = dst->ops->writev (dst, iov, n_iov);
  if (n > 0) {
    buffer_consumed (b, n);
    /* Once empty, start again at offset 0 so the next fill is contiguous:
     * this only moves an offset, never bytes. */
    r->head = b->len == 0 ? 0 : (r->head + n) % b->size;
  }
  return n;
}

static void
ring_free (struct buffer *b)
{
  struct ring *r = (struct ring *) b;

  g_free (r->data);
  g_free (r);
}

static const struct buffer_ops ring_ops = {
  .fill = ring_fill,
  .drain = ring_drain,
  .free = ring_free,
};

struct buffer *
ring_new (size_t size)
{
  struct ring *r = g_new0 (struct ring, 1);

  g_assert (size > 0);
  r->base.ops = &ring_ops;
  r->base.size = size;
  r->data = g_malloc (size);
  return &r->base;
}
