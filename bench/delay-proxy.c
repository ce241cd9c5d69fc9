/* bench/delay-proxy: a TCP proxy that models a long link, as netem would
 * (this kernel has none): a fixed delay each way and, optionally, a rate
 * that every connection through it shares.
 *
 *   delay-proxy [--rate-mbit N] [--queue-kib N] LISTEN-PORT TARGET-PORT DELAY-MS [COUNT-FILE]
 *
 * Listens on 127.0.0.1:LISTEN-PORT; every accepted connection is relayed to
 * 127.0.0.1:TARGET-PORT, all of them by this one process.  A half-close is
 * passed on after the bytes before it.
 *
 * It is a delay line, not stop-and-wait: bytes keep flowing while earlier
 * ones are in flight, so throughput is bounded by window sizes over the
 * round trip, as on a real link.  Bytes move in chunks of at most 64 KiB.
 *
 * With --rate-mbit, each direction has a bottleneck: one FIFO shared by
 * every connection, as a router's port is.  A chunk read at `now` leaves it
 * at max(now, the time the link is free) + len / rate, and arrives DELAY-MS
 * after that.  Its buffer holds --queue-kib (default: the bandwidth-delay
 * product of the round trip, rate * 2 * DELAY-MS, at least 256 KiB).  While
 * it is full, nothing is read in that direction, so the senders' TCP flow
 * control feels the bottleneck (backpressure where a router would drop).
 * When it has room, the connections with bytes waiting are read one chunk
 * each in turn, so N busy connections get 1/N of the rate each.  One way of
 * a connection holds at most the buffer plus what the link has in flight
 * (rate * DELAY-MS): a receiver that stops reading stops its sender.
 * Without a rate, a chunk leaves when it is read, and one way of a
 * connection holds at most CAP bytes.
 *
 * With COUNT-FILE, the bytes delivered over all connections so far are kept
 * there, live, as two native uint64s: towards TARGET-PORT, then back (read
 * it with `od -An -tu8`).  Only for benchmarks. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
#include <time.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
#define CAP (256u * 1024 * 1024)  /* bytes one way holds, without a rate */
#define MIN_QUEUE (4 * CHUNK)

struct chunk {
  struct chunk *next;
  int64_t due;                /* when it arrives: monotonic ns */
  size_t len, off;
  char data[];
};

/* One way of one connection: the chunks read from src, not yet written to
 * dst, in the order they arrive. */
struct way {
  int src, dst;
  struct chunk *head, *tail;
  size_t held;                /* bytes in the chunks */
  bool eof, shut;
};

struct conn {
  struct way ways[2];         /* [0] towards TARGET-PORT, [1] back */
};

/* One direction's bottleneck, shared by every connection. */
struct link {
  int64_t free_at;            /* when it has sent all it was given: ns */
  size_t next;                /* the connection read first next time */
  uint64_t *counter;          /* in delivered[], if counting */
};

static int64_t delay_ns;
static double ns_per_byte;    /* 0: no rate */
static int64_t queue_ns;      /* the buffer, as time on the link */
static size_t hold_max;       /* bytes one way may hold */
static struct link links[2];
static struct conn **conns;
static size_t nconns;
/* COUNT-FILE's two counters; or NULL. */
static uint64_t *delivered;

static int64_t
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
die (const char *what)
{
  perror (what);
  exit (1);
}

/* Whether the link's buffer has room for another chunk. */
static bool
link_open (const struct link *l, int64_t now)
{
  return ns_per_byte == 0 || l->free_at - now < queue_ns;
}

static bool
way_wants_read (const struct way *w)
{
  return !w->eof && w->held < hold_max;
}

