/* drive: one measured run of one helper, for bench/run.sh.
 *
 * Starts HELPER with pipes as its stdin and stdout and a socket it must
 * connect to as its far side (the way sshd runs a remote helper), moves the
 * scenario's bytes through it with cheap sources and sinks on both sides,
 * verifies them, and prints one line of tab-separated key=value fields:
 *   data=ok|bad        every byte arrived intact (else note= says why)
 *   moved, round_trips bytes delivered (both directions), timed round trips
 *   seconds            from the accepted connection to the last wanted byte
 *   user, sys, maxrss_kib  wait4 rusage of the helper process alone
 *   rss_samples        with --rss-every: VmRSS samples taken once 10% of the
 *                      bytes had arrived (0 without --rss-every)
 *   rss_at10_kib, rss_end_kib  the first and the last of them (-1: none)
 *   rss_min_kib, rss_max_kib   their smallest and largest (-1: none)
 *   status             the helper's exit code, or "signal N"
 *   waited_for_stdin=1 down: it exited only once stdin was closed
 *   other_cpu          share of all CPUs that other processes used meanwhile
 *
 *   drive --scenario up|down|both|ping|split --listen unix:PATH|tcp
 *         [--bytes N] [--count N] [--max-seconds S] [--timeout SECS]
 *         [--stdout-rate BYTES_PER_S] [--rss-every MS] -- HELPER ARGS...
 *
 * A ping-pong stops after --count round trips, or once --max-seconds have
 * passed (so a helper that stalls 40 ms per round trip does not take all
 * day), whichever comes first.
 *
 * --stdout-rate makes the reader of the helper's stdout slow: it reads
 * SLOW_CHUNK bytes at a time, each when it is due at that rate, so the
 * helper's stdout pipe stays full and the helper must hold back.
 * --rss-every samples the helper's VmRSS (/proc/PID/status) every MS
 * milliseconds during an up, down or both transfer.
 *
 * In HELPER ARGS, {PATH} is replaced by the UNIX socket's path and {PORT}
 * by the TCP port (127.0.0.1, an ephemeral port chosen per run).
 *
 * Payload: a pseudo-random pattern with a prime period, so a lost,
 * duplicated or reordered block never lines up with itself again.  Sinks
 * count every byte and compare 16 bytes at the start and end of every read
 * and every STRIDE bytes in between.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PERIOD 1048573u         /* prime, just under 1 MiB */
#define CHUNK (256u * 1024)     /* source write / sink read size */
#define STRIDE 4099u            /* one sample every STRIDE bytes */
#define SAMPLE 16u              /* bytes compared per sample */
#define MSG 64u                 /* ping-pong message size */
#define SPLIT_FIRST 16u         /* split ping-pong: the first part's size */
#define WARMUP 10u              /* untimed round trips before a ping-pong (at most) */
#define SLOW_CHUNK (16u * 1024) /* read size of a sink paced by --stdout-rate */

enum scenario { UP, DOWN, BOTH, PING, SPLIT };
enum after { KEEP_OPEN, CLOSE, SHUT_WRITE };

/* One direction's stream end in this process: a source writing the
 * pattern into fd, or a sink reading and checking it from fd. */
struct stream {
  const char *name;     /* for messages: "stdin", "socket", ... */
  int fd;
  uint64_t want;        /* bytes the stream must carry */
  uint64_t phase;       /* where in the pattern the stream starts */
  uint64_t done;        /* bytes written (source) or read (sink); a sink
                           stores it atomically, for the RSS sampler */
  double rate;          /* sink: bytes per second at most, 0 for no limit */
  double t_last;        /* sink: when the last wanted byte arrived */
  sem_t arrived;        /* sink: posted at the last wanted byte, or at EOF */
  enum after after;     /* source: what to do with fd once written, at
                           once: each side half-closes when its own
                           sending is done, as real peers do */
  pthread_t thread;
  char error[200];      /* empty while all is well */
};

static unsigned char pattern[2 * PERIOD]; /* pattern[i + PERIOD] == pattern[i] */
static pid_t helper_pid;
static volatile bool timed_out;

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
die (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  fputs ("drive: ", stderr);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
  if (helper_pid > 0)
    kill (helper_pid, SIGKILL);
  exit (2);
}

