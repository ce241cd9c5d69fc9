/* ferry: a command on this host as a relay's far end (endpoint-process.h).
 *
 * The bytes go through a socket endpoint (endpoint-fd.h) on the parent's
 * end of the socketpair; this one only adds the process: its exit, which
 * the relay waits for (delivering), its stderr's lines and its signals. */
#include <config.h>

#include "endpoint-process.h"

#include <glib-unix.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "endpoint-fd.h"
#include "error.h"
#include "gsource-release.h"
#include "message.h"

/* The socketpair's buffers: a few stream records' worth each way. */
#define PROCESS_SOCKET_BUFFER (4 * 1024 * 1024)

struct process_endpoint {
  struct endpoint base;
  struct endpoint *socket;    /* the parent's end, which the bytes go through */
  GPid pid;
  GSource *child_watch;       /* until the command has exited */
  int stderr_fd;              /* the read end of its stderr */
  GSource *stderr_watch;
  GString *stderr_line;       /* its stderr's unfinished line */
  char *label;                /* its lines' prefix, or NULL */
  bool exited;
  int wait_status;            /* once it has exited */
  void (*on_exit) (void *);   /* endpoint_process_when_exited's */
  void *on_exit_data;
};

static struct endpoint *
inner (struct endpoint *ep)
{
  return ((struct process_endpoint *) ep)->socket;
}

static ssize_t
process_readv (struct endpoint *ep, const struct iovec *iov, int iovcnt)
{
  return inner (ep)->ops->readv (inner (ep), iov, iovcnt);
}

static ssize_t
process_writev (struct endpoint *ep, const struct iovec *iov, int iovcnt)
{
  return inner (ep)->ops->writev (inner (ep), iov, iovcnt);
}

static int
process_shutdown_write (struct endpoint *ep)
{
  return inner (ep)->ops->shutdown_write (inner (ep));
}

static void
process_set_interest (struct endpoint *ep, bool want_read, bool want_write)
{
  inner (ep)->ops->set_interest (inner (ep), want_read, want_write);
}

static int
process_splice_fd (struct endpoint *ep, bool write)
{
  return endpoint_splice_fd (inner (ep), write);
}

static bool
process_peer_gone (struct endpoint *ep)
{
  return endpoint_peer_gone (inner (ep));
}

static bool
process_delivering (struct endpoint *ep)
{
  return !((struct process_endpoint *) ep)->exited;
}

