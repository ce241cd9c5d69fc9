/* ferry: fault injection, an LD_PRELOAD shim for the tests
 * (tests/lib-fault.sh, tests/fault-injection-*.sh).
 *
 * In a process whose executable is named "ferry" it makes read, write,
 * readv, writev, splice, recv and send on sockets, pipes and regular files
 * fail at random, the way the kernel may:
 *   - EINTR, before anything moved;
 *   - EAGAIN, before anything moved, on non-blocking fds only;
 *   - short counts: the real call, asked for fewer bytes (at least 1).
 * Other fds (glib's eventfd wakeups, terminals) are left alone.  It also
 * makes the first try of the kernel allocations ferry has a way around
 * fail with ENOMEM now and then, never twice in a row: pipe2 (ferry falls
 * back to the copying buffer), F_SETPIPE_SZ (the pipe keeps its size) and
 * accept4 (the listener retries after 1 s).
 *
 * Environment:
 *   FERRY_FAULT_SEED    the random seed (default 1); thread N of the
 *                       process draws from seed + N
 *   FERRY_FAULT_RATE    percent of the I/O calls that get a fault (default 30)
 *   FERRY_FAULT_ENOMEM  percent of the allocations that fail first (default 20)
 *   FERRY_FAULT_LOG     a file to append one line of counts to at exit
 *   FERRY_FAULT_TRACE   a file to write every injected fault to, as it happens
 *   FERRY_FAULT_RESET_AFTER  BYTES: once the process sent that many bytes on
 *                       TCP sockets, each later send, write or writev on one
 *                       fails with ECONNRESET, as a peer's reset would make
 *                       it, while reads go on (no poll or EOF announces it):
 *                       the failure is first seen by a write
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum fault { FAULT_NONE, FAULT_EINTR, FAULT_EAGAIN, FAULT_SHORT, N_FAULTS };

static bool enabled;
static unsigned long seed = 1;
static unsigned rate = 30, enomem_rate = 20;
static atomic_ulong injected[N_FAULTS], enomem_injected, calls;
static atomic_uint next_thread;
static _Thread_local uint64_t rng_state;
static int trace_fd = -1;
static long long reset_after = -1;     /* FERRY_FAULT_RESET_AFTER, or -1 */
static atomic_llong tcp_sent;

static ssize_t (*real_read) (int, void *, size_t);
static ssize_t (*real_write) (int, const void *, size_t);
static ssize_t (*real_readv) (int, const struct iovec *, int);
static ssize_t (*real_writev) (int, const struct iovec *, int);
static ssize_t (*real_splice) (int, loff_t *, int, loff_t *, size_t, unsigned);
static ssize_t (*real_recv) (int, void *, size_t, int);
static ssize_t (*real_send) (int, const void *, size_t, int);
static int (*real_pipe2) (int[2], int);
static int (*real_fcntl64) (int, int, ...);
static int (*real_accept4) (int, struct sockaddr *, socklen_t *, int);

static unsigned long
env_number (const char *name, unsigned long fallback)
{
  const char *v = getenv (name);

  return v && *v ? strtoul (v, NULL, 10) : fallback;
}

