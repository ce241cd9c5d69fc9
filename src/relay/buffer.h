/* ferry: a relay direction's fixed buffer, behind an ops table.
 *
 * The kinds: a ring in memory that endpoints readv/writev
 * (buffer-ring.c); a pipe of ferry's that endpoints' fds splice into and
 * out of, and, when one end is itself a pipe, that pipe, spliced straight
 * to or from the other end (both buffer-pipe.c); and for --nbd, a pipe fed
 * from a socket under the NBD parser's eye (buffer-nbd-pipe.c).
 * buffer_choose() picks one (buffer-choose.c).  The pump never asks which it
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

#include <glib.h>

#include "endpoint.h"
#include "stats-value.h"

struct buffer;

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
  /* --stats=json: add the watcher's members to the relay's @object. */
  void (*stats_json) (struct buffer *b, StatsValue *object);
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
buffer_stats_json (struct buffer *b, StatsValue *object)
{
  if (b->watcher && b->watcher->stats_json)
    b->watcher->stats_json (b, object);
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

#endif
