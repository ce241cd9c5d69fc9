/* ferry: the load tests' peers (tests/forward-load.sh, tests/tunnels-64.sh,
 * bench/soak.sh): many streams at once, each checked byte for byte.
 *
 *   load-driver echo PATH
 *       listen on the UNIX socket PATH; send every connection's bytes back
 *       (splice through a pipe, one thread per connection), half-close
 *       after its EOF.  Runs until killed.
 *   load-driver clients PATH CONNECTIONS PARALLEL BYTES [SECONDS]
 *       CONNECTIONS connections to PATH, PARALLEL at a time, each sending
 *       BYTES then half-closing, and expecting the same BYTES back then
 *       EOF.  With SECONDS, start connections until SECONDS have passed
 *       (CONNECTIONS is then a minimum).
 *   load-driver tunnels RELAYS BYTES -- COMMAND...
 *       run RELAYS copies of COMMAND at once, each with a pipe as stdin
 *       and one as stdout (as sshd runs a helper), send BYTES into each
 *       and expect them back; every COMMAND must exit 0.
 *
 * Stream N carries a pattern of its own (a random block read at an offset
 * that depends on N), so bytes that were lost, reordered, duplicated, or
 * delivered to the wrong stream are all caught, without hashing.  Prints
 * one summary line; exits 1 with a message naming the stream on the first
 * problem. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PATTERN_SIZE ((size_t) (1 << 20) + 4093)  /* odd, so streams differ */
#define CHUNK ((size_t) 256 * 1024)

extern char **environ;

static unsigned char pattern[2 * PATTERN_SIZE];  /* the block, twice: no wrap inside a chunk */
static atomic_long next_stream, done_streams, total_bytes;
static long n_streams;
static size_t stream_bytes;
static struct timespec deadline;
static const char *connect_path;
static char **command;

__attribute__ ((noreturn, format (printf, 1, 2))) static void
die (const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  fputs ("load-driver: ", stderr);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
  exit (1);
}

static void
make_pattern (void)
{
  uint64_t x = 0x853c49e6748fea9bull;

  for (size_t i = 0; i < PATTERN_SIZE; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    pattern[i] = (unsigned char) (x >> 24);
  }
  memcpy (pattern + PATTERN_SIZE, pattern, PATTERN_SIZE);
}

static size_t
size_arg (const char *s)
{
  char *end;
  double v = strtod (s, &end);

  switch (*end) {
  case 'K': v *= 1024; break;
  case 'M': v *= 1024 * 1024; break;
  case 'G': v *= 1024.0 * 1024 * 1024; break;
  case '\0': break;
  default: die ("bad size '%s'", s);
  }
  return (size_t) v;
}

static void
set_nonblocking (int fd)
{
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
}

/* Send stream @id's BYTES on @wfd while checking what comes back on @rfd,
 * to EOF.  @wfd == @rfd: a socket, half-closed after the last byte. */
static void
run_stream (long id, int wfd, int rfd)
{
  size_t start = (size_t) id * 7919 % PATTERN_SIZE;
  size_t sent = 0, got = 0;
  unsigned char *buf = malloc (CHUNK);
  bool write_open = true;

  set_nonblocking (wfd);
  set_nonblocking (rfd);
  for (;;) {
    struct pollfd p[2] = { { rfd, POLLIN, 0 }, { wfd, POLLOUT, 0 } };
    if (write_open && sent == stream_bytes) {
      if (wfd == rfd)
        shutdown (wfd, SHUT_WR);
      else
        close (wfd);
      write_open = false;
    }
    if (poll (p, write_open ? 2 : 1, 120000) <= 0)
      die ("stream %ld: no progress in 120 s (sent %zu, got %zu of %zu)", id, sent, got,
           stream_bytes);
    if (write_open && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      size_t off = (start + sent) % PATTERN_SIZE, len = stream_bytes - sent;
      ssize_t n = write (wfd, pattern + off, len < CHUNK ? len : CHUNK);
      if (n < 0 && errno != EAGAIN && errno != EINTR)
        die ("stream %ld: write after %zu bytes: %s", id, sent, strerror (errno));
      if (n > 0)
        sent += (size_t) n;
    }
    if (p[0].revents & (POLLIN | POLLERR | POLLHUP)) {
      ssize_t n = read (rfd, buf, CHUNK);
      if (n < 0 && errno != EAGAIN && errno != EINTR)
        die ("stream %ld: read after %zu bytes: %s", id, got, strerror (errno));
      if (n == 0)
        break;
      if (n > 0) {
        if (got + (size_t) n > stream_bytes)
          die ("stream %ld: %zu bytes back, more than the %zu sent", id, got + n, stream_bytes);
        if (memcmp (buf, pattern + (start + got) % PATTERN_SIZE, (size_t) n) != 0)
          die ("stream %ld: the bytes back differ in %zu..%zu", id, got, got + n);
        got += (size_t) n;
      }
    }
  }
  if (got != stream_bytes || sent != stream_bytes)
    die ("stream %ld: EOF after %zu bytes back of %zu (%zu sent)", id, got, stream_bytes, sent);
  if (write_open && wfd != rfd)
    close (wfd);
  close (rfd);
  free (buf);
  atomic_fetch_add (&total_bytes, (long) got);
  atomic_fetch_add (&done_streams, 1);
}

static bool
before_deadline (void)
{
  struct timespec now;

  if (deadline.tv_sec == 0)
    return false;
  clock_gettime (CLOCK_MONOTONIC, &now);
  return now.tv_sec < deadline.tv_sec;
}

