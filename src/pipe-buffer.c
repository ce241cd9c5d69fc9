/* ferry: a pipe as a relay direction's buffer. */
#include <config.h>

#include "pipe-buffer.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <glib.h>

struct pipe_buffer {
  struct buffer base;
  int rfd, wfd;               /* the pipe's ends, both non-blocking */
};

static const unsigned splice_flags = SPLICE_F_NONBLOCK | SPLICE_F_MOVE;

static size_t
pipe_max_size (void)
{
  static size_t max;
  g_autofree char *text = NULL;

  if (max == 0) {
    max = 1024 * 1024;        /* the kernel's default */
    if (g_file_get_contents ("/proc/sys/fs/pipe-max-size", &text, NULL, NULL) &&
        g_ascii_strtoull (text, NULL, 10) > 0)
      max = g_ascii_strtoull (text, NULL, 10);
  }
  return max;
}

long
pipe_grow (int fd, size_t size)
{
  long cur = fcntl (fd, F_GETPIPE_SZ);
  long got;

  size = MIN (size, pipe_max_size ());
  if (cur < 0 || (size_t) cur >= size)
    return cur;
  /* Refused (pipe-user-pages-soft, EPERM): the pipe keeps its size. */
  got = fcntl (fd, F_SETPIPE_SZ, (int) size);
  return got < 0 ? cur : got;
}

static ssize_t
pipe_fill (struct buffer *b, struct endpoint *src)
{
  struct pipe_buffer *pb = (struct pipe_buffer *) b;
  ssize_t n = splice (endpoint_splice_fd (src, false), NULL, pb->wfd, NULL,
                      b->size - b->len, splice_flags);

  if (n > 0) {
    buffer_produced (b, n);
  } else if (n < 0 && errno == EAGAIN && b->len > 0) {
    /* A pipe counts slots, not bytes: small segments can fill it before
     * @size bytes.  Stop reading until a drain frees a slot.  (If the
     * source was what had nothing, the drain that is due anyway resumes
     * reading.) */
    b->blocked = true;
  }
  return n;
}

static ssize_t
pipe_drain (struct buffer *b, struct endpoint *dst)
{
  struct pipe_buffer *pb = (struct pipe_buffer *) b;
  ssize_t n;

  if (b->len == 0)
    return 0;
  n = splice (pb->rfd, NULL, endpoint_splice_fd (dst, true), NULL, b->len, splice_flags);
  if (n > 0)
    buffer_consumed (b, n);
  return n;
}

static void
pipe_free (struct buffer *b)
{
  struct pipe_buffer *pb = (struct pipe_buffer *) b;

  close (pb->rfd);
  close (pb->wfd);
  g_free (pb);
}

static const struct buffer_ops pipe_ops = {
  .fill = pipe_fill,
  .drain = pipe_drain,
  .free = pipe_free,
};

struct buffer *
pipe_buffer_new (size_t size)
{
  int fds[2];
  long capacity;
  struct pipe_buffer *pb;

  if (pipe2 (fds, O_CLOEXEC | O_NONBLOCK) < 0)
    return NULL;
  capacity = pipe_grow (fds[1], size);
  pb = g_new0 (struct pipe_buffer, 1);
  pb->base.ops = &pipe_ops;
  pb->base.size = capacity > 0 ? MIN (size, (size_t) capacity) : size;
  pb->rfd = fds[0];
  pb->wfd = fds[1];
  return &pb->base;
}

int
pipe_buffer_write_fd (struct buffer *b)
{
  return ((struct pipe_buffer *) b)->wfd;
}
