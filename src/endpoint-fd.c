/* ferry: endpoints over file descriptors.
 *
 * A socket reads and writes one fd; stdio reads fd 0 and writes fd 1.  Each
 * distinct fd has at most one GSource, which exists only while some
 * direction is wanted: poll(2) reports HUP and ERR even for an empty event
 * mask, so keeping an idle watch around could spin. */
#include <config.h>

#include "endpoint-fd.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gsource-release.h"
#include "pipe-buffer.h"

/* A GSource polling one fd.  g_unix_fd_add_full keeps the tag that
 * g_source_modify_unix_fd needs private, so ferry adds the fd itself. */
struct fd_source {
  GSource source;
  struct fd_endpoint *owner;
  int fd;
  gpointer tag;               /* from g_source_add_unix_fd */
};

struct fd_watch {
  int fd;
  GIOCondition events;        /* what the source currently polls for */
  struct fd_source *source;   /* NULL while nothing is wanted */
};

struct fd_endpoint {
  struct endpoint base;
  int rfd, wfd;               /* equal for a socket */
  bool splice_read;           /* rfd is a socket, pipe or regular file */
  bool splice_write;          /* wfd is a socket, pipe or regular file
                                 without O_APPEND (splice refuses that) */
  struct fd_watch watch[2];   /* [0] for rfd; [1] for wfd when it differs */
  bool want_read, want_write;
  bool is_socket;
  bool is_stdio;
  bool keep_stdout_open;      /* stdio under listen -k */
  bool write_closed;
  int saved_flags[2];         /* stdio: the fds' O_ flags before ferry */
};

static void
set_nonblocking (int fd, int *saved)
{
  int flags = fcntl (fd, F_GETFL);

  if (saved)
    *saved = flags;
  if (flags >= 0 && !(flags & O_NONBLOCK))
    fcntl (fd, F_SETFL, flags | O_NONBLOCK);
}

static ssize_t
fd_readv (struct endpoint *ep, const struct iovec *iov, int iovcnt)
{
  struct fd_endpoint *fe = (struct fd_endpoint *) ep;

  return readv (fe->rfd, iov, iovcnt);
}

static ssize_t
fd_writev (struct endpoint *ep, const struct iovec *iov, int iovcnt)
{
  struct fd_endpoint *fe = (struct fd_endpoint *) ep;

  return writev (fe->wfd, iov, iovcnt);
}

static int
fd_splice_fd (struct endpoint *ep, bool write)
{
  struct fd_endpoint *fe = (struct fd_endpoint *) ep;

  if (write)
    return fe->splice_write ? fe->wfd : -1;
  return fe->splice_read ? fe->rfd : -1;
}

/* Whether splice(2) takes @fd: sockets, pipes and regular files do;
 * terminals and most devices may not, and the copying path serves them. */
static bool
can_splice (int fd, bool write)
{
  struct stat st;
  int flags = fcntl (fd, F_GETFL);

  if (fstat (fd, &st) < 0 || flags < 0)
    return false;
  if (S_ISREG (st.st_mode))
    return !(write && (flags & O_APPEND));
  return S_ISSOCK (st.st_mode) || S_ISFIFO (st.st_mode);
}

