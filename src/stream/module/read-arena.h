/* ferry: the buffers of a read queue (nbd-read-queue.c), from one mapping
 * advised for transparent huge pages.  A reader's window of reads in
 * flight (32 MiB by default) is then faulted in 2 MiB at a time, not 4 KiB:
 * a page fault costs microseconds, and 8192 of them per window showed as
 * a seventh of a --delta copy's CPU.  Buffers are taken at the head of a
 * ring and given back in about the order taken (a queue releases its
 * reads in offset order, give or take their hashing); the tail moves
 * over those given back.  A buffer that does not fit comes from the
 * heap instead.  Main loop only. */
#ifndef FERRY_READ_ARENA_H
#define FERRY_READ_ARENA_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

struct read_arena {
  size_t size;                /* the ring's bytes, 0 until the first take */
  size_t capacity;            /* read_arena_init's wish */
  uint8_t *map;               /* the mapping (size + the alignment's slack),
                                 or MAP_FAILED: every buffer from the heap */
  size_t map_size;
  uint8_t *base;              /* the ring: map aligned to 2 MiB */
  size_t head;                /* the next buffer starts here, or wraps to 0 */
  GQueue taken;               /* struct arena_piece, in the order taken */
};

/* An arena of @capacity bytes, mapped at the first take. */
void read_arena_init (struct read_arena *a, size_t capacity);
/* @length bytes; *@piece is what read_arena_give needs back. */
uint8_t *read_arena_take (struct read_arena *a, size_t length, void **piece);
/* Give back a buffer that read_arena_take returned with @piece. */
void read_arena_give (struct read_arena *a, uint8_t *buf, void *piece);
/* Unmap the ring, once every buffer was given back. */
void read_arena_clear (struct read_arena *a);

#endif
