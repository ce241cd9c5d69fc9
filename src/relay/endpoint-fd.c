/* ferry: endpoints over file descriptors.
 *
 * A socket reads and writes one fd; stdio reads fd 0 and writes fd 1. */
#include <config.h>

#include "endpoint-fd.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gsource-release.h"
#include "buffer-pipe.h"

/* One GSource per endpoint polls its fd(s) through GPollFDs that ferry
 * owns, so a change of interest only rewrites .events: glib reads them
 * afresh each iteration.  (g_source_modify_unix_fd, and adding or removing
 * a poll, signal glib's wakeup eventfd: a write, a read and an extra loop
 * iteration per change.)  An fd is added on first interest and removed
 * only when it reports HUP or ERR while unwanted. */
struct fd_watch {
  GPollFD pfd;                /* .events: what is wanted now */
  bool polled;                /* pfd is registered with the source */
};

struct fd_source {
  GSource source;
  struct fd_endpoint *owner;
};

struct fd_endpoint {
  struct endpoint base;
  int rfd, wfd;               /* equal for a socket */
  bool splice_read;           /* rfd is a socket, pipe or regular file */
  bool splice_write;          /* wfd is a socket, pipe or regular file
                                 without O_APPEND (splice refuses that) */
  struct fd_source *source;   /* attached for the endpoint's whole life */
  struct fd_watch watch[2];   /* [0] for rfd; [1] for wfd when it differs */
  int n_watches;
  bool want_read, want_write;
  bool is_socket;
  bool is_stdio;
  bool keep_stdout_open;      /* stdio under listen -k */
  bool write_closed;
  bool peer_gone;             /* a socket reported HUP: both directions shut */
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

/* poll(2) reports HUP and ERR even for an empty event mask: an idle fd
 * that reports one leaves the poll set until it is wanted again, so it
 * cannot spin the loop. */
static bool
watch_unwanted_failure (const struct fd_watch *w)
{
  return w->polled && w->pfd.events == 0 &&
         (w->pfd.revents & (G_IO_HUP | G_IO_ERR | G_IO_NVAL));
}

static gboolean
fd_source_check (GSource *source)
{
  struct fd_endpoint *fe = ((struct fd_source *) source)->owner;

  for (int i = 0; i < fe->n_watches; i++)
    if (fe->watch[i].pfd.revents != 0)
      return TRUE;
  return FALSE;
}

static gboolean
fd_source_dispatch (GSource *source, GSourceFunc callback, gpointer data)
{
  struct fd_endpoint *fe = ((struct fd_source *) source)->owner;
  const GIOCondition failure = G_IO_HUP | G_IO_ERR | G_IO_NVAL;
  const GIOCondition rev = fe->watch[0].pfd.revents;
  const GIOCondition wev = fe->watch[fe->n_watches - 1].pfd.revents;
  bool readable = fe->want_read && (rev & (G_IO_IN | failure));
  bool writable = fe->want_write && (wev & (G_IO_OUT | failure));
  /* A socket's HUP means that its peer is gone, not just at EOF: the
   * relay hears of it once even while it wants nothing from the socket. */
  bool gone_now = fe->is_socket && !fe->peer_gone && (rev & G_IO_HUP);

  (void) callback; (void) data;
  if (gone_now)
    fe->peer_gone = true;
  for (int i = 0; i < fe->n_watches; i++) {
    struct fd_watch *w = &fe->watch[i];
    if (watch_unwanted_failure (w)) {
      g_source_remove_poll (source, &w->pfd);
      w->polled = false;
    }
    w->pfd.revents = 0;
  }
  /* The callback may free this endpoint: touch nothing after it. */
  if (readable || writable || gone_now)
    fe->base.ready (fe->base.ready_data, &fe->base, readable, writable);
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs fd_source_funcs = {
  .check = fd_source_check,
  .dispatch = fd_source_dispatch,
};

static void
watch_update (struct fd_endpoint *fe, struct fd_watch *w, GIOCondition events)
{
  w->pfd.events = events;
  if (events != 0 && !w->polled) {
    g_source_add_poll (&fe->source->source, &w->pfd);
    w->polled = true;
  }
}

static void
fd_set_interest (struct endpoint *ep, bool want_read, bool want_write)
{
  struct fd_endpoint *fe = (struct fd_endpoint *) ep;

  fe->want_read = want_read;
  fe->want_write = want_write && !fe->write_closed;
  if (fe->n_watches == 1) {
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

static bool
fd_peer_gone (struct endpoint *ep)
{
  return ((struct fd_endpoint *) ep)->peer_gone;
}

static void
fd_free (struct endpoint *ep)
{
  struct fd_endpoint *fe = (struct fd_endpoint *) ep;

  gsource_release (&fe->source->source);
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
  .peer_gone = fd_peer_gone,
};

static struct fd_endpoint *
fd_endpoint_new (int rfd, int wfd)
{
  struct fd_endpoint *fe = g_new0 (struct fd_endpoint, 1);

  fe->base.ops = &fd_ops;
  fe->rfd = rfd;
  fe->wfd = wfd;
  fe->n_watches = rfd == wfd ? 1 : 2;
  fe->watch[0].pfd.fd = rfd;
  fe->watch[1].pfd.fd = wfd;
  fe->source = (struct fd_source *) g_source_new (&fd_source_funcs, sizeof *fe->source);
  fe->source->owner = fe;
  /* Otherwise glib "blocks" the source around each dispatch: it removes
   * and re-adds the polls, signalling its wakeup eventfd every time.  The
   * dispatch never runs the main loop, so it cannot recurse. */
  g_source_set_can_recurse (&fe->source->source, TRUE);
  gsource_attach (&fe->source->source);
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
    buffer_pipe_grow (STDIN_FILENO, pipe_size);
    buffer_pipe_grow (STDOUT_FILENO, pipe_size);
  }
  return &fe->base;
}
