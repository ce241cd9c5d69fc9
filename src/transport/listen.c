/* ferry: listeners.  Accepting runs inside the main loop, so signals and
 * other relays are served while waiting for a connection. */
#include <config.h>

#include "listen.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>

#include "socket-options.h"
#include "error.h"
#include "gsource-release.h"
#include "message.h"

/* /proc/net/unix's Flags bit for a listening socket (the kernel's
 * __SO_ACCEPTCON). */
#define PROC_NET_UNIX_LISTENING 0x10000

struct listener {
  int fd;
  char *name;                 /* for messages */
  char *unlink_path;          /* the socket file we created, removed at free */
  const struct connect_options *options;  /* for socket_setup() of accepted sockets */
  bool wanted;                /* accepting, as last asked (resume / pause) */
  GSource *watch;             /* while wanted and not backing off */
  GSource *retry;             /* backing off after running out of fds */
  listener_accept_fn accept_cb;
  void *data;
  guint64 accepted;           /* connections so far, for peer names */
};

static void
set_listen_error (GError **error, const char *name, int err)
{
  g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT,
               "cannot listen on '%s': %s", name, g_strerror (err));
}

/* Whether /proc/net/unix lists a listening socket bound to @path.  Asking
 * there first spares a live listener the probe connection below, which a
 * one-shot listener (ferry -l, nc -lU) would take as its one client. */
static bool
listed_as_listening (const char *path)
{
  g_autofree char *contents = NULL;
  g_autofree char *real = realpath (path, NULL);
  g_auto (GStrv) lines = NULL;

  if (!g_file_get_contents ("/proc/net/unix", &contents, NULL, NULL))
    return false;
  lines = g_strsplit (contents, "\n", -1);
  /* "Num RefCount Protocol Flags Type St Inode Path", after a header line. */
  for (char **line = lines + 1; *line; line++) {
    unsigned flags;
    int at = 0;

    if (sscanf (*line, "%*s %*x %*x %x %*x %*x %*u %n", &flags, &at) == 1 && at > 0 &&
        (flags & PROC_NET_UNIX_LISTENING) &&
        (strcmp (*line + at, path) == 0 || (real && strcmp (*line + at, real) == 0)))
      return true;
  }
  return false;
}

/* A socket file nobody answers on is left over from a dead listener.
 * Keeps errno, which the caller reports when the file is not stale. */
static bool
is_stale_socket (const struct sockaddr_un *sun, socklen_t len)
{
  struct stat st;
  int saved = errno, fd;
  bool stale;

  if (stat (sun->sun_path, &st) < 0 || !S_ISSOCK (st.st_mode) ||
      listed_as_listening (sun->sun_path)) {
    errno = saved;
    return false;
  }
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    errno = saved;
    return false;
  }
  stale = connect (fd, (const struct sockaddr *) sun, len) < 0 && errno == ECONNREFUSED;
  close (fd);
  errno = saved;
  return stale;
}

static int
listen_unix (struct listener *l, const struct address *a, GError **error)
{
  struct sockaddr_un sun;
  socklen_t len = address_unix_sockaddr (a, &sun);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

  if (fd < 0)
    goto fail;
  if (bind (fd, (struct sockaddr *) &sun, len) < 0) {
    if (errno != EADDRINUSE || a->abstract || !is_stale_socket (&sun, len))
      goto fail;
    unlink (a->path);
    if (bind (fd, (struct sockaddr *) &sun, len) < 0)
      goto fail;
  }
  if (!a->abstract)
    l->unlink_path = g_strdup (a->path);
  return fd;

fail:
  set_listen_error (error, l->name, errno);
  if (fd >= 0)
    close (fd);
  return -1;
}

static int
listen_tcp (struct listener *l, const struct address *a, int family, GError **error)
{
  struct addrinfo hints = {
    .ai_family = family,
    .ai_socktype = SOCK_STREAM,
    .ai_flags = AI_PASSIVE | AI_ADDRCONFIG,
  };
  struct addrinfo *list = NULL;
  int fd = -1, err = 0, one = 1;
  int r = getaddrinfo (a->host, a->port, &hints, &list);

  if (r != 0) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot listen on '%s': %s",
                 l->name, r == EAI_SYSTEM ? g_strerror (errno) : gai_strerror (r));
    return -1;
  }
  for (struct addrinfo *ai = list; ai && fd < 0; ai = ai->ai_next) {
    fd = socket (ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                 ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind (fd, ai->ai_addr, ai->ai_addrlen) < 0) {
      err = errno;
      close (fd);
      fd = -1;
    }
  }
  freeaddrinfo (list);
  if (fd < 0)
    set_listen_error (error, l->name, err);
  return fd;
}

static void listener_back_off (struct listener *l);

