/* ferry: I/O buffers in a ring (buffer-arena.h). */
#include <config.h>

#include <stdbool.h>
#include <sys/mman.h>
/* Under AddressSanitizer the ring's free bytes are poisoned, so that a
 * buffer used after it was given back is caught as a heap buffer would
 * be; otherwise (or without the header) no-ops. */
#if defined(__SANITIZE_ADDRESS__) && __has_include (<sanitizer/asan_interface.h>)
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(addr, size) ((void) (addr), (void) (size))
#define ASAN_UNPOISON_MEMORY_REGION(addr, size) ((void) (addr), (void) (size))
#endif

#include "buffer-arena.h"

#define HUGE_PAGE ((size_t) 2 * 1024 * 1024)

/* A buffer taken from the ring: [start, end). */
struct arena_piece {
  size_t start, end;
  bool given;                 /* back, but not yet passed by the tail */
};

void
buffer_arena_init (struct buffer_arena *a, uint64_t window, uint64_t largest)
{
  uint64_t capacity = window + 2 * largest;

  *a = (struct buffer_arena) { .capacity = (capacity + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE };
  g_queue_init (&a->taken);
}

static bool
map_ring (struct buffer_arena *a)
{
  if (a->map == MAP_FAILED)
    return false;
  a->map_size = a->capacity + HUGE_PAGE;
  a->map = mmap (NULL, a->map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (a->map == MAP_FAILED)
    return false;
  a->base = (uint8_t *) (((uintptr_t) a->map + HUGE_PAGE - 1) & ~(uintptr_t) (HUGE_PAGE - 1));
  a->size = a->capacity;
  /* Only a hint: without it (or without THP) the pages are 4 KiB. */
  madvise (a->base, a->size, MADV_HUGEPAGE);
  ASAN_POISON_MEMORY_REGION (a->base, a->size);
  return true;
}

/* Where @length bytes fit in the ring, or SIZE_MAX. */
static size_t
find_room (const struct buffer_arena *a, size_t length)
{
  const struct arena_piece *oldest = g_queue_peek_head ((GQueue *) &a->taken);

  /* An empty piece at the head would look like a full ring. */
  if (length == 0 || length > a->size)
    return SIZE_MAX;
  if (oldest == NULL)
    return 0;
  /* Not wrapped, the pieces lie in [tail, head): after it, or from 0. */
  if (oldest->start < a->head) {
    if (a->size - a->head >= length)
      return a->head;
    return length <= oldest->start ? 0 : SIZE_MAX;
  }
  /* Wrapped: between the head and the tail. */
  return oldest->start - a->head >= length ? a->head : SIZE_MAX;
}

uint8_t *
buffer_arena_take (struct buffer_arena *a, size_t length, void **piece)
{
  size_t at;

  *piece = NULL;
  if ((a->size == 0 && !map_ring (a)) || (at = find_room (a, length)) == SIZE_MAX)
    return g_malloc (length);
  struct arena_piece *p = g_new (struct arena_piece, 1);
  *p = (struct arena_piece) { at, at + length, false };
  g_queue_push_tail (&a->taken, p);
  a->head = p->end;
  *piece = p;
  ASAN_UNPOISON_MEMORY_REGION (a->base + at, length);
  return a->base + at;
}

void
buffer_arena_give (struct buffer_arena *a, uint8_t *buf, void *piece)
{
  struct arena_piece *p = piece;

  if (p == NULL) {
    g_free (buf);
    return;
  }
  p->given = true;
  ASAN_POISON_MEMORY_REGION (buf, p->end - p->start);
  while ((p = g_queue_peek_head (&a->taken)) && p->given)
    g_free (g_queue_pop_head (&a->taken));
  if (g_queue_is_empty (&a->taken))
    a->head = 0;
}

void
buffer_arena_clear (struct buffer_arena *a)
{
  /* A buffer still out (a bug) keeps the mapping: better a leak than a
   * fault. */
  if (!g_queue_is_empty (&a->taken))
    g_critical ("buffer_arena_clear: %u buffers still out", g_queue_get_length (&a->taken));
  else if (a->size > 0) {
    ASAN_UNPOISON_MEMORY_REGION (a->base, a->size);
    munmap (a->map, a->map_size);
  }
  a->size = 0;
  a->map = NULL;
}
