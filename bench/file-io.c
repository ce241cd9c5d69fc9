/* bench/file-io.c: the file backend's choice of I/O engine, measured
 * (issue 24: a small thread pool or io_uring).  Reads FILE whole, or
 * writes as many bytes to a new file OUT, in REQUEST-byte requests with
 * DEPTH in flight, through one engine:
 *   threads   DEPTH threads, each taking the next request and running
 *             pread or pwrite on it, as src/stream/module/file-ops.c's
 *             pool does (without its hand-back to the main loop)
 *   uring     one thread and an io_uring of DEPTH entries (liburing),
 *             a request resubmitted as each completes
 * and prints one line: engine, op, bytes, seconds, MiB/s, CPU seconds
 * (user + sys of the whole process).
 *
 *   file-io threads|uring read FILE REQUEST DEPTH
 *   file-io threads|uring write OUT BYTES REQUEST DEPTH
 *
 * bench/file-io.sh builds it and runs both engines interleaved. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int fd;
static bool writing;
static uint64_t total, request;
static _Atomic uint64_t next_offset;

static void
die (const char *what)
{
  fprintf (stderr, "file-io: %s: %s\n", what, strerror (errno));
  exit (1);
}

static double
now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
cpu_seconds (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
         ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static uint8_t *
new_buffer (void)
{
  void *buf;

  if (posix_memalign (&buf, 4096, request) != 0)
    die ("posix_memalign");
  /* Data that is not zero, so that nothing is special about it. */
  memset (buf, 0xa5, request);
  return buf;
}

static void *
thread_main (void *data)
{
  uint8_t *buf = new_buffer ();
  uint64_t offset;

  (void) data;
  while ((offset = atomic_fetch_add (&next_offset, request)) < total) {
    size_t len = total - offset < request ? total - offset : request;
    ssize_t n = writing ? pwrite (fd, buf, len, offset) : pread (fd, buf, len, offset);
    if (n != (ssize_t) len)
      die (writing ? "pwrite" : "pread");
  }
  free (buf);
  return NULL;
}

static void
run_threads (unsigned depth)
{
  pthread_t t[depth];

  for (unsigned i = 0; i < depth; i++)
    if (pthread_create (&t[i], NULL, thread_main, NULL) != 0)
      die ("pthread_create");
  for (unsigned i = 0; i < depth; i++)
    pthread_join (t[i], NULL);
}

/* Queue the next request into @buf; false when none is left. */
static bool
submit_next (struct io_uring *ring, uint8_t *buf)
{
  uint64_t offset = next_offset;
  struct io_uring_sqe *sqe;
  size_t len;

  if (offset >= total)
    return false;
  len = total - offset < request ? total - offset : request;
  next_offset += len;
  sqe = io_uring_get_sqe (ring);
  if (writing)
    io_uring_prep_write (sqe, fd, buf, len, offset);
  else
    io_uring_prep_read (sqe, fd, buf, len, offset);
  io_uring_sqe_set_data (sqe, buf);
  return true;
}

static void
run_uring (unsigned depth)
{
  struct io_uring ring;
  uint8_t *bufs[depth];
  unsigned in_flight = 0;
  uint64_t done = 0;

  if ((errno = -io_uring_queue_init (depth, &ring, 0)) != 0)
    die ("io_uring_queue_init");
  for (unsigned i = 0; i < depth; i++) {
    bufs[i] = new_buffer ();
    in_flight += submit_next (&ring, bufs[i]);
  }
  io_uring_submit (&ring);
  while (in_flight > 0) {
    struct io_uring_cqe *cqe;
    if ((errno = -io_uring_wait_cqe (&ring, &cqe)) != 0)
      die ("io_uring_wait_cqe");
    if (cqe->res < 0) {
      errno = -cqe->res;
      die (writing ? "write" : "read");
    }
    done += cqe->res;
    uint8_t *buf = io_uring_cqe_get_data (cqe);
    io_uring_cqe_seen (&ring, cqe);
    in_flight--;
    if (submit_next (&ring, buf)) {
      in_flight++;
      io_uring_submit (&ring);
    }
  }
  io_uring_queue_exit (&ring);
  /* A short request (none is expected of a regular file) shows here. */
  if (done != total) {
    errno = EIO;
    die ("short requests");
  }
  for (unsigned i = 0; i < depth; i++)
    free (bufs[i]);
}

int
main (int argc, char **argv)
{
  bool uring;
  unsigned depth;
  struct stat st;
  double t0, c0;

  bool engine_ok = argc > 2 && (strcmp (argv[1], "threads") == 0 || strcmp (argv[1], "uring") == 0);
  bool read_ok = argc == 6 && strcmp (argv[2], "read") == 0;
  bool write_ok = argc == 7 && strcmp (argv[2], "write") == 0;

  if (!engine_ok || !(read_ok || write_ok)) {
    fprintf (stderr, "usage: file-io threads|uring read FILE REQUEST DEPTH\n"
                     "       file-io threads|uring write OUT BYTES REQUEST DEPTH\n");
    return 2;
  }
  uring = strcmp (argv[1], "uring") == 0;
  writing = strcmp (argv[2], "write") == 0;
  fd = writing ? open (argv[3], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)
               : open (argv[3], O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    die (argv[3]);
  if (!writing && fstat (fd, &st) < 0)
    die ("fstat");
  total = writing ? strtoull (argv[4], NULL, 0) : (uint64_t) st.st_size;
  request = strtoull (argv[writing ? 5 : 4], NULL, 0);
  depth = strtoul (argv[writing ? 6 : 5], NULL, 0);
  if (request == 0 || depth == 0 || depth > 256) {
    fprintf (stderr, "file-io: REQUEST must be > 0, DEPTH 1-256\n");
    return 2;
  }
  t0 = now ();
  c0 = cpu_seconds ();
  if (uring)
    run_uring (depth);
  else
    run_threads (depth);
  /* A write is done when it is durable, as ferry's receiver's is. */
  if (writing && fdatasync (fd) < 0)
    die ("fdatasync");
  double secs = now () - t0, cpu = cpu_seconds () - c0;
  printf ("%s %s %" PRIu64 " %.3f %.1f %.3f\n", argv[1], argv[2], total, secs,
          total / 1048576.0 / secs, cpu);
  return 0;
}
