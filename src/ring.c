/* ferry: fixed-size byte ring. */
#include "ring.h"

#include <glib.h>

void
ring_init (struct ring *ring, size_t size)
{
  g_assert (size > 0);
  ring->data = g_malloc (size);
  ring->size = size;
  ring->head = 0;
  ring->len = 0;
}

void
ring_free (struct ring *ring)
{
  g_clear_pointer (&ring->data, g_free);
  ring->size = ring->head = ring->len = 0;
}

int
ring_free_iov (const struct ring *ring, struct iovec iov[2])
{
  size_t tail = (ring->head + ring->len) % ring->size;
  size_t space = ring->size - ring->len;
  size_t first = MIN (space, ring->size - tail);

  if (space == 0)
    return 0;
  iov[0].iov_base = ring->data + tail;
  iov[0].iov_len = first;
  if (first == space)
    return 1;
  iov[1].iov_base = ring->data;
  iov[1].iov_len = space - first;
  return 2;
}

int
ring_data_iov (const struct ring *ring, struct iovec iov[2])
{
  size_t first = MIN (ring->len, ring->size - ring->head);

  if (ring->len == 0)
    return 0;
  iov[0].iov_base = ring->data + ring->head;
  iov[0].iov_len = first;
  if (first == ring->len)
    return 1;
  iov[1].iov_base = ring->data;
  iov[1].iov_len = ring->len - first;
  return 2;
}

void
ring_produce (struct ring *ring, size_t n)
{
  g_assert (n <= ring->size - ring->len);
  ring->len += n;
}

void
ring_consume (struct ring *ring, size_t n)
{
  g_assert (n <= ring->len);
  ring->len -= n;
  /* Once empty, start again at offset 0 so the next fill is contiguous:
   * this only moves an offset, never bytes. */
  ring->head = ring->len == 0 ? 0 : (ring->head + n) % ring->size;
}
