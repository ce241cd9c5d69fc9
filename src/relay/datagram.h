/* ferry: the datagram relay of nc -u, between stdio and a UDP socket.
 *
 * Each read of stdin (at most max_read bytes) goes out as one datagram,
 * and each datagram received is written to stdout whole, so the peer sees
 * the boundaries of stdin's reads and stdout gets every datagram entire.
 * One fixed buffer of DATAGRAM_MAX bytes per direction: neither is read
 * while its buffer holds a datagram, so memory never grows (the kernel
 * drops what a slow stdout leaves behind, as UDP does).
 *
 * End of stream, as netcat-openbsd 1.219's -u:
 *  - stdin's EOF ends nothing by itself; with eof_wait the relay ends that
 *    many seconds later, with idle_timeout once no datagram moved either
 *    way for that long (counted from the last one, so it may be at once).
 *  - an empty datagram is the network's EOF (netcat reads it as one): no
 *    more is read; the relay ends if stdin has ended too, or with
 *    net_eof_ends.  Not with endless.
 *  - a datagram refused (ICMP port unreachable: ECONNREFUSED on the
 *    connected socket) ends it, with one line and FERRY_EXIT_IO.
 *  - SIGTERM, SIGINT, SIGHUP, SIGQUIT (signal-watch.h): stop reading,
 *    deliver what was read, exit 0.
 * A datagram received is always written out before the end. */
#ifndef FERRY_DATAGRAM_H
#define FERRY_DATAGRAM_H

#include <stdbool.h>
#include <stddef.h>

/* The largest datagram: IPv6's UDP payload is 65527 bytes at most. */
#define DATAGRAM_MAX 65536

struct datagram_config {
  const char *name;           /* the peer, for messages: "udp 'HOST:PORT'" */
  bool connect_first;         /* wait for a datagram and connect to its sender,
                                 reading stdin only then (nc -l) */
  size_t max_read;            /* bytes per read of stdin, so per datagram sent */
  bool read_stdin;            /* false: nothing is sent (-d, or no single peer) */
  bool net_eof_ends;          /* the network's EOF ends the relay (nc -l) */
  bool endless;               /* an empty datagram is no EOF, and is written as
                                 nothing (nc -l -k, where netcat binds again) */
  int eof_wait;               /* seconds from stdin's EOF to the end; -1: no end */
  unsigned idle_timeout;      /* after stdin's EOF, end once no datagram moved for
                                 so many seconds; 0: never */
  bool verbose;               /* print the counts at the end */
};

/* Relay stdin and stdout with @fd, a UDP socket (connected, or bound with
 * connect_first or !read_stdin), until the end above.  Returns an exit code (exit-codes.h):
 * FERRY_EXIT_OK, or FERRY_EXIT_IO after one line on stderr. */
int datagram_relay (int fd, const struct datagram_config *config);

#endif
