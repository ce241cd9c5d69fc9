/* ferry: signals through a self-pipe (signal-watch.h). */
#include <config.h>

#include "signal-watch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <glib-unix.h>

#include "error.h"

/* signal_watch_poll looks for a pending stop at least this often. */
#define STOP_CHECK_MS 200

static const int watched[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 };

/* Which of watched[] were ignored when ferry started, as the first
 * signal_watch_new or signal_watch_block found them (signal_watch_free
 * ignores them all later). */
static bool ignored_at_start[G_N_ELEMENTS (watched)];
static bool start_dispositions_known;

/* The pipe's write end, for the handler; one watch per process. */
static int signal_pipe_wfd = -1;
/* The first signal that stopped ferry, or 0 (signal_watch_stop_pending). */
static volatile sig_atomic_t stop_pending;
/* signal_watch_exit_on_stop's message end, while it applies. */
static const char *volatile exit_suffix;

struct signal_watch {
  int rfd;
  guint source_id;
  signal_watch_fn callback;
  void *data;
};

/* In a signal handler: write(2) and strlen only. */
static void
write_stderr (const char *s)
{
  if (write (STDERR_FILENO, s, strlen (s)) < 0) { }
}

static void
on_signal (int signum)
{
  int saved = errno;
  unsigned char c = (unsigned char) signum;
  const char *suffix = exit_suffix;

  if (signum != SIGUSR1 && suffix) {
    write_stderr ("ferry: stopped by ");
    write_stderr (signal_watch_name (signum));
    write_stderr (suffix);
    _exit (128 + signum);
  }
  if (signum != SIGUSR1 && !stop_pending)
    stop_pending = signum;

  /* A full pipe already holds signals enough to act on. */
  if (write (signal_pipe_wfd, &c, 1) < 0) { }
  errno = saved;
}

void
signal_watch_dispatch (struct signal_watch *w)
{
  unsigned char signums[16];
  ssize_t n = read (w->rfd, signums, sizeof signums);

  for (ssize_t i = 0; i < n; i++)
    w->callback (signums[i], w->data);
}

int
signal_watch_fd (const struct signal_watch *w)
{
  return w->rfd;
}

static gboolean
on_signal_pipe (int fd, GIOCondition condition, gpointer data)
{
  (void) fd; (void) condition;
  signal_watch_dispatch (data);
  return G_SOURCE_CONTINUE;
}

static void
remember_start_dispositions (void)
{
  struct sigaction old;

  if (start_dispositions_known)
    return;
  start_dispositions_known = true;
  /* SIGUSR1 never stops ferry, so it is caught even then (as GNU dd
   * catches it): whoever ignored it meant ferry not to die of it. */
  for (size_t i = 0; i < G_N_ELEMENTS (watched); i++)
    ignored_at_start[i] = watched[i] != SIGUSR1 && sigaction (watched[i], NULL, &old) == 0 &&
                          old.sa_handler == SIG_IGN;
}

/* @handler for the watched signals, except a stop signal that was ignored
 * when ferry started (nohup, a shell's background job): it stays ignored. */
static void
set_action (void (*handler) (int))
{
  struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART };

  sigemptyset (&sa.sa_mask);
  for (size_t i = 0; i < G_N_ELEMENTS (watched); i++)
    if (!ignored_at_start[i])
      sigaction (watched[i], &sa, NULL);
}

static void
watched_set (sigset_t *set)
{
  sigemptyset (set);
  for (size_t i = 0; i < G_N_ELEMENTS (watched); i++)
    sigaddset (set, watched[i]);
}

struct signal_watch *
signal_watch_new (signal_watch_fn callback, void *data)
{
  struct signal_watch *w = g_new0 (struct signal_watch, 1);
  sigset_t set;
  int fds[2];

  g_assert (signal_pipe_wfd < 0);
  /* Out of fds this early: nothing else will work either. */
  if (pipe2 (fds, O_CLOEXEC | O_NONBLOCK) < 0)
    g_error ("cannot create the signal pipe: %s", g_strerror (errno));
  w->rfd = fds[0];
  signal_pipe_wfd = fds[1];
  w->callback = callback;
  w->data = data;
  w->source_id = g_unix_fd_add (w->rfd, G_IO_IN, on_signal_pipe, w);
  remember_start_dispositions ();
  set_action (on_signal);
  /* A process forked with them blocked (signal_watch_block): now that the
   * handler is in place, the ones that came meanwhile reach it. */
  watched_set (&set);
  pthread_sigmask (SIG_UNBLOCK, &set, NULL);
  return w;
}

static void
watch_release (struct signal_watch *w)
{
  g_source_remove (w->source_id);
  close (w->rfd);
  close (signal_pipe_wfd);
  signal_pipe_wfd = -1;
  g_free (w);
}

void
signal_watch_free (struct signal_watch *w)
{
  if (w == NULL)
    return;
  set_action (SIG_IGN);
  watch_release (w);
}

void
signal_watch_hand_over (struct signal_watch *w)
{
  signal_watch_block (NULL);
  watch_release (w);
}

void
signal_watch_block (sigset_t *old)
{
  sigset_t set;

  remember_start_dispositions ();
  watched_set (&set);
  pthread_sigmask (SIG_BLOCK, &set, old);
}

bool
signal_watch_ignored_at_start (int signum)
{
  remember_start_dispositions ();
  for (size_t i = 0; i < G_N_ELEMENTS (watched); i++)
    if (watched[i] == signum)
      return ignored_at_start[i];
  return false;
}

void
signal_watch_exit_on_stop (const char *suffix)
{
  exit_suffix = suffix;
}

int
signal_watch_stop_pending (void)
{
  return stop_pending;
}

int
signal_watch_poll (int fd, short events, gint64 deadline)
{
  struct pollfd pfd = { .fd = fd, .events = events };

  return signal_watch_poll_many (&pfd, 1, deadline);
}

int
signal_watch_poll_many (struct pollfd *fds, nfds_t n, gint64 deadline)
{
  for (;;) {
    int slice = STOP_CHECK_MS, r;

    if (stop_pending) {
      errno = EINTR;
      return -1;
    }
    if (deadline >= 0) {
      gint64 left_ms = (deadline - g_get_monotonic_time ()) / 1000;
      if (left_ms <= 0)
        return 0;
      slice = (int) MIN (slice, left_ms);
    }
    r = poll (fds, n, slice);
    if (r > 0)
      return 1;
    if (r < 0 && errno != EINTR)
      return -1;
  }
}

bool
signal_watch_set_stopped (GError **error, const char *what)
{
  int signum = stop_pending;

  if (signum)
    g_set_error (error, FERRY_ERROR, 128 + signum, "stopped by %s while connecting to %s",
                 signal_watch_name (signum), what);
  return signum != 0;
}

const char *
signal_watch_name (int signum)
{
  switch (signum) {
  case SIGTERM: return "SIGTERM";
  case SIGINT: return "SIGINT";
  case SIGHUP: return "SIGHUP";
  case SIGQUIT: return "SIGQUIT";
  case SIGUSR1: return "SIGUSR1";
  default: return "a signal";
  }
}
