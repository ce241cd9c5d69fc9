/* ferry: the I/O buffers of a pipelined reader's window (a read queue's
 * reads, nbd-read-queue.c) or of a receiver's records (nbd-receive.c),
 * from one mapping advised for transparent huge pages.  The window
 * (--in-flight, 32 MiB by default) is then faulted in 2 MiB at a time,
 * not 4 KiB: a page fault costs microseconds, and 8192 of them per window
 * showed as a seventh of a --delta copy's CPU.  Buffers are taken at the
 * head of a ring and given back in about the order taken (in offset
 * order, give or take their hashing and the connections' replies); the
 * tail moves over those given back.  A buffer that does not fit comes
 * from the heap instead.  Main loop only. */
#ifndef FERRY_BUFFER_ARENA_H
#define FERRY_BUFFER_ARENA_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

struct buffer_arena {
  size_t size;                /* the ring's bytes, 0 until the first take */
  size_t capacity;            /* what buffer_arena_init asked for, in whole
                                 huge pages */
  uint8_t *map;               /* the mapping (size + the alignment's slack),
                                 or MAP_FAILED: every buffer from the heap */
  size_t map_size;
  uint8_t *base;              /* the ring: map aligned to 2 MiB */
  size_t head;                /* the next buffer starts here, or wraps to 0 */
  GQueue taken;               /* struct arena_piece, in the order taken */
};

/* An arena for a window of @window bytes held at most, plus the one
 * buffer of at most @largest bytes that may always go beyond it and the
 * end (less than @largest) that a wrap leaves unused; mapped at the first
 * take. */
void buffer_arena_init (struct buffer_arena *a, uint64_t window, uint64_t largest);
/* @length bytes; *@piece is what buffer_arena_give needs back. */
uint8_t *buffer_arena_take (struct buffer_arena *a, size_t length, void **piece);
/* Give back a buffer that buffer_arena_take returned with @piece. */
void buffer_arena_give (struct buffer_arena *a, uint8_t *buf, void *piece);
/* Unmap the ring, once every buffer was given back. */
void buffer_arena_clear (struct buffer_arena *a);

#endif