static void
way_read (struct way *w, struct link *l, int64_t now)
{
  struct chunk *c = malloc (sizeof *c + CHUNK);
  int64_t leaves = now;
  ssize_t n;

  if (c == NULL)
    die ("malloc");
  n = read (w->src, c->data, CHUNK);
  if (n <= 0) {
    free (c);
    if (n == 0 || (errno != EAGAIN && errno != EINTR))
      w->eof = true;
    return;
  }
  if (ns_per_byte > 0) {
    l->free_at = (l->free_at > now ? l->free_at : now) + (int64_t) (n * ns_per_byte + 0.5);
    leaves = l->free_at;
  }
  c->next = NULL;
  c->due = leaves + delay_ns;
  c->len = (size_t) n;
  c->off = 0;
  if (w->tail)
    w->tail->next = c;
  else
    w->head = c;
  w->tail = c;
  w->held += (size_t) n;
}

/* Write every chunk that is due; false if the peer is gone. */
static bool
way_write (struct way *w, struct link *l, int64_t now)
{
  while (w->head && w->head->due <= now) {
    struct chunk *c = w->head;
    ssize_t n = write (w->dst, c->data + c->off, c->len - c->off);
    if (n < 0)
      return errno == EAGAIN || errno == EINTR;
    c->off += (size_t) n;
    w->held -= (size_t) n;
    if (l->counter)
      __atomic_add_fetch (l->counter, (uint64_t) n, __ATOMIC_RELAXED);
    if (c->off < c->len)
      return true;
    w->head = c->next;
    if (w->head == NULL)
      w->tail = NULL;
    free (c);
  }
  if (w->eof && w->head == NULL && !w->shut) {
    shutdown (w->dst, SHUT_WR);
    w->shut = true;
  }
  return true;
}

static void
conn_free (struct conn *c)
{
  for (int j = 0; j < 2; j++)
    while (c->ways[j].head) {
      struct chunk *next = c->ways[j].head->next;
      free (c->ways[j].head);
      c->ways[j].head = next;
    }
  close (c->ways[0].src);
  close (c->ways[0].dst);
  free (c);
}

