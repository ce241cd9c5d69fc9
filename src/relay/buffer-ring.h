/* ferry: the copying buffer, a fixed-size byte ring in memory (buffer-ring.c).
 *
 * The storage is allocated once and never reallocated.  Head and length
 * offsets mean a partial write just advances the head: no memmove.  Used
 * where an end cannot splice, or with --no-splice. */
#ifndef FERRY_BUFFER_RING_H
#define FERRY_BUFFER_RING_H

#include <stddef.h>
#include <stdint.h>

#include "buffer.h"

/* A ring of @size bytes, mapped on its own so that freeing it returns the
 * memory; never fails (aborts as g_malloc does). */
struct buffer *buffer_ring_new (size_t size);

/* An inspector sees the @n bytes each fill has just read, at logical
 * offsets [len, len + n) from the oldest buffered byte, before they count
 * as buffered; it may edit them in place with the calls below and returns
 * how many bytes to add to the buffered ones.  At end of stream it is
 * called with @n == 0.  Fills leave @reserve bytes free for its inserts. */
typedef size_t (*buffer_ring_inspect_fn) (void *data, struct buffer *ring, size_t n);
void buffer_ring_set_inspector (struct buffer *ring, buffer_ring_inspect_fn fn, void *data,
                                size_t reserve);

/* The byte at logical offset @at, and how many follow it contiguously. */
uint8_t *buffer_ring_at (struct buffer *ring, size_t at, size_t *contiguous);
/* Copy @n bytes from logical offset @from to @to; the ranges may overlap. */
void buffer_ring_move (struct buffer *ring, size_t to, size_t from, size_t n);
/* Copy @n bytes of @src to logical offset @to. */
void buffer_ring_write (struct buffer *ring, size_t to, const void *src, size_t n);

#endif