static void *
client_thread (void *arg)
{
  long id;

  (void) arg;
  while ((id = atomic_fetch_add (&next_stream, 1)) < n_streams || before_deadline ()) {
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    snprintf (sun.sun_path, sizeof sun.sun_path, "%s", connect_path);
    if (fd < 0 || connect (fd, (struct sockaddr *) &sun, sizeof sun) < 0)
      die ("stream %ld: cannot connect to '%s': %s", id, connect_path, strerror (errno));
    run_stream (id, fd, fd);
  }
  return NULL;
}

static void *
tunnel_thread (void *arg)
{
  long id = (long) (intptr_t) arg;
  int in[2], out[2], status;
  posix_spawn_file_actions_t fa;
  pid_t pid;

  if (pipe2 (in, O_CLOEXEC) < 0 || pipe2 (out, O_CLOEXEC) < 0)
    die ("pipe: %s", strerror (errno));
  posix_spawn_file_actions_init (&fa);
  posix_spawn_file_actions_adddup2 (&fa, in[0], 0);
  posix_spawn_file_actions_adddup2 (&fa, out[1], 1);
  if ((errno = posix_spawn (&pid, command[0], &fa, NULL, command, environ)) != 0)
    die ("cannot run '%s': %s", command[0], strerror (errno));
  posix_spawn_file_actions_destroy (&fa);
  close (in[0]);
  close (out[1]);
  run_stream (id, in[1], out[0]);
  if (waitpid (pid, &status, 0) < 0 || !WIFEXITED (status) || WEXITSTATUS (status) != 0)
    die ("relay %ld (pid %ld) ended with status 0x%x", id, (long) pid, status);
  return NULL;
}

static void *
echo_thread (void *arg)
{
  int fd = (int) (intptr_t) arg, p[2];
  ssize_t n;

  if (pipe2 (p, O_CLOEXEC) < 0)
    die ("pipe: %s", strerror (errno));
  fcntl (p[1], F_SETPIPE_SZ, 1 << 20);
  while ((n = splice (fd, NULL, p[1], NULL, 1 << 20, SPLICE_F_MOVE)) > 0)
    while (n > 0) {
      ssize_t m = splice (p[0], NULL, fd, NULL, (size_t) n, SPLICE_F_MOVE);
      if (m <= 0)
        goto out;
      n -= m;
    }
out:
  shutdown (fd, SHUT_WR);
  close (fd);
  close (p[0]);
  close (p[1]);
  return NULL;
}

__attribute__ ((noreturn)) static void
echo_server (const char *path)
{
  struct sockaddr_un sun = { .sun_family = AF_UNIX };
  int lfd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  pthread_attr_t attr;

  snprintf (sun.sun_path, sizeof sun.sun_path, "%s", path);
  unlink (path);
  if (lfd < 0 || bind (lfd, (struct sockaddr *) &sun, sizeof sun) < 0 || listen (lfd, 256) < 0)
    die ("cannot listen on '%s': %s", path, strerror (errno));
  pthread_attr_init (&attr);
  pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize (&attr, 64 * 1024);
  for (;;) {
    pthread_t t;
    int fd = accept4 (lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      die ("accept: %s", strerror (errno));
    }
    if ((errno = pthread_create (&t, &attr, echo_thread, (void *) (intptr_t) fd)) != 0)
      die ("pthread_create: %s", strerror (errno));
  }
}

static void
run_threads (long n, void *(*fn) (void *))
{
  pthread_t *t = calloc ((size_t) n, sizeof *t);

  for (long i = 0; i < n; i++)
    if ((errno = pthread_create (&t[i], NULL, fn, (void *) (intptr_t) i)) != 0)
      die ("pthread_create: %s", strerror (errno));
  for (long i = 0; i < n; i++)
    pthread_join (t[i], NULL);
  free (t);
}

int
main (int argc, char **argv)
{
  struct timespec t0, t1;
  double secs;

  signal (SIGPIPE, SIG_IGN);
  if (argc == 3 && strcmp (argv[1], "echo") == 0)
    echo_server (argv[2]);
  make_pattern ();
  clock_gettime (CLOCK_MONOTONIC, &t0);
  if ((argc == 6 || argc == 7) && strcmp (argv[1], "clients") == 0) {
    connect_path = argv[2];
    n_streams = atol (argv[3]);
    stream_bytes = size_arg (argv[5]);
    if (argc == 7) {
      clock_gettime (CLOCK_MONOTONIC, &deadline);
      deadline.tv_sec += atol (argv[6]);
    }
    run_threads (atol (argv[4]), client_thread);
  } else if (argc >= 6 && strcmp (argv[1], "tunnels") == 0 && strcmp (argv[4], "--") == 0) {
    n_streams = atol (argv[2]);
    stream_bytes = size_arg (argv[3]);
    command = argv + 5;
    run_threads (n_streams, tunnel_thread);
  } else {
    fprintf (stderr, "usage: load-driver echo PATH\n"
             "       load-driver clients PATH CONNECTIONS PARALLEL BYTES [SECONDS]\n"
             "       load-driver tunnels RELAYS BYTES -- COMMAND...\n");
    return 2;
  }
  clock_gettime (CLOCK_MONOTONIC, &t1);
  secs = (double) (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf ("%ld streams intact, %zu bytes each way each, %.1f s, %.0f MiB/s each way\n",
          atomic_load (&done_streams), stream_bytes, secs,
          (double) atomic_load (&total_bytes) / secs / (1024 * 1024));
  return 0;
}