/* Accept every pending connection and connect each to the target. */
static void
accept_all (int lfd, int target_port)
{
  struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) target_port),
                             .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  int one = 1, a, t;

  while ((a = accept4 (lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
    struct conn *c;

    t = socket (AF_INET, SOCK_STREAM, 0);
    if (t < 0 || connect (t, (struct sockaddr *) &sin, sizeof sin) < 0) {
      perror ("delay-proxy: connect to the target");
      if (t >= 0)
        close (t);
      close (a);
      continue;
    }
    setsockopt (a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt (t, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl (t, F_SETFL, O_NONBLOCK);
    c = calloc (1, sizeof *c);
    conns = reallocarray (conns, nconns + 1, sizeof *conns);
    if (c == NULL || conns == NULL)
      die ("malloc");
    c->ways[0].src = c->ways[1].dst = a;
    c->ways[0].dst = c->ways[1].src = t;
    conns[nconns++] = c;
  }
}

static void
serve (int lfd, int target_port)
{
  struct pollfd *pfd = NULL;

  for (;;) {
    int64_t now = now_ns (), wake = -1;
    struct timespec ts;

    /* pfd[0] is the listener; then, per connection and way, its source
     * (to read) and its destination (to write a due chunk). */
    pfd = reallocarray (pfd, 1 + 4 * nconns, sizeof *pfd);
    if (pfd == NULL)
      die ("malloc");
    pfd[0] = (struct pollfd) { .fd = lfd, .events = POLLIN };
    for (int j = 0; j < 2; j++)
      if (!link_open (&links[j], now) && (wake < 0 || links[j].free_at - queue_ns < wake))
        wake = links[j].free_at - queue_ns;
    for (size_t i = 0; i < nconns; i++)
      for (int j = 0; j < 2; j++) {
        struct way *w = &conns[i]->ways[j];
        struct pollfd *p = &pfd[1 + 4 * i + 2 * j];

        p[0] = (struct pollfd) { .fd = -1, .events = POLLIN };
        p[1] = (struct pollfd) { .fd = -1, .events = POLLOUT };
        if (way_wants_read (w) && link_open (&links[j], now))
          p[0].fd = w->src;
        if (w->head && w->head->due <= now)
          p[1].fd = w->dst;
        else if (w->head && (wake < 0 || w->head->due < wake))
          wake = w->head->due;
      }
    if (wake >= 0) {
      int64_t left = wake > now ? wake - now : 0;
      ts = (struct timespec) { .tv_sec = left / 1000000000, .tv_nsec = left % 1000000000 };
    }
    if (ppoll (pfd, 1 + 4 * nconns, wake >= 0 ? &ts : NULL, NULL) < 0 && errno != EINTR)
      die ("ppoll");

    /* Each link reads the connections in turn, one chunk each, from where
     * it stopped last time, while its buffer has room. */
    now = now_ns ();
    for (int j = 0; j < 2 && nconns > 0; j++) {
      size_t first = links[j].next;

      for (size_t k = 0; k < nconns && link_open (&links[j], now); k++) {
        size_t i = (first + k) % nconns;
        struct way *w = &conns[i]->ways[j];

        if (pfd[1 + 4 * i + 2 * j].revents && way_wants_read (w)) {
          way_read (w, &links[j], now);
          links[j].next = (i + 1) % nconns;
        }
      }
    }

    now = now_ns ();
    for (size_t i = 0; i < nconns;) {
      struct conn *c = conns[i];
      bool gone = !way_write (&c->ways[0], &links[0], now) || !way_write (&c->ways[1], &links[1], now);

      if (gone || (c->ways[0].shut && c->ways[1].shut)) {
        conn_free (c);
        conns[i] = conns[--nconns];
      } else
        i++;
    }
    if (pfd[0].revents)
      accept_all (lfd, target_port);
  }
}

static void
usage (void)
{
  fprintf (stderr, "usage: delay-proxy [--rate-mbit N] [--queue-kib N] "
           "LISTEN-PORT TARGET-PORT DELAY-MS [COUNT-FILE]\n");
  exit (2);
}

int
main (int argc, char **argv)
{
  static const struct option options[] = {
    { "rate-mbit", required_argument, NULL, 'r' },
    { "queue-kib", required_argument, NULL, 'q' },
    { NULL, 0, NULL, 0 },
  };
  struct sockaddr_in sin = { .sin_family = AF_INET };
  double rate_mbit = 0, queue_bytes = 0;
  int one = 1, lfd, opt;

  while ((opt = getopt_long (argc, argv, "", options, NULL)) != -1) {
    char *end;
    switch (opt) {
    case 'r':
      rate_mbit = strtod (optarg, &end);
      if (*end || !(rate_mbit > 0))
        usage ();
      break;
    case 'q':
      queue_bytes = strtod (optarg, &end) * 1024;
      if (*end || !(queue_bytes > 0))
        usage ();
      break;
    default:
      usage ();
    }
  }
  argc -= optind - 1;
  argv += optind - 1;
  if (argc != 4 && argc != 5)
    usage ();
  delay_ns = atoll (argv[3]) * 1000000;
  hold_max = CAP;
  if (rate_mbit > 0) {
    double bytes_per_ns = rate_mbit * 1e6 / 8 / 1e9;

    ns_per_byte = 1 / bytes_per_ns;
    if (queue_bytes == 0) {
      queue_bytes = bytes_per_ns * 2 * delay_ns;
      if (queue_bytes < MIN_QUEUE)
        queue_bytes = MIN_QUEUE;
    }
    queue_ns = (int64_t) (queue_bytes * ns_per_byte);
    hold_max = (size_t) (queue_bytes + bytes_per_ns * delay_ns) + CHUNK;
  }
  if (argc == 5) {
    int fd = open (argv[4], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate (fd, 2 * sizeof *delivered) < 0)
      die (argv[4]);
    delivered = mmap (NULL, 2 * sizeof *delivered, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (delivered == MAP_FAILED)
      die ("mmap");
    close (fd);
    links[0].counter = &delivered[0];
    links[1].counter = &delivered[1];
  }
  signal (SIGPIPE, SIG_IGN);
  sin.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  sin.sin_port = htons ((uint16_t) atoi (argv[1]));
  lfd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  setsockopt (lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind (lfd, (struct sockaddr *) &sin, sizeof sin) < 0 || listen (lfd, 16) < 0)
    die ("listen");
  serve (lfd, atoi (argv[2]));
}
