/* ferry: the copying buffer, a fixed-size byte ring in memory.
 *
 * The storage is allocated once and never reallocated.  Head and length
 * offsets mean a partial write just advances the head: no memmove.  Used
 * where an end cannot splice, or with --no-splice. */
#ifndef FERRY_RING_H
#define FERRY_RING_H

#include "buffer.h"

/* A ring of @size bytes; never fails. */
struct buffer *ring_new (size_t size);

#endif
