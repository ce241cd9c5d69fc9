/* ferry: a fixed-size byte ring, one per relay direction.
 *
 * The storage is allocated once and never reallocated.  Head and length
 * offsets mean a partial write just advances the head: no memmove. */
#ifndef FERRY_RING_H
#define FERRY_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

struct ring {
  char *data;       /* @size bytes, allocated by ring_init */
  size_t size;      /* capacity in bytes, fixed for the ring's life */
  size_t head;      /* offset of the oldest buffered byte */
  size_t len;       /* number of buffered bytes */
};

void ring_init (struct ring *ring, size_t size);
void ring_free (struct ring *ring);

static inline bool ring_is_empty (const struct ring *ring) { return ring->len == 0; }
static inline bool ring_is_full (const struct ring *ring) { return ring->len == ring->size; }

/* Fill @iov (2 entries) with the free space, in order; returns the count
 * of non-empty entries (0 when full). */
int ring_free_iov (const struct ring *ring, struct iovec iov[2]);
/* Fill @iov (2 entries) with the buffered bytes, oldest first; returns the
 * count of non-empty entries (0 when empty). */
int ring_data_iov (const struct ring *ring, struct iovec iov[2]);

/* Account for @n bytes written into the free space / consumed from the data. */
void ring_produce (struct ring *ring, size_t n);
void ring_consume (struct ring *ring, size_t n);

#endif