static gboolean
fd_source_dispatch (GSource *source, GSourceFunc callback, gpointer data)
{
  struct fd_source *fs = (struct fd_source *) source;
  struct fd_endpoint *fe = fs->owner;
  const GIOCondition failure = G_IO_HUP | G_IO_ERR | G_IO_NVAL;
  GIOCondition revents = g_source_query_unix_fd (source, fs->tag);
  bool readable = fe->want_read && fs->fd == fe->rfd && (revents & (G_IO_IN | failure));
  bool writable = fe->want_write && fs->fd == fe->wfd && (revents & (G_IO_OUT | failure));

  (void) callback; (void) data;
  /* The callback may free this endpoint: touch nothing after it. */
  if (readable || writable)
    fe->base.ready (fe->base.ready_data, &fe->base, readable, writable);
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs fd_source_funcs = {
  .dispatch = fd_source_dispatch,
};

static void
watch_update (struct fd_endpoint *fe, struct fd_watch *w, GIOCondition events)
{
  if (events == w->events)
    return;
  if (events == 0) {
    gsource_release (&w->source->source);
    w->source = NULL;
  } else if (w->source == NULL) {
    w->source = (struct fd_source *) g_source_new (&fd_source_funcs, sizeof *w->source);
    w->source->owner = fe;
    w->source->fd = w->fd;
    w->source->tag = g_source_add_unix_fd (&w->source->source, w->fd, events);
    g_source_attach (&w->source->source, NULL);
  } else {
    g_source_modify_unix_fd (&w->source->source, w->source->tag, events);
  }
  w->events = events;
}

static void
fd_set_interest (struct endpoint *ep, bool want_read, bool want_write)
{
  struct fd_endpoint *fe = (struct fd_endpoint *) ep;

  fe->want_read = want_read;
  fe->want_write = want_write && !fe->write_closed;
  if (fe->rfd == fe->wfd) {
    watch_update (fe, &fe->watch[0],
                  (fe->want_read ? G_IO_IN : 0) | (fe->want_write ? G_IO_OUT : 0));
  } else {
    watch_update (fe, &fe->watch[0], fe->want_read ? G_IO_IN : 0);
    watch_update (fe, &fe->watch[1], fe->want_write ? G_IO_OUT : 0);
  }
}

static int
fd_shutdown_write (struct endpoint *ep)
{
  struct fd_endpoint *fe = (struct fd_endpoint *) ep;
  int devnull;

  if (fe->write_closed)
    return 0;
  fe->write_closed = true;
  fd_set_interest (ep, fe->want_read, false);
  if (fe->is_socket)
    return shutdown (fe->wfd, SHUT_WR);
  if (fe->keep_stdout_open)
    return 0;
  /* Close our stdout so the reader sees EOF, but keep the number
   * occupied so no later fd lands on 1. */
  fcntl (fe->wfd, F_SETFL, fe->saved_flags[1]);
  devnull = open ("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull < 0)
    return close (fe->wfd);
  if (dup2 (devnull, fe->wfd) < 0) {
    int saved = errno;
    close (devnull);
    errno = saved;
    return -1;
  }
  close (devnull);
  return 0;
}

static void
fd_free (struct endpoint *ep)
{
  struct fd_endpoint *fe = (struct fd_endpoint *) ep;

  fd_set_interest (ep, false, false);
  if (fe->is_stdio) {
    fcntl (fe->rfd, F_SETFL, fe->saved_flags[0]);
    if (!fe->write_closed)
      fcntl (fe->wfd, F_SETFL, fe->saved_flags[1]);
  } else {
    close (fe->rfd);
  }
  endpoint_clear_names (ep);
  g_free (fe);
}

static const struct endpoint_ops fd_ops = {
  .readv = fd_readv,
  .writev = fd_writev,
  .shutdown_write = fd_shutdown_write,
  .set_interest = fd_set_interest,
  .free = fd_free,
  .splice_fd = fd_splice_fd,
};

static struct fd_endpoint *
fd_endpoint_new (int rfd, int wfd)
{
  struct fd_endpoint *fe = g_new0 (struct fd_endpoint, 1);

  fe->base.ops = &fd_ops;
  fe->rfd = rfd;
  fe->wfd = wfd;
  fe->watch[0].fd = rfd;
  fe->watch[1].fd = wfd;
  fe->splice_read = can_splice (rfd, false);
  fe->splice_write = can_splice (wfd, true);
  return fe;
}

struct endpoint *
endpoint_socket_new (int fd, const char *name)
{
  struct fd_endpoint *fe = fd_endpoint_new (fd, fd);

  fe->is_socket = true;
  fe->base.name = g_strdup (name);
  set_nonblocking (fd, NULL);
  return &fe->base;
}

struct endpoint *
endpoint_stdio_new (bool keep_stdout_open, size_t pipe_size)
{
  struct fd_endpoint *fe = fd_endpoint_new (STDIN_FILENO, STDOUT_FILENO);

  fe->is_stdio = true;
  fe->keep_stdout_open = keep_stdout_open;
  fe->base.name = g_strdup ("stdin");
  fe->base.write_name = g_strdup ("stdout");
  set_nonblocking (STDIN_FILENO, &fe->saved_flags[0]);
  set_nonblocking (STDOUT_FILENO, &fe->saved_flags[1]);
  if (pipe_size > 0) {
    /* Fewer, larger transfers for whoever feeds or drains ferry.  Not a
     * pipe, or not allowed: the kernel's size stands. */
    pipe_grow (STDIN_FILENO, pipe_size);
    pipe_grow (STDOUT_FILENO, pipe_size);
  }
  return &fe->base;
}
