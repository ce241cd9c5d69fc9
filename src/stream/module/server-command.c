/* ferry: a '[ CMD ARGS... ]' export's server (server-command.h). */
#include <config.h>

#include "server-command.h"

#include <glib-unix.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "gsource-release.h"
#include "message.h"

/* How long a server that did not serve may take to end and say why, and
 * one that was told to stop to end. */
#define SERVER_END_MS 5000
#define LISTEN_PID_DIGITS 20

/* @fd moved above the standard streams and fd 3, which the child sets
 * (ferry may run with any of them closed), close-on-exec; -1 stays. */
static int
above_fd3 (int fd)
{
  int moved;

  if (fd < 0 || fd > 3)
    return fd;
  moved = fcntl (fd, F_DUPFD_CLOEXEC, 4);
  close (fd);
  return moved;
}

/* A listening socket at an abstract address of the kernel's choosing
 * (autobind), connected to once: *@connected. */
static int
listen_and_connect (int *connected)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  socklen_t len = sizeof addr;
  int listener = above_fd3 (socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));

  *connected = -1;
  if (listener == -1)
    return -1;
  if (bind (listener, (struct sockaddr *) &addr, sizeof (sa_family_t)) == -1 ||
      listen (listener, 1) == -1 || getsockname (listener, (struct sockaddr *) &addr, &len) == -1 ||
      (*connected = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
      connect (*connected, (struct sockaddr *) &addr, len) == -1) {
    int saved = errno;
    close (listener);
    if (*connected >= 0)
      close (*connected);
    errno = saved;
    return -1;
  }
  return listener;
}

/* The child's side, between fork and exec: async-signal-safe calls only.
 * @listen_pid: the environment's "LISTEN_PID=" entry, with room for the
 * digits. */
static void G_GNUC_NORETURN
exec_server (char *const *argv, char **envp, char *listen_pid, int listener, int err_write,
             int null)
{
  char digits[LISTEN_PID_DIGITS], *p = listen_pid + strlen ("LISTEN_PID=");
  long pid = getpid ();
  int n = 0;
  sigset_t none;

  do
    digits[n++] = (char) ('0' + pid % 10);
  while ((pid /= 10) > 0);
  while (n > 0)
    *p++ = digits[--n];
  *p = '\0';
  setpgid (0, 0);
  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
  /* The listener as fd 3; nothing read from ferry's stdin, nothing
   * written into its stdout (a stream, maybe). */
  if (dup2 (listener, 3) == -1 || dup2 (null, 0) == -1 ||
      (err_write >= 0 && dup2 (err_write, 2) == -1) || dup2 (err_write >= 0 ? err_write : null, 1) == -1)
    _exit (127);
  execvpe (argv[0], argv, envp);
  _exit (127);
}

static void
close_open (int fd)
{
  if (fd >= 0)
    close (fd);
}

int
server_command_start (struct server_command *s, char *const *argv, bool capture,
                      const char *name, GError **error)
{
  g_auto (GStrv) envp = g_environ_unsetenv (g_get_environ (), "LISTEN_FDNAMES");
  int connected, listener, null, pipe_fds[2] = { -1, -1 }, saved;
  char *listen_pid = NULL;
  bool ready;

  *s = (struct server_command) { .err = -1, .name = g_strdup (name),
                                 .program = g_path_get_basename (argv[0]) };
  envp = g_environ_setenv (envp, "LISTEN_FDS", "1", TRUE);
  envp = g_environ_setenv (envp, "LISTEN_PID", "00000000000000000000", TRUE);
  for (char **e = envp; *e && !listen_pid; e++)
    if (g_str_has_prefix (*e, "LISTEN_PID="))
      listen_pid = *e;
  listener = listen_and_connect (&connected);
  null = above_fd3 (open ("/dev/null", O_RDWR | O_CLOEXEC));
  if (capture && pipe2 (pipe_fds, O_CLOEXEC) == 0) {
    pipe_fds[0] = above_fd3 (pipe_fds[0]);
    pipe_fds[1] = above_fd3 (pipe_fds[1]);
  }
  ready = listener >= 0 && null >= 0 && (!capture || (pipe_fds[0] >= 0 && pipe_fds[1] >= 0));
  if (ready && (s->pid = fork ()) == 0)
    exec_server (argv, envp, listen_pid, listener, pipe_fds[1], null);
  saved = errno;
  close_open (listener);
  close_open (null);
  close_open (pipe_fds[1]);
  if (!ready || s->pid < 0) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot start the server of %s: %s",
                 name, g_strerror (saved));
    s->pid = 0;
    close_open (connected);
    close_open (pipe_fds[0]);
    return -1;
  }
  s->err = pipe_fds[0];
  return connected;
}

char *
server_command_reason (struct server_command *s)
{
  g_autoptr (GString) words = g_string_new (NULL);
  gint64 deadline = g_get_monotonic_time () + SERVER_END_MS * G_TIME_SPAN_MILLISECOND;
  struct pollfd p = { .fd = s->err, .events = POLLIN };
  char buf[4096];

  if (s->err < 0)
    return NULL;
  /* Until the server has ended (and its pipe with it). */
  for (gint64 left; (left = deadline - g_get_monotonic_time ()) > 0;) {
    ssize_t n;
    if (poll (&p, 1, (int) (left / G_TIME_SPAN_MILLISECOND) + 1) == -1 && errno != EINTR)
      break;
    n = read (s->err, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
      break;
    if (n > 0)
      g_string_append_len (words, buf, n);
  }
  return words->len ? ferry_program_words (words->str, s->program) : NULL;
}

/* A served server's stderr: its whole lines are details. */
static gboolean
on_server_stderr (gint fd, GIOCondition condition, gpointer data)
{
  struct server_command *s = data;
  char buf[4096];
  ssize_t n = read (fd, buf, sizeof buf - 1);
  char *line, *nl;

  (void) condition;
  if (n < 0 && errno == EINTR)
    return G_SOURCE_CONTINUE;
  if (n <= 0) {
    s->err_watch = NULL;
    return G_SOURCE_REMOVE;
  }
  buf[n] = '\0';
  for (line = buf; (nl = strchr (line, '\n')); line = nl + 1)
    ferry_detail ("the server of %s: %.*s", s->name, (int) (nl - line), line);
  if (*line)
    ferry_detail ("the server of %s: %s", s->name, line);
  return G_SOURCE_CONTINUE;
}

void
server_command_serving (struct server_command *s)
{
  if (s->err < 0)
    return;
  s->err_watch = g_unix_fd_source_new (s->err, G_IO_IN | G_IO_HUP | G_IO_ERR);
  g_source_set_callback (s->err_watch, (GSourceFunc) (void (*) (void)) on_server_stderr, s,
                         NULL);
  gsource_attach (s->err_watch);
}

void
server_command_stop (struct server_command *s)
{
  gint64 deadline = g_get_monotonic_time () + SERVER_END_MS * G_TIME_SPAN_MILLISECOND;

  g_clear_pointer (&s->err_watch, gsource_release);
  if (s->err >= 0)
    close (s->err);
  s->err = -1;
  g_clear_pointer (&s->name, g_free);
  g_clear_pointer (&s->program, g_free);
  if (s->pid <= 0)
    return;
  kill (s->pid, SIGTERM);
  while (waitpid (s->pid, NULL, WNOHANG) == 0) {
    if (g_get_monotonic_time () > deadline) {
      kill (s->pid, SIGKILL);
      while (waitpid (s->pid, NULL, 0) == -1 && errno == EINTR)
        ;
      break;
    }
    g_usleep (5000);
  }
  s->pid = 0;
}
