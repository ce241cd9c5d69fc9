/* ferry: a relay direction's fixed buffer, behind an ops table.
 *
 * The kinds: a ring in memory that endpoints readv/writev
 * (buffer-ring.c); a pipe of ferry's that endpoints' fds splice into and
 * out of, and, when one end is itself a pipe, that pipe, spliced straight
 * to or from the other end (both buffer-pipe.c); and for --nbd, a pipe fed
 * from a socket under the NBD parser's eye (buffer-nbd-pipe.c).
 * buffer_new_for() picks one (buffer.c).  The pump never asks which it
 * holds: it fills, drains and looks at the counts here, so backpressure and
 * end-of-stream rules are the same for all.  A watcher (--nbd's parser,
 * nbd-relay.c) may hook into a buffer; the relay sees it only through the
 * buffer_settle / buffer_violation / buffer_finish calls below. */
#ifndef FERRY_BUFFER_H
#define FERRY_BUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <fcntl.h>

#include <glib.h>

#include "endpoint.h"

struct buffer;
struct relay_config;

/* Something that parses what passes through a buffer (--nbd: nbd-relay.c).
 * Every member is optional. */
struct buffer_watcher_ops {
  /* After every move of bytes: add bytes of its own for the destination
   * (the NBD read-only guard's replies). */
  void (*settle) (struct buffer *b);
  /* The stream broke its protocol: the relay ends with this error, whose
   * code is the exit code.  NULL while all is well. */
  const GError *(*violation) (struct buffer *b);
  /* The relay is over: the final report. */
  void (*finish) (struct buffer *b);
  /* The buffer is being freed. */
  void (*release) (struct buffer *b);
};

struct buffer_ops {
  /* Read once from @src into the free space: bytes read, 0 at end of
   * stream, or -1 with errno set (EAGAIN when nothing was ready). */
  ssize_t (*fill) (struct buffer *b, struct endpoint *src);
  /* Write once to @dst, offering every buffered byte (so a short write
   * means @dst is full): bytes written, or -1 with errno set. */
  ssize_t (*drain) (struct buffer *b, struct endpoint *dst);
  /* Release the storage and the buffer itself. */
  void (*free) (struct buffer *b);
  /* Optional: whether a failed fill or drain (errno @err) failed on the
   * destination.  Without it, fills fail on the source and drains on the
   * destination; a direct splice touches both in one call. */
  bool (*failed_on_dst) (struct buffer *b, int err);
};

struct buffer {
  const struct buffer_ops *ops;
  const struct buffer_watcher_ops *watcher;  /* NULL, or set by the watcher */
  void *watcher_data;
  size_t size;                /* capacity in bytes, fixed for the buffer's life */
  size_t len;                 /* bytes buffered: filled minus drained */
  bool blocked;               /* the storage took no more although len < size
                                 (a pipe's slots are full, or the source wants
                                 more room: ENOBUFS); cleared by a drain */
};

static inline bool buffer_is_empty (const struct buffer *b) { return b->len == 0; }
static inline bool buffer_is_full (const struct buffer *b) { return b->len == b->size || b->blocked; }

/* Account for @n bytes filled / drained; used by the kinds' fill and drain. */
static inline void
buffer_produced (struct buffer *b, size_t n)
{
  b->len += n;
}

static inline void
buffer_consumed (struct buffer *b, size_t n)
{
  b->len -= n;
  b->blocked = false;
}

/* Forget the buffered bytes, after a failure that loses them: the pump
 * never fills or drains this buffer again. */
static inline void
buffer_discard (struct buffer *b)
{
  b->len = 0;
  b->blocked = false;
}

static inline bool
buffer_failed_on_dst (struct buffer *b, int err, bool draining)
{
  return b->ops->failed_on_dst ? b->ops->failed_on_dst (b, err) : draining;
}

static inline void
buffer_settle (struct buffer *b)
{
  if (b->watcher && b->watcher->settle)
    b->watcher->settle (b);
}

static inline const GError *
buffer_violation (struct buffer *b)
{
  return b->watcher && b->watcher->violation ? b->watcher->violation (b) : NULL;
}