static void
fill_pattern (void)
{
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < PERIOD; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    pattern[i] = pattern[i + PERIOD] = (unsigned char) (x >> 24);
  }
}

static void
set_error (struct stream *s, const char *fmt, ...)
{
  va_list ap;
  if (s->error[0])
    return;
  va_start (ap, fmt);
  vsnprintf (s->error, sizeof s->error, fmt, ap);
  va_end (ap);
}

static bool
same (const unsigned char *buf, uint64_t off, size_t len)
{
  return memcmp (buf, pattern + off % PERIOD, len) == 0;
}

/* Compare samples of buf, which holds stream offsets pos .. pos+len. */
static bool
check (const struct stream *s, const unsigned char *buf, size_t len)
{
  uint64_t pos = s->phase + s->done;
  size_t edge = len < SAMPLE ? len : SAMPLE;

  if (!same (buf, pos, edge) || !same (buf + len - edge, pos + len - edge, edge))
    return false;
  for (uint64_t o = (s->done + STRIDE - 1) / STRIDE * STRIDE; o < s->done + len; o += STRIDE) {
    size_t k = s->done + len - o < SAMPLE ? s->done + len - o : SAMPLE;
    if (!same (buf + (o - s->done), s->phase + o, k))
      return false;
  }
  return true;
}

static void *
source (void *arg)
{
  struct stream *s = arg;

  while (s->done < s->want) {
    uint64_t left = s->want - s->done;
    ssize_t r = write (s->fd, pattern + (s->phase + s->done) % PERIOD,
                       left < CHUNK ? left : CHUNK);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      set_error (s, "writing %s after %llu bytes: %m", s->name,
                 (unsigned long long) s->done);
      break;
    }
    s->done += r;
  }
  if (s->after == CLOSE)
    close (s->fd);
  else if (s->after == SHUT_WRITE)
    shutdown (s->fd, SHUT_WR);
  return NULL;
}

/* A paced sink: sleep until the bytes read so far are due at s->rate,
 * counted from t0. */
static void
pace (const struct stream *s, double t0)
{
  double due = t0 + s->done / s->rate;
  struct timespec ts = { .tv_sec = (time_t) due,
                         .tv_nsec = (long) ((due - (time_t) due) * 1e9) };

  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

static void *
sink (void *arg)
{
  struct stream *s = arg;
  size_t size = s->rate > 0 ? SLOW_CHUNK : CHUNK;
  unsigned char *buf = malloc (size);
  double t0 = now ();

  if (!buf)
    die ("out of memory");
  for (;;) {
    if (s->rate > 0)
      pace (s, t0);
    ssize_t r = read (s->fd, buf, size);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      set_error (s, "reading %s after %llu bytes: %m", s->name,
                 (unsigned long long) s->done);
      break;
    }
    if (r == 0)
      break;
    if (!check (s, buf, r))
      set_error (s, "%s: wrong content at bytes %llu..%llu", s->name,
                 (unsigned long long) s->done, (unsigned long long) s->done + r);
    __atomic_store_n (&s->done, s->done + r, __ATOMIC_RELAXED);
    if (s->want && s->done >= s->want && !s->t_last) {
      s->t_last = now ();
      sem_post (&s->arrived);
    }
  }
  if (!s->t_last) {
    s->t_last = now ();
    sem_post (&s->arrived);
  }
  if (s->done != s->want)
    set_error (s, "%s: %llu bytes arrived, %llu expected", s->name,
               (unsigned long long) s->done, (unsigned long long) s->want);
  free (buf);
  return NULL;
}

static void
start_thread (pthread_t *thread, void *(*fn) (void *), void *arg)
{
  if (pthread_create (thread, NULL, fn, arg) != 0)
    die ("pthread_create failed");
}

static void
start (struct stream *s, void *(*fn) (void *))
{
  start_thread (&s->thread, fn, s);
}