/* Pass on the lines that its stderr holds now. */
static void
drain_stderr (struct process_endpoint *pe)
{
  char buf[4096];
  ssize_t n;

  while ((n = read (pe->stderr_fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0)
      g_string_append_len (pe->stderr_line, buf, n);
  ferry_pass_lines (pe->stderr_line, pe->label, false);
  if (n == 0)
    g_clear_pointer (&pe->stderr_watch, gsource_release);
}

static gboolean
on_stderr (gint fd, GIOCondition condition, gpointer data)
{
  (void) fd; (void) condition;
  drain_stderr (data);
  return G_SOURCE_CONTINUE;
}

/* A command killed here says nothing more: what it still had to say is
 * dropped with it, as a closed ssh channel drops it. */
static void
process_free (struct endpoint *ep)
{
  struct process_endpoint *pe = (struct process_endpoint *) ep;
  int status;

  g_clear_pointer (&pe->child_watch, gsource_release);
  g_clear_pointer (&pe->stderr_watch, gsource_release);
  if (!pe->exited) {
    kill (pe->pid, SIGKILL);
    while (waitpid (pe->pid, &status, 0) < 0 && errno == EINTR)
      ;
  }
  close (pe->stderr_fd);
  g_string_free (pe->stderr_line, TRUE);
  g_free (pe->label);
  endpoint_free (pe->socket);
  endpoint_clear_names (ep);
  g_free (pe);
}

static const struct endpoint_ops process_ops = {
  .readv = process_readv,
  .writev = process_writev,
  .shutdown_write = process_shutdown_write,
  .set_interest = process_set_interest,
  .free = process_free,
  .splice_fd = process_splice_fd,
  .peer_gone = process_peer_gone,
  .delivering = process_delivering,
};

static void
on_socket_ready (void *data, struct endpoint *ep, bool readable, bool writable)
{
  struct process_endpoint *pe = data;

  (void) ep;
  pe->base.ready (pe->base.ready_data, &pe->base, readable, writable);
}

static void
on_process_exit (GPid pid, gint wait_status, gpointer data)
{
  struct process_endpoint *pe = data;

  g_spawn_close_pid (pid);
  g_clear_pointer (&pe->child_watch, gsource_release);
  pe->exited = true;
  pe->wait_status = wait_status;
  /* All of its lines are in the pipe now, before its status is used. */
  drain_stderr (pe);
  ferry_pass_lines (pe->stderr_line, pe->label, true);
  /* The relay may have waited for it (delivering). */
  if (pe->base.ready)
    pe->base.ready (pe->base.ready_data, &pe->base, false, false);
  /* Last: it may free the endpoint. */
  if (pe->on_exit)
    pe->on_exit (pe->on_exit_data);
}

/* In the child, before exec: a process group of its own, so that only
 * ferry passes a terminal's ^C on to it. */
static void
own_process_group (gpointer data)
{
  (void) data;
  setpgid (0, 0);
}

struct endpoint *
endpoint_process_spawn (char **argv, const char *name, const char *label, GError **error)
{
  int fds[2], err[2], size = PROCESS_SOCKET_BUFFER;
  g_autoptr (GError) spawn_error = NULL;
  struct process_endpoint *pe;
  GPid pid;

  if (pipe2 (err, O_CLOEXEC) < 0)
    err[0] = err[1] = -1;
  if (err[0] < 0 || socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0) {
    ferry_set_error (error, FERRY_EXIT_FAILURE, "cannot run %s: %s", argv[0],
                     g_strerror (errno));
    if (err[0] >= 0) {
      close (err[0]);
      close (err[1]);
    }
    return NULL;
  }
  for (int k = 0; k < 2; k++) {
    setsockopt (fds[k], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    setsockopt (fds[k], SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  }
  if (!g_spawn_async_with_pipes_and_fds (NULL, (const char *const *) argv, NULL,
                                         G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD,
                                         own_process_group, NULL, fds[1], fds[1], err[1],
                                         NULL, NULL, 0, &pid, NULL, NULL, NULL,
                                         &spawn_error)) {
    close (fds[0]);
    close (fds[1]);
    close (err[0]);
    close (err[1]);
    ferry_set_error (error, FERRY_EXIT_FAILURE, "cannot run %s: %s", argv[0],
                     spawn_error->message);
    return NULL;
  }
  close (fds[1]);
  close (err[1]);
  g_unix_set_fd_nonblocking (fds[0], TRUE, NULL);
  g_unix_set_fd_nonblocking (err[0], TRUE, NULL);
  pe = g_new0 (struct process_endpoint, 1);
  pe->base.ops = &process_ops;
  pe->base.name = g_strdup (name);
  pe->socket = endpoint_socket_new (fds[0], name);
  pe->socket->ready = on_socket_ready;
  pe->socket->ready_data = pe;
  pe->pid = pid;
  pe->stderr_fd = err[0];
  pe->stderr_line = g_string_new (NULL);
  pe->label = g_strdup (label);
  pe->stderr_watch = g_unix_fd_source_new (err[0], G_IO_IN | G_IO_HUP | G_IO_ERR);
  g_source_set_callback (pe->stderr_watch, (GSourceFunc) (void (*) (void)) on_stderr, pe, NULL);
  gsource_attach (pe->stderr_watch);
  pe->child_watch = g_child_watch_source_new (pid);
  g_source_set_callback (pe->child_watch, (GSourceFunc) (void (*) (void)) on_process_exit, pe, NULL);
  gsource_attach (pe->child_watch);
  return &pe->base;
}

int
endpoint_process_exit_status (struct endpoint *ep)
{
  struct process_endpoint *pe = (struct process_endpoint *) ep;

  return pe->exited && WIFEXITED (pe->wait_status) ? WEXITSTATUS (pe->wait_status) : -1;
}

const char *
endpoint_process_exit_signal (struct endpoint *ep)
{
  struct process_endpoint *pe = (struct process_endpoint *) ep;

  return pe->exited && WIFSIGNALED (pe->wait_status) ? sigabbrev_np (WTERMSIG (pe->wait_status))
                                                      : NULL;
}

bool
endpoint_process_when_exited (struct endpoint *ep, void (*fn) (void *), void *data)
{
  struct process_endpoint *pe = (struct process_endpoint *) ep;

  pe->on_exit = fn;
  pe->on_exit_data = data;
  return !pe->exited;
}

void
endpoint_process_signal (struct endpoint *ep, int signum)
{
  struct process_endpoint *pe = (struct process_endpoint *) ep;

  if (!pe->exited)
    kill (pe->pid, signum);
}