__attribute__ ((constructor)) static void
fault_init (void)
{
  char exe[4096];
  ssize_t n = readlink ("/proc/self/exe", exe, sizeof exe - 1);
  const char *base;

  real_read = dlsym (RTLD_NEXT, "read");
  real_write = dlsym (RTLD_NEXT, "write");
  real_readv = dlsym (RTLD_NEXT, "readv");
  real_writev = dlsym (RTLD_NEXT, "writev");
  real_splice = dlsym (RTLD_NEXT, "splice");
  real_recv = dlsym (RTLD_NEXT, "recv");
  real_send = dlsym (RTLD_NEXT, "send");
  real_pipe2 = dlsym (RTLD_NEXT, "pipe2");
  real_fcntl64 = dlsym (RTLD_NEXT, "fcntl64");
  real_accept4 = dlsym (RTLD_NEXT, "accept4");
  if (n <= 0)
    return;
  exe[n] = '\0';
  base = strrchr (exe, '/');
  enabled = strcmp (base ? base + 1 : exe, "ferry") == 0;
  seed = env_number ("FERRY_FAULT_SEED", 1);
  rate = env_number ("FERRY_FAULT_RATE", 30);
  enomem_rate = env_number ("FERRY_FAULT_ENOMEM", 20);
  if (getenv ("FERRY_FAULT_RESET_AFTER"))
    reset_after = (long long) env_number ("FERRY_FAULT_RESET_AFTER", 0);
  if (enabled && getenv ("FERRY_FAULT_TRACE"))
    trace_fd = open (getenv ("FERRY_FAULT_TRACE"), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

static void
trace (const char *call, int fd, int fd2, const char *what, size_t len)
{
  char line[128];
  int n;

  if (trace_fd < 0)
    return;
  n = snprintf (line, sizeof line, "%s fd=%d,%d %s %zu\n", call, fd, fd2, what, len);
  real_write (trace_fd, line, (size_t) n);
}

__attribute__ ((destructor)) static void
fault_report (void)
{
  const char *log = getenv ("FERRY_FAULT_LOG");
  FILE *f;

  if (!enabled || log == NULL || (f = fopen (log, "a")) == NULL)
    return;
  fprintf (f, "pid=%ld seed=%lu calls=%lu eintr=%lu eagain=%lu short=%lu enomem=%lu\n",
           (long) getpid (), seed, atomic_load (&calls),
           atomic_load (&injected[FAULT_EINTR]), atomic_load (&injected[FAULT_EAGAIN]),
           atomic_load (&injected[FAULT_SHORT]), atomic_load (&enomem_injected));
  fclose (f);
}

/* xorshift64*, one stream per thread. */
static uint64_t
random_next (void)
{
  if (rng_state == 0)
    rng_state = (seed + atomic_fetch_add (&next_thread, 1)) * 0x9E3779B97F4A7C15ull | 1;
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (rng_state * 0x2545F4914F6CDD1Dull) >> 11;
}

static bool
eligible (int fd)
{
  struct stat st;

  return fd >= 0 && fstat (fd, &st) == 0 &&
         (S_ISSOCK (st.st_mode) || S_ISFIFO (st.st_mode) || S_ISREG (st.st_mode));
}

static bool
nonblocking (int fd)
{
  int flags = real_fcntl64 (fd, F_GETFL);

  return flags >= 0 && (flags & O_NONBLOCK);
}

/* The fault for this call on @fd (or on one of two fds); sets errno for
 * EINTR and EAGAIN. */
static enum fault
pick (const char *call, int fd, int fd2, bool nonblock, size_t len)
{
  static const char *const names[] = { "none", "EINTR", "EAGAIN", "short" };
  uint64_t r;

  if (!enabled || !(eligible (fd) || eligible (fd2)))
    return FAULT_NONE;
  atomic_fetch_add (&calls, 1);
  r = random_next () % 300;
  if (r >= 3 * rate)
    return FAULT_NONE;
  enum fault f = (enum fault) (1 + r % 3);
  if (f == FAULT_EAGAIN && !(nonblock || nonblocking (fd) || (fd2 >= 0 && nonblocking (fd2))))
    f = FAULT_SHORT;
  atomic_fetch_add (&injected[f], 1);
  trace (call, fd, fd2, names[f], len);
  if (f == FAULT_EINTR)
    errno = EINTR;
  else if (f == FAULT_EAGAIN)
    errno = EAGAIN;
  return f;
}

static bool
is_tcp (int fd)
{
  struct sockaddr_storage a;
  socklen_t len = sizeof a;
  int type;
  socklen_t type_len = sizeof type;

  return getsockname (fd, (struct sockaddr *) &a, &len) == 0 &&
         (a.ss_family == AF_INET || a.ss_family == AF_INET6) &&
         getsockopt (fd, SOL_SOCKET, SO_TYPE, &type, &type_len) == 0 && type == SOCK_STREAM;
}

/* FERRY_FAULT_RESET_AFTER: true (errno ECONNRESET) if this write on @fd
 * fails as after a peer's reset. */
static bool
reset (int fd)
{
  if (!enabled || reset_after < 0 || !is_tcp (fd))
    return false;
  if (atomic_load (&tcp_sent) < reset_after)
    return false;
  trace ("reset", fd, -1, "ECONNRESET", 0);
  errno = ECONNRESET;
  return true;
}

/* @n, the bytes a write on @fd sent, counted towards the reset. */
static ssize_t
count_sent (int fd, ssize_t n)
{
  if (n > 0 && enabled && reset_after >= 0 && is_tcp (fd))
    atomic_fetch_add (&tcp_sent, n);
  return n;
}

/* A count from 1 to @len. */
static size_t
shorter (size_t len)
{
  return len <= 1 ? len : 1 + random_next () % (len - 1);
}

/* An iovec array covering only the first shorter() bytes of @iov. */
static int
shorter_iov (const struct iovec *iov, int iovcnt, struct iovec *out)
{
  size_t total = 0, keep;
  int n = 0;

  for (int i = 0; i < iovcnt && i < IOV_MAX; i++)
    total += iov[i].iov_len;
  keep = shorter (total);
  for (int i = 0; i < iovcnt && keep > 0; i++) {
    out[n] = iov[i];
    if (out[n].iov_len > keep)
      out[n].iov_len = keep;
    keep -= out[n].iov_len;
    n++;
  }
  return n > 0 ? n : iovcnt;
}

ssize_t
read (int fd, void *buf, size_t len)
{
  switch (pick ("read", fd, -1, false, len)) {
  case FAULT_EINTR: case FAULT_EAGAIN: return -1;
  case FAULT_SHORT: return real_read (fd, buf, shorter (len));
  default: return real_read (fd, buf, len);
  }
}

ssize_t
write (int fd, const void *buf, size_t len)
{
  if (reset (fd))
    return -1;
  switch (pick ("write", fd, -1, false, len)) {
  case FAULT_EINTR: case FAULT_EAGAIN: return -1;
  case FAULT_SHORT: return count_sent (fd, real_write (fd, buf, shorter (len)));
  default: return count_sent (fd, real_write (fd, buf, len));
  }
}

ssize_t
readv (int fd, const struct iovec *iov, int iovcnt)
{
  struct iovec part[IOV_MAX];

  switch (pick ("readv", fd, -1, false, 0)) {
  case FAULT_EINTR: case FAULT_EAGAIN: return -1;
  case FAULT_SHORT: return real_readv (fd, part, shorter_iov (iov, iovcnt, part));
  default: return real_readv (fd, iov, iovcnt);
  }
}

ssize_t
writev (int fd, const struct iovec *iov, int iovcnt)
{
  struct iovec part[IOV_MAX];

  if (reset (fd))
    return -1;
  switch (pick ("writev", fd, -1, false, 0)) {
  case FAULT_EINTR: case FAULT_EAGAIN: return -1;
  case FAULT_SHORT: return count_sent (fd, real_writev (fd, part, shorter_iov (iov, iovcnt, part)));
  default: return count_sent (fd, real_writev (fd, iov, iovcnt));
  }
}

ssize_t
splice (int in, loff_t *in_off, int out, loff_t *out_off, size_t len, unsigned flags)
{
  switch (pick ("splice", in, out, flags & SPLICE_F_NONBLOCK, len)) {
  case FAULT_EINTR: case FAULT_EAGAIN: return -1;
  case FAULT_SHORT: return real_splice (in, in_off, out, out_off, shorter (len), flags);
  default: return real_splice (in, in_off, out, out_off, len, flags);
  }
}

ssize_t
recv (int fd, void *buf, size_t len, int flags)
{
  switch (pick ("recv", fd, -1, flags & MSG_DONTWAIT, len)) {
  case FAULT_EINTR: case FAULT_EAGAIN: return -1;
  case FAULT_SHORT: return real_recv (fd, buf, shorter (len), flags);
  default: return real_recv (fd, buf, len, flags);
  }
}

ssize_t
send (int fd, const void *buf, size_t len, int flags)
{
  if (reset (fd))
    return -1;
  switch (pick ("send", fd, -1, flags & MSG_DONTWAIT, len)) {
  case FAULT_EINTR: case FAULT_EAGAIN: return -1;
  case FAULT_SHORT: return count_sent (fd, real_send (fd, buf, shorter (len), flags));
  default: return count_sent (fd, real_send (fd, buf, len, flags));
  }
}

/* Whether this first try of an allocation fails; the retry never does. */
static bool
fail_allocation (atomic_bool *failed_last)
{
  bool fail;

  if (!enabled || atomic_exchange (failed_last, false))
    return false;
  fail = random_next () % 100 < enomem_rate;
  if (fail) {
    atomic_store (failed_last, true);
    atomic_fetch_add (&enomem_injected, 1);
    errno = ENOMEM;
  }
  return fail;
}

int
pipe2 (int fds[2], int flags)
{
  static atomic_bool failed_last;

  return fail_allocation (&failed_last) ? -1 : real_pipe2 (fds, flags);
}

int
accept4 (int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
  static atomic_bool failed_last;

  return fail_allocation (&failed_last) ? -1 : real_accept4 (fd, addr, len, flags);
}

int
fcntl64 (int fd, int cmd, ...)
{
  static atomic_bool failed_last;
  va_list ap;
  void *arg;

  va_start (ap, cmd);
  arg = va_arg (ap, void *);
  va_end (ap);
  if (cmd == F_SETPIPE_SZ && fail_allocation (&failed_last))
    return -1;
  return real_fcntl64 (fd, cmd, arg);
}