static inline void
buffer_finish (struct buffer *b)
{
  if (b->watcher && b->watcher->finish)
    b->watcher->finish (b);
}

static inline void
buffer_free (struct buffer *b)
{
  if (b == NULL)
    return;
  if (b->watcher && b->watcher->release)
    b->watcher->release (b);
  b->ops->free (b);
}

/* The buffer for the direction @src -> @dst of a relay with @config: the
 * decision and its reasons are in buffer.c.  Never fails. */
struct buffer *buffer_new_for (struct endpoint *src, struct endpoint *dst,
                               const struct relay_config *config);

/* With --nbd in @config, one NBD parser watches both directions, @up
 * (the NBD client's stream) and @down (the server's), both from
 * buffer_new_for(); @wake is called when one of its timers found a
 * violation.  Otherwise nothing. */
void buffer_watch_both (struct buffer *up, struct buffer *down,
                        const struct relay_config *config, GSourceFunc wake, void *data);

/* ---- buffer-ring.c: the copying buffer, a fixed-size byte ring in memory.
 *
 * The storage is allocated once and never reallocated.  Head and length
 * offsets mean a partial write just advances the head: no memmove.  Used
 * where an end cannot splice, or with --no-splice. */

/* A ring of @size bytes, mapped on its own so that freeing it returns the
 * memory; never fails (aborts as g_malloc does). */
struct buffer *ring_new (size_t size);

/* An inspector sees the @n bytes each fill has just read, at logical
 * offsets [len, len + n) from the oldest buffered byte, before they count
 * as buffered; it may edit them in place with the calls below and returns
 * how many bytes to add to the buffered ones.  At end of stream it is
 * called with @n == 0.  Fills leave @reserve bytes free for its inserts. */
typedef size_t (*ring_inspect_fn) (void *data, struct buffer *ring, size_t n);
void ring_set_inspector (struct buffer *ring, ring_inspect_fn fn, void *data,
                         size_t reserve);

/* The byte at logical offset @at, and how many follow it contiguously. */
uint8_t *ring_at (struct buffer *ring, size_t at, size_t *contiguous);
/* Copy @n bytes from logical offset @from to @to; the ranges may overlap. */
void ring_move (struct buffer *ring, size_t to, size_t from, size_t n);
/* Copy @n bytes of @src to logical offset @to. */
void ring_write (struct buffer *ring, size_t to, const void *src, size_t n);

/* ---- buffer-pipe.c: the zero-copy buffers, pipes that endpoints splice(2) through.
 *
 * A direction whose source and destination both offer a splice fd moves
 * bytes without copying them to user space: straight across when either
 * end is a pipe, else source -> ferry's pipe -> destination.
 * Every splice is SPLICE_F_NONBLOCK and runs only after poll said the
 * endpoint is ready: a blocking splice from a socket into a pipe holds the
 * pipe's lock while it waits, and a request/reply exchange deadlocks. */

/* The flags of every splice that a pipe buffer makes (see above). */
#define PIPE_SPLICE_FLAGS (SPLICE_F_NONBLOCK | SPLICE_F_MOVE)

/* A pipe sized to @size bytes (capped at /proc/sys/fs/pipe-max-size), or
 * NULL with errno set when no pipe can be made. */
struct buffer *pipe_buffer_new (size_t size);

/* When @src_fd or @dst_fd is a pipe: a buffer that splices from one to
 * the other directly, that pipe being the storage.  Otherwise NULL. */
struct buffer *pipe_buffer_new_direct (int src_fd, int dst_fd, size_t size);

/* Grow the pipe @fd to hold @size bytes, capped at pipe-max-size; never
 * shrinks it.  Returns the pipe's capacity, or -1 with errno set when @fd
 * is not a pipe. */
long pipe_grow (int fd, size_t size);

/* The write end of pipe buffer @b's pipe, for a kind that fills the pipe
 * itself and counts what it put there (buffer-nbd-pipe.c). */
int pipe_buffer_write_fd (struct buffer *b);

#endif