/* Kills the helper if the run overstays its deadline, which unblocks every
 * thread: pipes and the socket then reach EOF or EPIPE. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t finished_cond = PTHREAD_COND_INITIALIZER;
static bool finished;

static void *
watchdog (void *arg)
{
  struct timespec deadline;
  clock_gettime (CLOCK_REALTIME, &deadline);
  deadline.tv_sec += *(int *) arg;
  pthread_mutex_lock (&lock);
  while (!finished)
    if (pthread_cond_timedwait (&finished_cond, &lock, &deadline) == ETIMEDOUT) {
      timed_out = true;
      kill (helper_pid, SIGKILL);
      break;
    }
  pthread_mutex_unlock (&lock);
  return NULL;
}

static bool
read_exact (int fd, unsigned char *buf, size_t len)
{
  while (len) {
    ssize_t r = read (fd, buf, len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    buf += r, len -= r;
  }
  return true;
}

static bool
write_all (int fd, const unsigned char *buf, size_t len)
{
  while (len) {
    ssize_t r = write (fd, buf, len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return false;
    buf += r, len -= r;
  }
  return true;
}

/* Ping-pong far side: answers each MSG-byte request with its complement.
 * In the split scenario it tells the client when a request's first part
 * has arrived, so the second part is written only after the helper has
 * sent the first: that is what exposes Nagle's algorithm. */
struct echo {
  int fd;
  bool split;
  sem_t first_part;
  pthread_t thread;
};

static void *
echo (void *arg)
{
  struct echo *e = arg;
  unsigned char msg[MSG];

  for (;;) {
    if (e->split) {
      if (!read_exact (e->fd, msg, SPLIT_FIRST))
        break;
      sem_post (&e->first_part);
      if (!read_exact (e->fd, msg + SPLIT_FIRST, MSG - SPLIT_FIRST))
        break;
    }
    else if (!read_exact (e->fd, msg, MSG))
      break;
    for (size_t i = 0; i < MSG; i++)
      msg[i] = ~msg[i];
    if (!write_all (e->fd, msg, MSG))
      break;
  }
  if (e->split)
    sem_post (&e->first_part); /* never leave the client waiting */
  return NULL;
}

/* The client side of a ping-pong, on the helper's stdin and stdout.
 * Returns the seconds taken by *trips timed round trips, or < 0. */
static double
ping_pong (int in, int out, struct echo *e, unsigned count, double max_seconds,
           unsigned *trips, char *error, size_t errlen)
{
  unsigned char req[MSG], rep[MSG];
  double t0 = 0;

  unsigned warmup = count < WARMUP ? count : WARMUP;

  *trips = 0;
  for (unsigned i = 0; i < warmup + count; i++) {
    if (i == warmup)
      t0 = now ();
    memcpy (req, pattern + (uint64_t) i * MSG % PERIOD, MSG);
    bool ok;
    if (e->split) {
      ok = write_all (in, req, SPLIT_FIRST);
      if (ok)
        while (sem_wait (&e->first_part) < 0 && errno == EINTR)
          ;
      ok = ok && write_all (in, req + SPLIT_FIRST, MSG - SPLIT_FIRST);
    }
    else
      ok = write_all (in, req, MSG);
    if (!ok || !read_exact (out, rep, MSG)) {
      snprintf (error, errlen, "round trip %u failed: %s", i,
                ok ? "no complete reply" : "request not accepted");
      return -1;
    }
    for (size_t k = 0; k < MSG; k++)
      if (rep[k] != (unsigned char) ~req[k]) {
        snprintf (error, errlen, "round trip %u: wrong reply", i);
        return -1;
      }
    if (i >= warmup && ++*trips && max_seconds > 0 && now () - t0 >= max_seconds)
      break;
  }
  return now () - t0;
}

/* The helper's resident set during a transfer: VmRSS every `every_ms`,
 * kept from the first sample after 10% of the bytes had arrived (start-up
 * and the first buffers' growth are behind by then), until it is stopped
 * or the helper has exited (a zombie has no VmRSS). */
struct rss {
  unsigned every_ms;            /* 0: no sampling */
  const struct stream *sinks[2];
  uint64_t want;                /* bytes the sinks must receive in all */
  sem_t stop;
  pthread_t thread;
  unsigned samples;
  long at10, end, min, max;     /* KiB, -1 without samples */
};

static long
vmrss_kib (pid_t pid)
{
  char path[64], line[256];
  long kib = -1;
  FILE *f;

  snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
  if (!(f = fopen (path, "r")))
    return -1;
  while (fgets (line, sizeof line, f))
    if (sscanf (line, "VmRSS: %ld", &kib) == 1)
      break;
  fclose (f);
  return kib;
}

