/* ferry: the options of the sockets ferry connects, accepts or inherits,
 * and the connect timeout, as every dialer (connect.c, ssh-session.c) and
 * the listener take them.  Knows no dialer. */
#ifndef FERRY_SOCKET_OPTIONS_H
#define FERRY_SOCKET_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

struct proxy;

struct connect_options {
  unsigned timeout;           /* seconds; 0 waits as long as the kernel does */
  unsigned keepalive;         /* seconds: probe an idle peer this often, TCP
                                 keepalive or ssh keepalive; 3 unanswered end
                                 the connection.  0: never */
  bool keepalive_given;       /* --keepalive was given; else ssh sessions
                                 use FERRY_DEFAULT_SSH_KEEPALIVE */
  int family;                 /* AF_UNSPEC, or AF_INET / AF_INET6 to restrict TCP */
  struct proxy *proxy;        /* --proxy: TCP connections (and ssh://'s) go
                                 through it; NULL: direct.  The command
                                 line's to free */
  const char *remote_helper;  /* ssh exec mode: the program run on the server */
  bool ask_password;          /* ssh: also password and keyboard-interactive
                                 authentication, prompting on the terminal */
  size_t sndbuf, rcvbuf;      /* SO_SNDBUF / SO_RCVBUF bytes; 0 keeps the kernel's */
  int tos;                    /* nc -T: IP_TOS / IPV6_TCLASS of TCP sockets; 0 keeps
                                 the kernel's */
  bool so_debug;              /* nc -D: SO_DEBUG */
  bool broadcast;             /* nc -b: SO_BROADCAST (for datagrams; TCP ignores it) */
  int ttl;                    /* nc -M: IP_TTL / IPV6_UNICAST_HOPS of TCP sockets;
                                 0 keeps the kernel's */
  int min_ttl;                /* nc -m: IP_MINTTL / IPV6_MINHOPCOUNT; 0: none */
  const char *bind_host;      /* nc -s: the local address a TCP connect binds
                                 to; NULL: the kernel's choice */
  const char *bind_port;      /* nc -p: the local port it binds to; NULL: any */
  size_t unix_sndbuf;         /* SO_SNDBUF of a UNIX socket without --sndbuf:
                                 the relay's buffer size, so that one splice
                                 or write can hand over a full buffer.  TCP
                                 keeps the kernel's autotuning.  Set by
                                 ferry_run() */
};

/* An ssh session's keepalive without --keepalive: a copy that runs
 * unattended for hours ends within a minute of its link freezing (as when
 * a NAT drops its state), where OpenSSH's client, without
 * ServerAliveInterval, waits for ever. */
#define FERRY_DEFAULT_SSH_KEEPALIVE 15

/* Unanswered TCP keepalive probes that end a connection (--keepalive). */
#define FERRY_KEEPALIVE_PROBES 3

/* Every option of a socket ferry relays on, in one place (as OpenBSD
 * netcat's set_common_sockopts()): close-on-exec, non-blocking, @options'
 * SO_SNDBUF / SO_RCVBUF, SO_DEBUG and SO_BROADCAST, and on TCP, TCP_NODELAY, the TOS, the
 * TTLs and --keepalive.  For a
 * socket ferry connects (before connect() for TCP, so that the window
 * scale reflects SO_RCVBUF; after it for UNIX, whose connect blocks),
 * accepts (listen.c) or inherits (fd:N).  A refused option is not an
 * error: the kernel's setting stands (it caps SO_SNDBUF at
 * net.core.wmem_max). */
void socket_setup (int fd, const struct connect_options *options);

/* --connect-timeout in milliseconds for poll(2) and libssh, -1 for none.
 * Past INT_MAX ms (24.8 days) it is INT_MAX ms: never an overflow. */
int connect_timeout_ms (const struct connect_options *options);

#endif