static gboolean
on_acceptable (int fd, GIOCondition cond, gpointer data)
{
  struct listener *l = data;
  int conn = accept4 (fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

  (void) cond;
  if (conn < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                   errno == ENOMEM)) {
    /* The connection stays pending: polling again at once would spin. */
    ferry_error ("cannot accept on '%s': %s; retrying in 1 s", l->name,
                 g_strerror (errno));
    listener_back_off (l);
    return G_SOURCE_CONTINUE;
  }
  if (conn < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
        errno != ECONNABORTED)
      ferry_error ("cannot accept on '%s': %s", l->name, g_strerror (errno));
    return G_SOURCE_CONTINUE;
  }
  socket_setup (conn, l->options);
  g_autofree char *peer = g_strdup_printf ("connection %" G_GUINT64_FORMAT " on %s",
                                           ++l->accepted, l->name);
  l->accept_cb (conn, peer, l->data);
  return G_SOURCE_CONTINUE;
}

/* Watch the socket exactly while accepting is wanted and not backing off. */
static void
listener_apply (struct listener *l)
{
  if (!l->wanted || l->retry) {
    g_clear_pointer (&l->watch, gsource_release);
  } else if (l->watch == NULL) {
    l->watch = g_unix_fd_source_new (l->fd, G_IO_IN);
    g_source_set_callback (l->watch, G_SOURCE_FUNC (on_acceptable), l, NULL);
    gsource_attach (l->watch);
  }
}

static gboolean
on_retry (gpointer data)
{
  struct listener *l = data;

  g_clear_pointer (&l->retry, gsource_release);
  listener_apply (l);
  return G_SOURCE_REMOVE;
}

static void
listener_back_off (struct listener *l)
{
  if (l->retry == NULL) {
    l->retry = gsource_timer_new (1, on_retry, l);
  }
  listener_apply (l);
}

void
listener_resume (struct listener *l)
{
  l->wanted = true;
  listener_apply (l);
}

void
listener_pause (struct listener *l)
{
  l->wanted = false;
  listener_apply (l);
}

static struct listener *
listener_alloc (const char *name, const struct connect_options *options,
                listener_accept_fn accept_cb, void *data)
{
  struct listener *l = g_new0 (struct listener, 1);

  l->fd = -1;
  l->name = g_strdup (name);
  l->options = options;
  l->accept_cb = accept_cb;
  l->data = data;
  return l;
}

struct listener *
listener_new (const struct address *a, const struct connect_options *options,
              listener_accept_fn accept_cb, void *data, GError **error)
{
  g_autoptr (FerryListener) l = listener_alloc (address_display_name (a), options,
                                                accept_cb, data);

  switch (a->kind) {
  case ADDRESS_UNIX:
    l->fd = listen_unix (l, a, error);
    break;
  case ADDRESS_TCP:
    l->fd = listen_tcp (l, a, options->family, error);
    break;
  case ADDRESS_FD:
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "cannot listen on '%s': fd: addresses are connected sockets", a->text);
    return NULL;
  case ADDRESS_SSH:
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "cannot listen on '%s': an ssh:// address can only be connected to", a->text);
    return NULL;
  }
  if (l->fd < 0)
    return NULL;
  if (listen (l->fd, SOMAXCONN) < 0) {
    set_listen_error (error, l->name, errno);
    return NULL;
  }
  listener_resume (l);
  return g_steal_pointer (&l);
}

struct listener *
listener_new_from_fd (int fd, const char *name, const struct connect_options *options,
                      listener_accept_fn accept_cb, void *data, GError **error)
{
  g_autoptr (FerryListener) l = listener_alloc (name, options, accept_cb, data);
  int listening = 0, type = 0;
  socklen_t optlen = sizeof listening;

  if (getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) < 0) {
    set_listen_error (error, name, errno);
    return NULL;
  }
  optlen = sizeof type;
  if (!listening ||
      getsockopt (fd, SOL_SOCKET, SO_TYPE, &type, &optlen) < 0 || type != SOCK_STREAM) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT,
                 "cannot listen on '%s': not a listening stream socket", name);
    return NULL;
  }
  l->fd = fd;
  fcntl (fd, F_SETFD, FD_CLOEXEC);
  g_unix_set_fd_nonblocking (fd, TRUE, NULL);
  listener_resume (l);
  return g_steal_pointer (&l);
}

void
listener_free (struct listener *l)
{
  if (l == NULL)
    return;
  listener_pause (l);
  g_clear_pointer (&l->retry, gsource_release);
  if (l->fd >= 0)
    close (l->fd);
  if (l->unlink_path)
    unlink (l->unlink_path);
  g_free (l->unlink_path);
  g_free (l->name);
  g_free (l);
}
