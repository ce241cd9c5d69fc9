/* ferry: a pipe as a relay direction's buffer: ferry's own, or one end's. */
#include <config.h>

#include "buffer-pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

struct pipe_buffer {
  struct buffer base;
  int rfd, wfd;               /* the pipe's ends, both non-blocking */
};

/* Read once, by whichever forward worker asks first. */
static size_t
pipe_max_size (void)
{
  static gsize max;

  if (g_once_init_enter (&max)) {
    g_autofree char *text = NULL;
    gsize found = 1024 * 1024;        /* the kernel's default */

    if (g_file_get_contents ("/proc/sys/fs/pipe-max-size", &text, NULL, NULL) &&
        g_ascii_strtoull (text, NULL, 10) > 0)
      found = g_ascii_strtoull (text, NULL, 10);
    g_once_init_leave (&max, found);
  }
  return max;
}

long
buffer_pipe_grow (int fd, size_t size)
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
                      b->size - b->len, PIPE_SPLICE_FLAGS);

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
  n = splice (pb->rfd, NULL, endpoint_splice_fd (dst, true), NULL, b->len, PIPE_SPLICE_FLAGS);
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

/* A direction with a pipe at one end splices straight from source to
 * destination: one call per transfer instead of two, and that pipe, grown
 * to the buffer size, holds what the other end cannot take yet.  The
 * pump's contract is kept by accounting: a fill that moved bytes reports
 * them as buffered, and the drain that follows reports them delivered
 * without a call; a fill that found the destination full records how many
 * bytes wait in the source, and the drain on POLLOUT moves them. */
struct direct_buffer {
  struct buffer base;
  int src_fd, dst_fd;
  bool src_is_pipe;
  size_t moved;               /* spliced by the last fill, not yet reported
                                 by a drain */
  bool dst_was_full;          /* the last fill found the destination full:
                                 the drain right after it would only fail */
};

/* Reading a pipe cannot fail but writing one can (EPIPE); a socket can
 * fail either way. */
static bool
direct_failed_on_dst (struct buffer *b, int err)
{
  struct direct_buffer *db = (struct direct_buffer *) b;

  return err == EPIPE || db->src_is_pipe;
}

/* Count what waits in the source as buffered: bytes the destination has
 * not taken.  Keeps errno. */
static void
direct_count_waiting (struct direct_buffer *db)
{
  int saved = errno;
  int waiting = 0;

  if (ioctl (db->src_fd, FIONREAD, &waiting) == 0 && waiting > 0)
    db->base.len = MIN ((size_t) waiting, db->base.size);
  errno = saved;
}

static ssize_t
direct_fill (struct buffer *b, struct endpoint *src G_GNUC_UNUSED)
{
  struct direct_buffer *db = (struct direct_buffer *) b;
  ssize_t n = splice (db->src_fd, NULL, db->dst_fd, NULL, b->size, PIPE_SPLICE_FLAGS);

  if (n > 0) {
    db->moved = n;
    buffer_produced (b, n);
  } else if (n < 0 && errno == EAGAIN) {
    /* If the source has bytes, the destination is what is full. */
    direct_count_waiting (db);
    b->blocked = db->dst_was_full = b->len > 0;
  } else if (n < 0 && direct_failed_on_dst (b, errno)) {
    direct_count_waiting (db);  /* for the message: these are lost */
  }
  return n;
}

static ssize_t
direct_drain (struct buffer *b, struct endpoint *dst G_GNUC_UNUSED)
{
  struct direct_buffer *db = (struct direct_buffer *) b;
  ssize_t n;

  if (db->moved > 0) {
    n = db->moved;
    db->moved = 0;
    buffer_consumed (b, n);
    return n;
  }
  if (db->dst_was_full) {
    db->dst_was_full = false;
    errno = EAGAIN;
    return -1;
  }
  n = splice (db->src_fd, NULL, db->dst_fd, NULL, b->size, PIPE_SPLICE_FLAGS);
  if (n >= 0) {
    /* More may have arrived since the count: never below zero.  At the
     * source's end (0) nothing waits any more, and the reader sees it. */
    b->len = n > 0 && (size_t) n < b->len ? b->len - n : 0;
    b->blocked = b->len > 0;
  }
  return n;
}

static void
direct_free (struct buffer *b)
{
  g_free (b);
}

static const struct buffer_ops direct_ops = {
  .fill = direct_fill,
  .drain = direct_drain,
  .free = direct_free,
  .failed_on_dst = direct_failed_on_dst,
};

static bool
is_pipe (int fd)
{
  struct stat st;

  return fstat (fd, &st) == 0 && S_ISFIFO (st.st_mode);
}

struct buffer *
buffer_pipe_new_direct (int src_fd, int dst_fd, size_t size)
{
  struct direct_buffer *db;
  bool src_is_pipe = is_pipe (src_fd);

  if (!src_is_pipe && !is_pipe (dst_fd))
    return NULL;
  /* Usually done for stdio already; fd: addresses may bring a pipe too. */
  buffer_pipe_grow (src_is_pipe ? src_fd : dst_fd, size);
  db = g_new0 (struct direct_buffer, 1);
  db->base.ops = &direct_ops;
  db->base.size = size;
  db->src_fd = src_fd;
  db->dst_fd = dst_fd;
  db->src_is_pipe = src_is_pipe;
  return &db->base;
}

struct buffer *
buffer_pipe_new (size_t size)
{
  int fds[2];
  long capacity;
  struct pipe_buffer *pb;

  if (pipe2 (fds, O_CLOEXEC | O_NONBLOCK) < 0)
    return NULL;
  capacity = buffer_pipe_grow (fds[1], size);
  pb = g_new0 (struct pipe_buffer, 1);
  pb->base.ops = &pipe_ops;
  pb->base.size = capacity > 0 ? MIN (size, (size_t) capacity) : size;
  pb->rfd = fds[0];
  pb->wfd = fds[1];
  return &pb->base;
}

int
buffer_pipe_write_fd (struct buffer *b)
{
  return ((struct pipe_buffer *) b)->wfd;
}