static void *
sample_rss (void *arg)
{
  struct rss *m = arg;
  struct timespec next;
  bool stopping = false;

  clock_gettime (CLOCK_REALTIME, &next);
  while (!stopping) {
    next.tv_nsec += m->every_ms % 1000 * 1000000L;
    next.tv_sec += m->every_ms / 1000 + next.tv_nsec / 1000000000L;
    next.tv_nsec %= 1000000000L;
    /* A stop still takes a last sample. */
    stopping = sem_timedwait (&m->stop, &next) == 0;
    uint64_t arrived = __atomic_load_n (&m->sinks[0]->done, __ATOMIC_RELAXED) +
                       __atomic_load_n (&m->sinks[1]->done, __ATOMIC_RELAXED);
    long kib = vmrss_kib (helper_pid);
    if (kib < 0 || arrived * 10 < m->want)
      continue;
    if (m->samples++ == 0)
      m->at10 = m->min = m->max = kib;
    m->end = kib;
    if (kib < m->min)
      m->min = kib;
    if (kib > m->max)
      m->max = kib;
  }
  return NULL;
}

/* One run's fds, parameters and results. */
struct run {
  enum scenario sc;
  int in, out;            /* our ends of the helper's stdin and stdout */
  int conn;               /* the helper's connection, at the far side */
  uint64_t bytes;         /* per direction */
  unsigned count;         /* ping-pong round trips */
  double max_seconds;     /* ping-pong time cap, 0 for none */
  double stdout_rate;     /* bytes/s the stdout reader takes at most, 0: no limit */
  struct rss rss;         /* VmRSS samples, if rss.every_ms */
  double elapsed;         /* seconds to the last wanted byte / timed round trips */
  uint64_t moved;         /* bytes delivered, both directions */
  unsigned trips;         /* timed round trips done */
  bool waited_for_stdin;  /* down: the helper exited only once stdin closed */
  char error[256];        /* the first thing that went wrong, or empty */
};

/* up, down or both: sources and sinks on both sides, then the verdict.
 * Closes r->in and r->conn. */
static void
transfer (struct run *r)
{
  enum scenario sc = r->sc;
  /* up: stdin -> socket.  down: socket -> stdout.  The phases differ so a
   * byte that went the wrong way is caught. */
  struct stream up_src = { .name = "stdin", .fd = r->in, .after = CLOSE };
  struct stream up_sink = { .name = "upload at the socket", .fd = r->conn };
  struct stream down_src = { .name = "socket", .fd = r->conn, .phase = PERIOD / 3,
                             .after = SHUT_WRITE };
  struct stream down_sink = { .name = "download at stdout", .fd = r->out,
                              .phase = PERIOD / 3, .rate = r->stdout_rate };
  struct stream *streams[] = { &up_src, &up_sink, &down_src, &down_sink };

  if (sc != DOWN)
    up_src.want = up_sink.want = r->bytes;
  if (sc != UP)
    down_src.want = down_sink.want = r->bytes;
  sem_init (&down_sink.arrived, 0, 0);
  sem_init (&up_sink.arrived, 0, 0);
  r->rss.sinks[0] = &up_sink;
  r->rss.sinks[1] = &down_sink;
  r->rss.want = up_sink.want + down_sink.want;
  sem_init (&r->rss.stop, 0, 0);
  if (r->rss.every_ms)
    start_thread (&r->rss.thread, sample_rss, &r->rss);

  double t0 = now ();
  if (sc != DOWN) {
    start (&up_sink, sink);
    start (&up_src, source);
  }
  start (&down_sink, sink);   /* up: checks that nothing comes down */
  if (sc != UP)
    start (&down_src, source);
  if (sc != DOWN)
    pthread_join (up_src.thread, NULL);
  if (sc != DOWN)
    pthread_join (up_sink.thread, NULL);
  if (sc != UP)
    pthread_join (down_src.thread, NULL);
  close (r->conn);                        /* up: ends the helper's download */
  if (sc == DOWN) {
    /* stdin stays open and idle, as ssh keeps it, until stdout reaches
     * EOF; a helper that waits for stdin EOF instead gets it after a
     * grace second, and the run says so. */
    struct timespec grace;
    while (sem_wait (&down_sink.arrived) < 0 && errno == EINTR)
      ;
    clock_gettime (CLOCK_REALTIME, &grace);
    grace.tv_sec += 1;
    r->waited_for_stdin = pthread_timedjoin_np (down_sink.thread, NULL, &grace) != 0;
    close (r->in);
    if (r->waited_for_stdin)
      pthread_join (down_sink.thread, NULL);
  }
  else
    pthread_join (down_sink.thread, NULL);
  if (r->rss.every_ms) {
    sem_post (&r->rss.stop);
    pthread_join (r->rss.thread, NULL);
  }

  for (size_t i = 0; i < 4; i++)
    if (!r->error[0] && streams[i]->error[0])
      snprintf (r->error, sizeof r->error, "%s", streams[i]->error);
  /* Time to the last wanted byte, not to the helper's exit. */
  double last = up_sink.want ? up_sink.t_last : 0;
  if (down_sink.want && down_sink.t_last > last)
    last = down_sink.t_last;
  r->elapsed = last - t0;
  r->moved = up_sink.done + down_sink.done;
}

