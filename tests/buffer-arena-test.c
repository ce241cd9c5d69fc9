/* Unit test of the I/O buffers' ring (src/stream/module/buffer-arena.h):
 * buffers taken in order and given back in order or not, the wrap to the
 * ring's start, the room between head and tail once wrapped, what does
 * not fit going to the heap, and a fresh start once all are back.  Every
 * buffer is filled with its own byte and checked before it goes back, so
 * that an overlap (or, under ASan, a poisoned byte) shows. */
#include <glib.h>
#include <stdbool.h>
#include <string.h>

#include "buffer-arena.h"

#define MiB ((size_t) 1024 * 1024)

struct held {
  uint8_t *buf;
  size_t length;
  void *piece;
  uint8_t fill;
};

static struct held
take (struct buffer_arena *a, size_t length, uint8_t fill)
{
  struct held h = { .length = length, .fill = fill };

  h.buf = buffer_arena_take (a, length, &h.piece);
  memset (h.buf, fill, length);
  return h;
}

static bool
in_ring (const struct buffer_arena *a, const struct held *h)
{
  return h->piece != NULL && h->buf >= a->base && h->buf + h->length <= a->base + a->size;
}

static void
give (struct buffer_arena *a, struct held *h)
{
  for (size_t i = 0; i < h->length; i++)
    g_assert_cmpuint (h->buf[i], ==, h->fill);
  buffer_arena_give (a, h->buf, h->piece);
}

/* Taken in order fill the ring end to end; one more goes to the heap; the
 * first given back makes room at the start. */
static void
test_in_order (void)
{
  struct buffer_arena a;
  struct held h[5];

  buffer_arena_init (&a, 4 * MiB, 0);
  for (int i = 0; i < 4; i++) {
    h[i] = take (&a, MiB, 'a' + i);
    g_assert_true (in_ring (&a, &h[i]));
    g_assert_true (h[i].buf == a.base + i * MiB);
  }
  h[4] = take (&a, MiB, 'e');
  g_assert_false (in_ring (&a, &h[4]));
  give (&a, &h[4]);
  give (&a, &h[0]);
  h[0] = take (&a, MiB, 'f');
  g_assert_true (h[0].buf == a.base);
  for (int i = 0; i < 4; i++)
    give (&a, &h[i]);
  buffer_arena_clear (&a);
}

/* A buffer given back early does not move the tail past an older one
 * still out; once that one is back, the tail passes both. */
static void
test_out_of_order (void)
{
  struct buffer_arena a;

  buffer_arena_init (&a, 4 * MiB, 0);
  struct held x = take (&a, MiB, 'x'), y = take (&a, MiB, 'y'), z = take (&a, MiB, 'z');
  give (&a, &y);
  /* 1 MiB left at the end, none at the start: the heap. */
  struct held big = take (&a, 2 * MiB, 'b');
  g_assert_false (in_ring (&a, &big));
  give (&a, &big);
  give (&a, &x);
  /* The tail is z's start (2 MiB): 2 MiB fit from the ring's start. */
  big = take (&a, 2 * MiB, 'B');
  g_assert_true (in_ring (&a, &big));
  g_assert_true (big.buf == a.base);
  /* Wrapped: nothing between the head (2 MiB) and the tail (2 MiB). */
  struct held none = take (&a, 1, 'n');
  g_assert_false (in_ring (&a, &none));
  give (&a, &none);
  give (&a, &z);
  give (&a, &big);
  buffer_arena_clear (&a);
}

/* Once wrapped, what fits between the head and the tail goes there, and
 * what does not goes to the heap. */
static void
test_wrapped_room (void)
{
  struct buffer_arena a;

  buffer_arena_init (&a, 4 * MiB, 0);
  struct held p = take (&a, MiB, 'p'), q = take (&a, 2 * MiB, 'q');
  give (&a, &p);
  /* 1 MiB at the end: taken there, not wrapped. */
  struct held r = take (&a, MiB, 'r');
  g_assert_true (r.buf == a.base + 3 * MiB);
  /* Now only [0, 1 MiB) is free, before the tail (q at 1 MiB). */
  struct held s = take (&a, MiB / 2, 's');
  g_assert_true (s.buf == a.base);
  struct held t = take (&a, MiB / 2, 't');
  g_assert_true (t.buf == a.base + MiB / 2);
  struct held u = take (&a, 4096, 'u');
  g_assert_false (in_ring (&a, &u));
  give (&a, &u);
  give (&a, &q);
  give (&a, &r);
  give (&a, &s);
  give (&a, &t);
  buffer_arena_clear (&a);
}

/* Larger than the ring: the heap; all given back: the next starts at the
 * ring's start; after a clear, a new ring. */
static void
test_sizes_and_restart (void)
{
  struct buffer_arena a;

  buffer_arena_init (&a, MiB, MiB);    /* 3 MiB, rounded up to 4 MiB */
  struct held huge = take (&a, 5 * MiB, 'h');
  g_assert_false (in_ring (&a, &huge));
  g_assert_cmpuint (a.size, ==, 4 * MiB);
  give (&a, &huge);
  struct held one = take (&a, 3 * MiB, '1');
  give (&a, &one);
  struct held two = take (&a, 3 * MiB, '2');
  g_assert_true (two.buf == a.base);
  give (&a, &two);
  buffer_arena_clear (&a);
  g_assert_cmpuint (a.size, ==, 0);
  struct held three = take (&a, MiB, '3');
  g_assert_true (in_ring (&a, &three));
  give (&a, &three);
  buffer_arena_clear (&a);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/buffer-arena/in-order", test_in_order);
  g_test_add_func ("/buffer-arena/out-of-order", test_out_of_order);
  g_test_add_func ("/buffer-arena/wrapped-room", test_wrapped_room);
  g_test_add_func ("/buffer-arena/sizes-and-restart", test_sizes_and_restart);
  return g_test_run ();
}
