/* ferry: fixed-size byte ring. */
#include <config.h>

#include "buffer-ring.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include <glib.h>

struct ring {
  struct buffer base;
  char *data;                 /* base.size bytes, mapped for the ring alone */
  size_t head;                /* offset of the oldest buffered byte */
  buffer_ring_inspect_fn inspect;    /* may be NULL */
  void *inspect_data;
  size_t reserve;             /* free bytes fills leave for the inspector */
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

  /* Keep the inspector's reserve free: trim it off the end. */
  for (size_t cut = r->reserve; cut > 0 && n_iov > 0;) {
    size_t c = MIN (cut, iov[n_iov - 1].iov_len);
    iov[n_iov - 1].iov_len -= c;
    cut -= c;
    if (iov[n_iov - 1].iov_len == 0)
      n_iov--;
  }
  if (n_iov == 0) {
    /* Full as far as readers go, until a drain makes room. */
    b->blocked = r->reserve > 0;
    errno = EAGAIN;
    return -1;
  }
  n = src->ops->readv (src, iov, n_iov);
  if (n < 0 && errno == ENOBUFS) {
    /* The source wants more room than is free: full until a drain. */
    b->blocked = true;
    errno = EAGAIN;
  } else if (n >= 0 && r->inspect)
    buffer_produced (b, r->inspect (r->inspect_data, b, n));
  else if (n > 0)
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

void
buffer_ring_set_inspector (struct buffer *b, buffer_ring_inspect_fn fn, void *data,
                           size_t reserve)
{
  struct ring *r = (struct ring *) b;

  r->inspect = fn;
  r->inspect_data = data;
  r->reserve = reserve;
}

uint8_t *
buffer_ring_at (struct buffer *b, size_t at, size_t *contiguous)
{
  struct ring *r = (struct ring *) b;
  size_t i = (r->head + at) % b->size;

  *contiguous = b->size - i;
  return (uint8_t *) r->data + i;
}

void
buffer_ring_move (struct buffer *b, size_t to, size_t from, size_t n)
{
  /* In pieces that wrap neither range; forwards when moving down, else
   * backwards, so an overlap never overwrites bytes not yet moved. */
  while (n > 0) {
    size_t ct, cf, k;
    if (to < from) {
      uint8_t *d = buffer_ring_at (b, to, &ct), *s = buffer_ring_at (b, from, &cf);
      k = MIN (n, MIN (ct, cf));
      memmove (d, s, k);
      to += k, from += k;
    } else {
      /* The last byte of each range, and how many precede it contiguously. */
      size_t dt = (((struct ring *) b)->head + to + n - 1) % b->size + 1;
      size_t df = (((struct ring *) b)->head + from + n - 1) % b->size + 1;
      k = MIN (n, MIN (dt, df));
      memmove (((struct ring *) b)->data + dt - k, ((struct ring *) b)->data + df - k, k);
    }
    n -= k;
  }
}

void
buffer_ring_write (struct buffer *b, size_t to, const void *src, size_t n)
{
  const uint8_t *s = src;

  while (n > 0) {
    size_t c;
    uint8_t *d = buffer_ring_at (b, to, &c);
    c = MIN (c, n);
    memcpy (d, s, c);
    s += c, to += c, n -= c;
  }
}

static void
ring_free (struct buffer *b)
{
  struct ring *r = (struct ring *) b;

  munmap (r->data, r->base.size);
  g_free (r);
}

static const struct buffer_ops ring_ops = {
  .fill = ring_fill,
  .drain = ring_drain,
  .free = ring_free,
};

struct buffer *
buffer_ring_new (size_t size)
{
  struct ring *r = g_new0 (struct ring, 1);

  g_assert (size > 0);
  r->base.ops = &ring_ops;
  r->base.size = size;
  /* Mapped, not malloc'd: glib's malloc keeps freed blocks of this size in
   * its arenas, so a forwarder's memory would stay at its peak after the
   * connections are gone; an unmap returns it. */
  r->data = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r->data == MAP_FAILED)
    g_error ("cannot map a %zu-byte ring buffer: %s", size, g_strerror (errno));
  return &r->base;
}