/* ping or split: the client on the helper's stdio, the echo at the far
 * side.  Closes r->in and r->conn, and drains r->out to EOF. */
static void
ping (struct run *r)
{
  struct echo e = { .fd = r->conn, .split = r->sc == SPLIT };
  char drain[4096];

  sem_init (&e.first_part, 0, 0);
  start_thread (&e.thread, echo, &e);
  r->elapsed = ping_pong (r->in, r->out, &e, r->count, r->max_seconds, &r->trips,
                          r->error, sizeof r->error);
  close (r->in);                          /* the helper half-closes, the echo ends */
  pthread_join (e.thread, NULL);
  close (r->conn);
  while (read (r->out, drain, sizeof drain) > 0)
    ;
}

/* Busy jiffies of all CPUs (everything but idle and iowait). */
static unsigned long long
busy_jiffies (void)
{
  unsigned long long v[10] = { 0 }, sum = 0;
  FILE *f = fopen ("/proc/stat", "r");
  if (!f)
    return 0;
  if (fscanf (f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
              &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) < 8)
    v[0] = 0;
  fclose (f);
  /* user nice system idle iowait irq softirq steal [guest guest_nice,
   * already counted in user and nice] */
  for (int i = 0; i < 8; i++)
    if (i != 3 && i != 4)
      sum += v[i];
  return sum;
}

static double
seconds (struct timeval tv)
{
  return tv.tv_sec + tv.tv_usec / 1e6;
}

/* Replace every {PATH} and {PORT} in arg. */
static char *
substitute (const char *arg, const char *path, const char *port)
{
  size_t cap = strlen (arg) + strlen (path) + strlen (port) + 1;
  char *out, *o;

  for (const char *p = arg; (p = strchr (p, '{')); p++)
    cap += strlen (path) + strlen (port);
  out = o = malloc (cap);
  if (!out)
    die ("out of memory");
  while (*arg) {
    if (strncmp (arg, "{PATH}", 6) == 0)
      o = stpcpy (o, path), arg += 6;
    else if (strncmp (arg, "{PORT}", 6) == 0)
      o = stpcpy (o, port), arg += 6;
    else
      *o++ = *arg++;
  }
  *o = '\0';
  return out;
}

static int
make_listener (const char *spec, char *path, size_t pathlen, char *port, size_t portlen)
{
  int fd;

  path[0] = port[0] = '\0';
  if (strncmp (spec, "unix:", 5) == 0) {
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    if (strlen (spec + 5) >= sizeof sun.sun_path || strlen (spec + 5) >= pathlen)
      die ("socket path too long: %s", spec + 5);
    strcpy (sun.sun_path, spec + 5);
    strcpy (path, spec + 5);
    unlink (path);
    fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind (fd, (struct sockaddr *) &sun, sizeof sun) < 0)
      die ("cannot listen on %s: %m", path);
  }
  else if (strcmp (spec, "tcp") == 0) {
    struct sockaddr_in sin = { .sin_family = AF_INET,
                               .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    socklen_t len = sizeof sin;
    fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind (fd, (struct sockaddr *) &sin, sizeof sin) < 0 ||
        getsockname (fd, (struct sockaddr *) &sin, &len) < 0)
      die ("cannot listen on 127.0.0.1: %m");
    snprintf (port, portlen, "%u", ntohs (sin.sin_port));
  }
  else
    die ("--listen: expected unix:PATH or tcp, got '%s'", spec);
  if (listen (fd, 1) < 0)
    die ("listen: %m");
  return fd;
}

