/* bench/delay-proxy: a TCP proxy that delays every byte by a fixed time in
 * each direction, as a long link would (this kernel has no netem).  It is a
 * delay line, not stop-and-wait: bytes keep flowing while earlier ones are
 * in flight, up to a cap per direction, so throughput is bounded by window
 * sizes over the round trip, as on a real link.
 *
 *   delay-proxy LISTEN-PORT TARGET-PORT DELAY-MS [COUNT-FILE]
 *
 * Listens on 127.0.0.1:LISTEN-PORT; every accepted connection (in a child
 * process) is relayed to 127.0.0.1:TARGET-PORT.  A half-close is passed on
 * after the bytes before it.  With COUNT-FILE, the bytes delivered over all
 * connections so far are kept there, live, as two native uint64s: towards
 * TARGET-PORT, then back (read it with `od -An -tu8`).  Only for
 * benchmarks. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
#define CAP (256u * 1024 * 1024)  /* bytes in flight per direction */

struct chunk {
  struct chunk *next;
  int64_t due;                /* monotonic microseconds */
  size_t len, off;
  char data[];
};

struct dir {
  int src, dst;
  struct chunk *head, *tail;
  size_t queued;
  uint64_t *counter;          /* in delivered[], if counting */
  bool eof, shut;
};

static int64_t delay_us;
/* COUNT-FILE's two counters, shared by every connection's process; or NULL. */
static uint64_t *delivered;

static int64_t
now_us (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
die (const char *what)
{
  perror (what);
  exit (1);
}

static void
dir_read (struct dir *d)
{
  struct chunk *c = malloc (sizeof *c + CHUNK);
  ssize_t n;

  if (c == NULL)
    die ("malloc");
  n = read (d->src, c->data, CHUNK);
  if (n <= 0) {
    free (c);
    if (n == 0 || (errno != EAGAIN && errno != EINTR))
      d->eof = true;
    return;
  }
  c->next = NULL;
  c->due = now_us () + delay_us;
  c->len = (size_t) n;
  c->off = 0;
  if (d->tail)
    d->tail->next = c;
  else
    d->head = c;
  d->tail = c;
  d->queued += (size_t) n;
}

/* Write every chunk that is due; false if the peer is gone. */
static bool
dir_write (struct dir *d, int64_t now)
{
  while (d->head && d->head->due <= now) {
    struct chunk *c = d->head;
    ssize_t n = write (d->dst, c->data + c->off, c->len - c->off);
    if (n < 0)
      return errno == EAGAIN || errno == EINTR;
    c->off += (size_t) n;
    d->queued -= (size_t) n;
    if (delivered)
      __atomic_add_fetch (d->counter, (uint64_t) n, __ATOMIC_RELAXED);
    if (c->off < c->len)
      return true;
    d->head = c->next;
    if (d->head == NULL)
      d->tail = NULL;
    free (c);
  }
  if (d->eof && d->head == NULL && !d->shut) {
    shutdown (d->dst, SHUT_WR);
    d->shut = true;
  }
  return true;
}

static void
relay (int a, int b)
{
  struct dir dirs[2] = { { .src = a, .dst = b }, { .src = b, .dst = a } };

  if (delivered) {
    dirs[0].counter = &delivered[0];
    dirs[1].counter = &delivered[1];
  }

  while (!(dirs[0].shut && dirs[1].shut)) {
    struct pollfd pfd[4];
    int n = 0, timeout = -1;
    int64_t now = now_us ();

    for (int i = 0; i < 2; i++) {
      struct dir *d = &dirs[i];
      if (!d->eof && d->queued < CAP)
        pfd[n++] = (struct pollfd) { .fd = d->src, .events = POLLIN };
      if (d->head) {
        if (d->head->due <= now)
          pfd[n++] = (struct pollfd) { .fd = d->dst, .events = POLLOUT };
        else {
          int ms = (int) ((d->head->due - now + 999) / 1000);
          if (timeout < 0 || ms < timeout)
            timeout = ms;
        }
      }
    }
    if (poll (pfd, n, timeout) < 0 && errno != EINTR)
      die ("poll");
    for (int i = 0; i < n; i++)
      for (int j = 0; j < 2; j++)
        if (pfd[i].fd == dirs[j].src && (pfd[i].events & POLLIN) && pfd[i].revents)
          dir_read (&dirs[j]);
    now = now_us ();
    for (int j = 0; j < 2; j++)
      if (!dir_write (&dirs[j], now))
        return;
  }
}

int
main (int argc, char **argv)
{
  struct sockaddr_in sin = { .sin_family = AF_INET };
  int one = 1, lfd;

  if (argc != 4 && argc != 5) {
    fprintf (stderr, "usage: delay-proxy LISTEN-PORT TARGET-PORT DELAY-MS [COUNT-FILE]\n");
    return 2;
  }
  delay_us = atoll (argv[3]) * 1000;
  if (argc == 5) {
    int fd = open (argv[4], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate (fd, 2 * sizeof *delivered) < 0)
      die (argv[4]);
    delivered = mmap (NULL, 2 * sizeof *delivered, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (delivered == MAP_FAILED)
      die ("mmap");
    close (fd);
  }
  signal (SIGCHLD, SIG_IGN);
  signal (SIGPIPE, SIG_IGN);
  sin.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  sin.sin_port = htons ((uint16_t) atoi (argv[1]));
  lfd = socket (AF_INET, SOCK_STREAM, 0);
  setsockopt (lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind (lfd, (struct sockaddr *) &sin, sizeof sin) < 0 || listen (lfd, 16) < 0)
    die ("listen");
  for (;;) {
    int c = accept (lfd, NULL, NULL), t;
    if (c < 0)
      continue;
    if (fork () != 0) {
      close (c);
      continue;
    }
    close (lfd);
    t = socket (AF_INET, SOCK_STREAM, 0);
    sin.sin_port = htons ((uint16_t) atoi (argv[2]));
    if (connect (t, (struct sockaddr *) &sin, sizeof sin) < 0)
      die ("connect");
    setsockopt (c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt (t, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl (c, F_SETFL, O_NONBLOCK);
    fcntl (t, F_SETFL, O_NONBLOCK);
    relay (c, t);
    _exit (0);
  }
}
