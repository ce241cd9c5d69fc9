/* ferry: the NBD pipe buffer (see buffer-nbd-pipe.h). */
#include <config.h>

#include "buffer-nbd-pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <glib.h>

#include "buffer-pipe.h"

struct nbd_pipe {
  struct buffer base;
  struct buffer *pipe;        /* the storage and its drain; its len is kept
                                 equal to base.len */
  int wfd;                    /* @pipe's write end */
  struct nbd_framing *f;      /* asked how much may pass unseen */
  enum nbd_dir dir;           /* which of @f's NBD streams this buffer carries */
  buffer_nbd_pipe_inspect_fn inspect;  /* shown the peeked bytes, and end of stream */
  void *inspect_data;
  size_t ahead;               /* bytes at the front of the source that the
                                 parser has seen but that have not moved */
  int read_errno;             /* a read failure after bytes had moved in
                                 the same fill, reported by the next one
                                 (a socket reports it only once); or 0 */
  uint8_t peeked[NBD_PEEK_SIZE];  /* what the last peek copied */
};

/* One move from @fd into the pipe, of at most @room bytes: when the parser
 * must see the next bytes and has seen none that wait, a peek shows them
 * first; then one splice moves what it has seen and what it need not see.
 * Returns like splice(2), or -1 with EAGAIN when the peek found nothing or
 * the parser a violation (then nothing moves).  *@more: the source may
 * hold more. */
static ssize_t
move_once (struct nbd_pipe *np, int fd, size_t room, bool *more)
{
  uint64_t unseen = nbd_framing_opaque (np->f, np->dir);
  bool short_peek = false;
  size_t want;
  ssize_t n;

  *more = false;
  if (np->ahead == 0 && unseen < NBD_PEEK_SIZE) {
    size_t asked = MIN (room, sizeof np->peeked);
    n = recv (fd, np->peeked, asked, MSG_PEEK);
    if (n <= 0)
      return n;
    /* Only this buffer reads @fd: these bytes are the next to move. */
    if (!np->inspect (np->inspect_data, np->peeked, n)) {
      errno = EAGAIN;
      return -1;
    }
    np->ahead = n;
    short_peek = (size_t) n < asked;
    unseen = nbd_framing_opaque (np->f, np->dir);
  }
  want = MIN (room, np->ahead + MIN (unseen, (uint64_t) room));
  n = splice (fd, NULL, np->wfd, NULL, want, PIPE_SPLICE_FLAGS);
  if (n > 0) {
    size_t seen = MIN ((size_t) n, np->ahead);
    np->ahead -= seen;
    nbd_framing_skip (np->f, np->dir, n - seen);
    buffer_produced (&np->base, n);
    buffer_produced (np->pipe, n);
    /* A short peek found the source nearly empty. */
    *more = (size_t) n == want && !short_peek;
  } else if (n < 0 && errno == EAGAIN && np->base.len > 0) {
    np->base.blocked = true;  /* the pipe's slots may be full, as in pipe_fill() */
  }
  return n;
}

/* Move while the source keeps up, as far as the free space goes: a reply's
 * header and its payload in one splice. */
static ssize_t
nbd_pipe_fill (struct buffer *b, struct endpoint *src)
{
  struct nbd_pipe *np = (struct nbd_pipe *) b;
  int fd = endpoint_splice_fd (src, false);
  size_t moved = 0;
  bool more;
  ssize_t n;

  if (np->read_errno) {
    errno = np->read_errno;
    np->read_errno = 0;
    return -1;
  }
  do {
    n = move_once (np, fd, b->size - b->len, &more);
    if (n > 0)
      moved += n;
  } while (more && b->len < b->size);

  if (moved > 0 && n < 0 && errno != EAGAIN && errno != EINTR)
    np->read_errno = errno;
  if (moved > 0)
    return moved;
  if (n == 0)
    np->inspect (np->inspect_data, NULL, 0);
  return n;
}

static ssize_t
nbd_pipe_drain (struct buffer *b, struct endpoint *dst)
{
  struct nbd_pipe *np = (struct nbd_pipe *) b;
  ssize_t n = np->pipe->ops->drain (np->pipe, dst);

  if (n > 0)
    buffer_consumed (b, n);
  return n;
}

static void
nbd_pipe_free (struct buffer *b)
{
  struct nbd_pipe *np = (struct nbd_pipe *) b;

  buffer_free (np->pipe);
  g_free (np);
}

static const struct buffer_ops nbd_pipe_ops = {
  .fill = nbd_pipe_fill,
  .drain = nbd_pipe_drain,
  .free = nbd_pipe_free,
};

struct buffer *
buffer_nbd_pipe_new (int src_fd, size_t size)
{
  int type = 0;
  socklen_t len = sizeof type;
  struct buffer *pipe;
  struct nbd_pipe *np;

  if (src_fd < 0 || getsockopt (src_fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
      type != SOCK_STREAM || (pipe = buffer_pipe_new (size)) == NULL)
    return NULL;
  np = g_new0 (struct nbd_pipe, 1);
  np->base.ops = &nbd_pipe_ops;
  np->base.size = pipe->size;
  np->pipe = pipe;
  np->wfd = buffer_pipe_write_fd (pipe);
  return &np->base;
}

bool
buffer_nbd_pipe_is (const struct buffer *b)
{
  return b->ops == &nbd_pipe_ops;
}

void
buffer_nbd_pipe_set_inspector (struct buffer *b, struct nbd_framing *f, enum nbd_dir dir,
                               buffer_nbd_pipe_inspect_fn fn, void *data)
{
  struct nbd_pipe *np = (struct nbd_pipe *) b;

  np->f = f;
  np->dir = dir;
  np->inspect = fn;
  np->inspect_data = data;
}