/* Accept the helper's connection; gives up when the helper exits first
 * (it is not reaped here, so wait4 still gets its rusage). */
static int
accept_helper (int listener, int timeout, char *error, size_t errlen)
{
  double deadline = now () + timeout;

  while (now () < deadline) {
    struct pollfd p = { .fd = listener, .events = POLLIN };
    siginfo_t info = { .si_pid = 0 };
    if (poll (&p, 1, 50) > 0) {
      int fd = accept4 (listener, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0)
        return fd;
    }
    if (waitid (P_PID, helper_pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == helper_pid) {
      snprintf (error, errlen, "helper exited before connecting");
      return -1;
    }
  }
  snprintf (error, errlen, "helper did not connect within %d s", timeout);
  kill (helper_pid, SIGKILL);
  return -1;
}

static void
usage (void)
{
  die ("usage: drive --scenario up|down|both|ping|split --listen unix:PATH|tcp "
       "[--bytes N] [--count N] [--max-seconds S] [--timeout SECS] "
       "[--stdout-rate BYTES_PER_S] [--rss-every MS] -- HELPER ARGS...");
}

int
main (int argc, char **argv)
{
  const char *scenario_name = NULL, *listen_spec = NULL;
  enum scenario sc = UP;
  uint64_t bytes = 0;
  unsigned count = 1000;
  double max_seconds = 0, stdout_rate = 0;
  unsigned rss_every = 0;
  int timeout = 300, argi;
  static const char *const names[] = { "up", "down", "both", "ping", "split" };

  for (argi = 1; argi < argc && strcmp (argv[argi], "--") != 0; argi += 2) {
    if (argi + 1 >= argc)
      usage ();
    const char *opt = argv[argi], *val = argv[argi + 1];
    if (strcmp (opt, "--scenario") == 0)
      scenario_name = val;
    else if (strcmp (opt, "--listen") == 0)
      listen_spec = val;
    else if (strcmp (opt, "--bytes") == 0)
      bytes = strtoull (val, NULL, 10);
    else if (strcmp (opt, "--count") == 0)
      count = strtoul (val, NULL, 10);
    else if (strcmp (opt, "--max-seconds") == 0)
      max_seconds = strtod (val, NULL);
    else if (strcmp (opt, "--timeout") == 0)
      timeout = atoi (val);
    else if (strcmp (opt, "--stdout-rate") == 0)
      stdout_rate = strtod (val, NULL);
    else if (strcmp (opt, "--rss-every") == 0)
      rss_every = strtoul (val, NULL, 10);
    else
      usage ();
  }
  if (argi >= argc - 1 || !scenario_name || !listen_spec || timeout <= 0)
    usage ();
  argi++;
  for (sc = UP; sc <= SPLIT; sc++)
    if (strcmp (scenario_name, names[sc]) == 0)
      break;
  if (sc > SPLIT)
    usage ();

  signal (SIGPIPE, SIG_IGN);

  char path[108], port[16];
  int listener = make_listener (listen_spec, path, sizeof path, port, sizeof port);
  int in[2], out[2];                    /* the helper's stdin and stdout */
  if (pipe2 (in, O_CLOEXEC) < 0 || pipe2 (out, O_CLOEXEC) < 0)
    die ("pipe: %m");

  char **hargv = calloc (argc - argi + 1, sizeof *hargv);
  if (!hargv)
    die ("out of memory");
  for (int i = argi; i < argc; i++)
    hargv[i - argi] = substitute (argv[i], path, port);

  struct rusage self0, self1, helper_ru;
  getrusage (RUSAGE_SELF, &self0);
  unsigned long long busy0 = busy_jiffies ();
  double launched = now ();

  helper_pid = fork ();
  if (helper_pid < 0)
    die ("fork: %m");
  if (helper_pid == 0) {
    /* sshd gives its commands default signal dispositions. */
    signal (SIGPIPE, SIG_DFL);
    if (dup2 (in[0], 0) < 0 || dup2 (out[1], 1) < 0)
      _exit (126);
    execvp (hargv[0], hargv);
    fprintf (stderr, "drive: cannot run %s: %m\n", hargv[0]);
    _exit (127);
  }
  close (in[0]);
  close (out[1]);
  /* Only now: exec carries the forked child's peak RSS over into the
   * helper's ru_maxrss, and the 2 MiB table would count there. */
  fill_pattern ();

  pthread_t dog;
  start_thread (&dog, watchdog, &timeout);

  struct run run = { .sc = sc, .in = in[1], .out = out[0],
                     .bytes = bytes, .count = count, .max_seconds = max_seconds,
                     .stdout_rate = stdout_rate,
                     .rss = { .every_ms = rss_every, .at10 = -1, .end = -1,
                              .min = -1, .max = -1 } };
  run.conn = accept_helper (listener, timeout, run.error, sizeof run.error);
  close (listener);
  if (path[0])
    unlink (path);
  if (run.conn >= 0 && port[0]) {
    int one = 1;  /* the far side itself must not add Nagle stalls */
    setsockopt (run.conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }

  if (run.conn < 0)
    close (in[1]);
  else if (sc <= BOTH)
    transfer (&run);
  else
    ping (&run);
  close (out[0]);

  /* Wait for the exit without reaping, so the watchdog can never kill a
   * reused PID; then stop the watchdog, then reap with the rusage. */
  siginfo_t info;
  int status;
  while (waitid (P_PID, helper_pid, &info, WEXITED | WNOWAIT) < 0)
    if (errno != EINTR)
      die ("waitid: %m");
  double wall = now () - launched;
  pthread_mutex_lock (&lock);
  finished = true;
  pthread_cond_signal (&finished_cond);
  pthread_mutex_unlock (&lock);
  pthread_join (dog, NULL);
  while (wait4 (helper_pid, &status, 0, &helper_ru) < 0)
    if (errno != EINTR)
      die ("wait4: %m");
  getrusage (RUSAGE_SELF, &self1);
  unsigned long long busy = busy_jiffies () - busy0;

  /* What the rest of the machine ran meanwhile, as a share of all CPUs. */
  double ours = seconds (helper_ru.ru_utime) + seconds (helper_ru.ru_stime) +
                seconds (self1.ru_utime) - seconds (self0.ru_utime) +
                seconds (self1.ru_stime) - seconds (self0.ru_stime);
  double other = (busy / (double) sysconf (_SC_CLK_TCK) - ours) /
                 (wall * sysconf (_SC_NPROCESSORS_ONLN));
  if (other < 0)
    other = 0;

  char st[32];
  if (WIFEXITED (status))
    snprintf (st, sizeof st, "%d", WEXITSTATUS (status));
  else
    snprintf (st, sizeof st, "signal %d", WTERMSIG (status));
  if (timed_out)
    snprintf (run.error, sizeof run.error, "timed out after %d s, helper killed", timeout);

  /* data: every byte arrived, intact.  status: the helper's exit. */
  printf ("data=%s\tmoved=%llu\tround_trips=%u\tseconds=%.6f\tuser=%.6f\tsys=%.6f\t"
          "maxrss_kib=%ld\trss_samples=%u\trss_at10_kib=%ld\trss_end_kib=%ld\t"
          "rss_min_kib=%ld\trss_max_kib=%ld\t"
          "status=%s\twaited_for_stdin=%d\tother_cpu=%.3f\tnote=%s\n",
          run.error[0] ? "bad" : "ok", (unsigned long long) run.moved, run.trips,
          run.elapsed > 0 ? run.elapsed : 0, seconds (helper_ru.ru_utime),
          seconds (helper_ru.ru_stime), helper_ru.ru_maxrss, run.rss.samples,
          run.rss.at10, run.rss.end, run.rss.min, run.rss.max, st, run.waited_for_stdin,
          other, run.error[0] ? run.error : "-");
  return 0;
}
