/* splice-ref: the splice(2) reference relay for bench/.
 *
 *   splice-ref unix:PATH | tcp:HOST:PORT
 *
 * Relays stdin -> socket and socket -> stdout (both must be pipes) with
 * splice(2) only: poll first, then splice with SPLICE_F_NONBLOCK, because
 * a blocking splice from a socket into a pipe holds the pipe's lock while
 * it waits.  Both pipes are grown to 1 MiB.  No user-space buffer, no copy:
 * the practical ceiling for a stdio <-> socket helper on this machine.
 *
 * End of stream as in nc -N: stdin EOF -> shutdown(SHUT_WR) the socket and
 * keep relaying down; socket EOF -> close stdout and keep relaying up, until
 * stdin EOF or the socket's POLLHUP (its peer shut both directions: on UNIX
 * sockets, a close).  Any error -> a message and exit 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define PIPE_SIZE (1024 * 1024)

/* One direction: splice from in to out. */
struct dir {
  const char *name;
  int in, out;
  bool out_full;  /* the last splice found out full: wait for POLLOUT */
  bool done;
};

static void
fail (const char *what, const char *arg)
{
  fprintf (stderr, "splice-ref: %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "",
           strerror (errno));
  exit (1);
}

static int
connect_to (const char *addr)
{
  int fd;

  if (strncmp (addr, "unix:", 5) == 0) {
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    strncpy (sun.sun_path, addr + 5, sizeof sun.sun_path - 1);
    fd = socket (AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect (fd, (struct sockaddr *) &sun, sizeof sun) < 0)
      fail ("cannot connect to", addr);
  }
  else if (strncmp (addr, "tcp:", 4) == 0) {
    char host[256];
    const char *colon = strrchr (addr + 4, ':');
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
    int one = 1;
    if (!colon || colon - (addr + 4) >= (int) sizeof host) {
      fprintf (stderr, "splice-ref: expected tcp:HOST:PORT, got '%s'\n", addr);
      exit (2);
    }
    memcpy (host, addr + 4, colon - (addr + 4));
    host[colon - (addr + 4)] = '\0';
    if (getaddrinfo (host, colon + 1, &hints, &ai) != 0) {
      fprintf (stderr, "splice-ref: cannot resolve '%s'\n", addr);
      exit (1);
    }
    fd = socket (ai->ai_family, SOCK_STREAM, 0);
    if (fd < 0 || connect (fd, ai->ai_addr, ai->ai_addrlen) < 0)
      fail ("cannot connect to", addr);
    freeaddrinfo (ai);
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  else {
    fprintf (stderr, "splice-ref: expected unix:PATH or tcp:HOST:PORT, got '%s'\n", addr);
    exit (2);
  }
  return fd;
}

/* Move what the kernel allows; returns false at the input's EOF. */
static bool
move (struct dir *d)
{
  ssize_t n = splice (d->in, NULL, d->out, NULL, PIPE_SIZE,
                      SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
  if (n > 0) {
    d->out_full = false;
    return true;
  }
  if (n == 0)
    return false;
  if (errno == EAGAIN) {
    /* Polled for input and could not move: out is full; polled for
     * output and could not move: in is empty. */
    d->out_full = !d->out_full;
    return true;
  }
  if (errno == EINTR)
    return true;
  fail ("splice", d->name);
  return false;
}

int
main (int argc, char **argv)
{
  if (argc != 2) {
    fprintf (stderr, "usage: splice-ref unix:PATH | tcp:HOST:PORT\n");
    return 2;
  }
  int sock = connect_to (argv[1]);
  if (fcntl (sock, F_SETFL, O_NONBLOCK) < 0)
    fail ("fcntl", "O_NONBLOCK");
  fcntl (0, F_SETPIPE_SZ, PIPE_SIZE);
  fcntl (1, F_SETPIPE_SZ, PIPE_SIZE);

  struct dir up = { .name = "stdin -> socket", .in = 0, .out = sock };
  struct dir down = { .name = "socket -> stdout", .in = sock, .out = 1 };
  struct dir *dirs[2] = { &up, &down };

  while (!down.done || !up.done) {
    struct pollfd p[3];
    int n = 0;
    struct dir *polled[2];
    for (int i = 0; i < 2; i++) {
      struct dir *d = dirs[i];
      if (d->done)
        continue;
      p[n].fd = d->out_full ? d->out : d->in;
      p[n].events = d->out_full ? POLLOUT : POLLIN;
      polled[n++] = d;
    }
    /* Only the upload is left: watch for the peer going away. */
    if (down.done)
      p[n] = (struct pollfd) { .fd = sock, .events = 0 };
    if (poll (p, n + down.done, -1) < 0) {
      if (errno == EINTR)
        continue;
      fail ("poll", NULL);
    }
    if (down.done && (p[n].revents & POLLHUP))
      break;
    for (int i = 0; i < n; i++) {
      if (!p[i].revents || move (polled[i]))
        continue;
      polled[i]->done = true;
      if (polled[i] == &up) {
        if (shutdown (sock, SHUT_WR) < 0)
          fail ("shutdown", argv[1]);
      }
      else if (close (1) < 0)
        fail ("close", "stdout");
    }
  }
  return 0;
}
