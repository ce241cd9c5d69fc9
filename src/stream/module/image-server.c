/* ferry: the qemu-nbd of an image path (image-server.h). */
#include <config.h>

#include "image-server.h"

#include <glib-unix.h>
#include <glib/gstdio.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "gsource-release.h"
#include "message.h"

/* How long qemu-nbd may take to say why it did not serve, and to end. */
#define SERVER_END_MS 5000
/* LISTEN_PID's value until the child writes its pid over it: room for any. */
#define LISTEN_PID_ROOM "00000000000000000000"

static void
close_open (int fd)
{
  if (fd >= 0)
    close (fd);
}

/* @fd moved above fd 3, which the child sets, and above the standard
 * streams (ferry may run with any of them closed); close-on-exec.  -1
 * stays -1. */
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

/* A listening socket, and *@connected to it, at a path in a directory of
 * mode 0700 that is gone again when this returns: no one else could
 * connect, no one else can now, and nothing is left in /tmp (where
 * libnbd puts a '[ CMD ]' server's: a short path, whatever TMPDIR is). */
static int
listen_and_connect (const char *name, int *connected, GError **error)
{
  char dir[] = "/tmp/ferry-XXXXXX";
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  int listener, saved;

  *connected = -1;
  if (g_mkdtemp_full (dir, 0700) == NULL) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot start qemu-nbd for %s: "
                 "cannot make a directory in /tmp: %s", name, g_strerror (errno));
    return -1;
  }
  g_snprintf (addr.sun_path, sizeof addr.sun_path, "%s/sock", dir);
  listener = above_fd3 (socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (listener == -1 || bind (listener, (struct sockaddr *) &addr, sizeof addr) == -1 ||
      listen (listener, 1) == -1 ||
      (*connected = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
      connect (*connected, (struct sockaddr *) &addr, sizeof addr) == -1) {
    saved = errno;
    close_open (listener);
    close_open (*connected);
    listener = *connected = -1;
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot start qemu-nbd for %s: "
                 "its socket in %s: %s", name, dir, g_strerror (saved));
  }
  g_unlink (addr.sun_path);
  g_rmdir (dir);
  return listener;
}

/* The child, between fork and exec: async-signal-safe calls only, with
 * every signal blocked since before the fork.  Why exec failed goes into
 * @status, which a successful exec closes. */
static void G_GNUC_NORETURN
exec_server (const char *program, char *const *argv, char **envp, char *listen_pid,
             pid_t parent, int listener, int err_write, int null, int status)
{
  char digits[sizeof LISTEN_PID_ROOM], *p = listen_pid + strlen ("LISTEN_PID=");
  struct sigaction dfl = { .sa_handler = SIG_DFL };
  long pid = getpid ();
  int n = 0, failure;
  sigset_t none;

  do
    digits[n++] = (char) ('0' + pid % 10);
  while ((pid /= 10) > 0);
  while (n > 0)
    *p++ = digits[--n];
  *p = '\0';
  /* ferry's handlers are not the server's, nor is ferry's ignored SIGPIPE;
   * a signal that the user had ignored stays so, as exec would keep it. */
  for (int sig = 1; sig < NSIG; sig++) {
    struct sigaction old;
    if (sigaction (sig, NULL, &old) == 0 &&
        (sig == SIGPIPE || (old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL)))
      sigaction (sig, &dfl, NULL);
  }
  /* A job-control stop sent to ferry's group before setpgid would stop it
   * outside that group, where no SIGCONT comes: setting SIG_IGN drops it. */
  for (const int *sig = (const int[]) { SIGTSTP, SIGTTIN, SIGTTOU, 0 }; *sig; sig++) {
    struct sigaction ign = { .sa_handler = SIG_IGN };
    sigaction (*sig, &ign, NULL);
    sigaction (*sig, &dfl, NULL);
  }
  setpgid (0, 0);
  /* Ended with ferry, however ferry ends (unless ferry has gone already). */
  if (prctl (PR_SET_PDEATHSIG, SIGTERM) == -1 || getppid () != parent)
    _exit (127);
  if (dup2 (listener, 3) == -1 || dup2 (null, 0) == -1 || dup2 (err_write, 1) == -1 ||
      dup2 (err_write, 2) == -1) {
    failure = errno;
  } else {
    sigemptyset (&none);
    sigprocmask (SIG_SETMASK, &none, NULL);
    execve (program, argv, envp);
    failure = errno;
  }
  while (write (status, &failure, sizeof failure) == -1 && errno == EINTR)
    ;
  _exit (127);
}

/* Called on the main thread, before the stream's other threads start, so
 * that PR_SET_PDEATHSIG's parent (the forking thread) lives as long as
 * ferry, and no other thread forks with the status pipe open. */
