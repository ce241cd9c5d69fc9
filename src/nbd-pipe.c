/* ferry: the NBD pipe buffer (see nbd-pipe.h). */
#include <config.h>

#include "nbd-pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <glib.h>

#include "pipe-buffer.h"

struct nbd_pipe {
  struct buffer base;
  struct buffer *pipe;        /* the storage and its drain; its len is kept
                                 equal to base.len */
  int wfd;                    /* @pipe's write end */
  struct nbd_framing *f;      /* asked how much may pass unseen */
  enum nbd_dir dir;
  nbd_pipe_inspect_fn inspect;
  void *inspect_data;
  int read_errno;             /* a read failure after bytes had moved in
                                 the same fill, reported by the next one
                                 (a socket reports it only once); or 0 */
  uint8_t peeked[NBD_PEEK_SIZE];  /* what the last peek copied */
};

static const unsigned splice_flags = SPLICE_F_NONBLOCK | SPLICE_F_MOVE;

static void
count (struct nbd_pipe *np, size_t n)
{
  buffer_produced (&np->base, n);
  buffer_produced (np->pipe, n);
}

/* One move from @fd into the pipe of at most @room bytes, setting *@asked
 * to how many it tried to move (a stretch the parser need not see) or to
 * peek at.  Returns like splice(2); moving fewer than *@asked means the
 * source or the pipe had no more, and *@asked = 0 that the parser found a
 * violation in what moved. */
static ssize_t
move_once (struct nbd_pipe *np, int fd, size_t room, size_t *asked)
{
  uint64_t unseen = nbd_framing_opaque (np->f, np->dir);
  size_t kept;
  ssize_t n;

  if (unseen >= NBD_PEEK_SIZE) {
    *asked = MIN (room, unseen);
    n = splice (fd, NULL, np->wfd, NULL, *asked, splice_flags);
    if (n > 0) {
      nbd_framing_skip (np->f, np->dir, n);
      count (np, n);
    }
    return n;
  }
  *asked = MIN (room, sizeof np->peeked);
  n = recv (fd, np->peeked, *asked, MSG_PEEK);
  /* Nothing ready is the source's doing: the pipe is not full. */
  if (n < 0 && errno == EAGAIN)
    *asked = 0;
  if (n <= 0)
    return n;
  /* Only this buffer reads @fd, so the first @n bytes are the ones seen. */
  n = splice (fd, NULL, np->wfd, NULL, n, splice_flags);
  if (n > 0) {
    kept = np->inspect (np->inspect_data, np->peeked, n);
    count (np, kept);
    if (kept < (size_t) n)
      *asked = 0;
  }
  return n;
}

/* Move while the source keeps up, as far as the free space goes: a reply's
 * header and its payload in one fill. */
static ssize_t
nbd_pipe_fill (struct buffer *b, struct endpoint *src)
{
  struct nbd_pipe *np = (struct nbd_pipe *) b;
  int fd = endpoint_splice_fd (src, false);
  size_t asked, moved = 0;
  ssize_t n;

  if (np->read_errno) {
    errno = np->read_errno;
    np->read_errno = 0;
    return -1;
  }
  do {
    n = move_once (np, fd, b->size - b->len, &asked);
    if (n > 0)
      moved += n;
  } while (n > 0 && (size_t) n == asked && b->len < b->size);

  if (moved > 0 && n < 0 && errno != EAGAIN && errno != EINTR)
    np->read_errno = errno;
  if (moved > 0)
    return moved;
  if (n == 0)
    np->inspect (np->inspect_data, NULL, 0);
  else if (errno == EAGAIN && asked > 0 && b->len > 0)
    b->blocked = true;        /* the pipe's slots may be full, as in pipe_fill() */
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
nbd_pipe_new (int src_fd, size_t size)
{
  int type = 0;
  socklen_t len = sizeof type;
  struct buffer *pipe;
  struct nbd_pipe *np;

  if (src_fd < 0 || getsockopt (src_fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
      type != SOCK_STREAM || (pipe = pipe_buffer_new (size)) == NULL)
    return NULL;
  np = g_new0 (struct nbd_pipe, 1);
  np->base.ops = &nbd_pipe_ops;
  np->base.size = pipe->size;
  np->pipe = pipe;
  np->wfd = pipe_buffer_write_fd (pipe);
  return &np->base;
}

bool
nbd_pipe_is (const struct buffer *b)
{
  return b->ops == &nbd_pipe_ops;
}

void
nbd_pipe_set_inspector (struct buffer *b, struct nbd_framing *f, enum nbd_dir dir,
                        nbd_pipe_inspect_fn fn, void *data)
{
  struct nbd_pipe *np = (struct nbd_pipe *) b;

  np->f = f;
  np->dir = dir;
  np->inspect = fn;
  np->inspect_data = data;
}