int
image_server_start (struct image_server *s, char *const *argv, const char *name,
                    GError **error)
{
  g_autofree char *program = g_find_program_in_path (argv[0]);
  g_auto (GStrv) envp = g_environ_unsetenv (g_get_environ (), "LISTEN_FDNAMES");
  int connected, listener, null, err_pipe[2] = { -1, -1 }, status[2] = { -1, -1 };
  int failure;
  pid_t parent = getpid ();
  char *listen_pid = NULL;
  sigset_t all, old;
  ssize_t n;

  *s = (struct image_server) { .err = -1, .name = g_strdup (name) };
  envp = g_environ_setenv (envp, "LISTEN_FDS", "1", TRUE);
  envp = g_environ_setenv (envp, "LISTEN_PID", LISTEN_PID_ROOM, TRUE);
  for (char **e = envp; *e && !listen_pid; e++)
    if (g_str_has_prefix (*e, "LISTEN_PID="))
      listen_pid = *e;
  if (program == NULL) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot run %s for %s: %s", argv[0],
                 name, g_strerror (ENOENT));
    return -1;
  }
  /* A stop (which ends ferry at once while it connects) waits until the
   * socket's directory is gone, and no handler of ferry's may run in the
   * child before its exec. */
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &old);
  if ((listener = listen_and_connect (name, &connected, error)) < 0) {
    pthread_sigmask (SIG_SETMASK, &old, NULL);
    return -1;
  }
  null = above_fd3 (open ("/dev/null", O_RDWR | O_CLOEXEC));
  if (pipe2 (err_pipe, O_CLOEXEC) == 0 && pipe2 (status, O_CLOEXEC) == 0)
    for (int i = 0; i < 2; i++)
      err_pipe[i] = above_fd3 (err_pipe[i]), status[i] = above_fd3 (status[i]);
  if (null >= 0 && err_pipe[0] >= 0 && err_pipe[1] >= 0 && status[0] >= 0 && status[1] >= 0) {
    s->pid = fork ();
    if (s->pid == 0)
      exec_server (program, argv, envp, listen_pid, parent, listener, err_pipe[1], null,
                   status[1]);
  }
  failure = errno;
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  close_open (listener);
  close_open (null);
  close_open (err_pipe[1]);
  close_open (status[1]);
  if (s->pid > 0) {
    while ((n = read (status[0], &failure, sizeof failure)) == -1 && errno == EINTR)
      ;
    if (n == sizeof failure) {
      while (waitpid (s->pid, NULL, 0) == -1 && errno == EINTR)
        ;
      s->pid = 0;
    }
  }
  close_open (status[0]);
  if (s->pid <= 0) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot run %s for %s: %s", program,
                 name, g_strerror (failure));
    s->pid = 0;
    close_open (connected);
    close_open (err_pipe[0]);
    return -1;
  }
  s->err = err_pipe[0];
  g_unix_set_fd_nonblocking (s->err, TRUE, NULL);
  return connected;
}

char *
image_server_reason (struct image_server *s)
{
  g_autoptr (GString) words = g_string_new (NULL);
  gint64 deadline = g_get_monotonic_time () + SERVER_END_MS * G_TIME_SPAN_MILLISECOND;
  struct pollfd p = { .fd = s->err, .events = POLLIN };
  char buf[4096];

  if (s->err < 0)
    return NULL;
  for (gint64 left; (left = deadline - g_get_monotonic_time ()) > 0;) {
    int ready = poll (&p, 1, (int) (left / G_TIME_SPAN_MILLISECOND) + 1);
    ssize_t n;
    if (ready == 0 || (ready < 0 && errno != EINTR))
      break;
    if (ready < 0)
      continue;
    n = read (s->err, buf, sizeof buf);
    if (n > 0)
      g_string_append_len (words, buf, n);
    else if (n == 0 || (errno != EINTR && errno != EAGAIN))
      break;
  }
  return words->len ? ferry_program_words (words->str, "qemu-nbd") : NULL;
}

/* What the serving qemu-nbd writes: its lines are details; at its end the
 * source stays, until image_server_stop releases it. */
static gboolean
on_server_output (gint fd, GIOCondition condition, gpointer data)
{
  struct image_server *s = data;
  g_autoptr (GString) lines = g_string_new (NULL);
  char buf[4096], *line, *nl;
  ssize_t n = read (fd, buf, sizeof buf);

  (void) condition;
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return G_SOURCE_CONTINUE;
  if (n > 0)
    g_string_append_len (lines, buf, n);
  for (line = lines->str; (nl = strchr (line, '\n')); line = nl + 1)
    ferry_detail ("qemu-nbd for %s: %.*s", s->name, (int) (nl - line), line);
  /* A line longer than a read comes in parts. */
  if (*line)
    ferry_detail ("qemu-nbd for %s: %s", s->name, line);
  return n > 0 ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

void
image_server_serving (struct image_server *s)
{
  s->err_watch = g_unix_fd_source_new (s->err, G_IO_IN | G_IO_HUP | G_IO_ERR);
  g_source_set_callback (s->err_watch, (GSourceFunc) (void (*) (void)) on_server_output, s,
                         NULL);
  gsource_attach (s->err_watch);
}

void
image_server_stop (struct image_server *s)
{
  gint64 deadline = g_get_monotonic_time () + SERVER_END_MS * G_TIME_SPAN_MILLISECOND;

  g_clear_pointer (&s->err_watch, gsource_release);
  close_open (s->err);
  s->err = -1;
  g_clear_pointer (&s->name, g_free);
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
    g_usleep (5 * G_TIME_SPAN_MILLISECOND);
  }
  s->pid = 0;
}
