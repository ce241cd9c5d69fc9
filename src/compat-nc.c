/* ferry: the "nc" personality, netcat-openbsd 1.219's command line.  Every
 * option it has either works as netcat's (tests/nc-differential.sh runs
 * both) or is refused: "nc: -X is not supported by ferry's nc", exit 2.
 * Differences from netcat-openbsd, all on purpose:
 *
 *  - stdin EOF always half-closes the socket (-N is the default): a
 *    tunnel must end when its client goes away.
 *  - A peer that goes away before taking everything makes netcat exit 0
 *    silently; this nc names the count of bytes lost and exits 1.
 *  - A connect that fails prints one line without -v too; -v prints
 *    ferry's statistics at exit (with -z and -F, netcat's lines).
 *
 * netcat-openbsd's own rules, kept: -q SECS (any SECS >= 0) is -N, and
 * once the relay is over, waits SECS more with the socket closed, exit 0;
 * it never cuts the reply.  -w SECS bounds the connect and the time both
 * directions may stay silent (then exit 0, as at EOF).  As a client,
 * stdin is still sent after the network's EOF; with -l, the client's EOF
 * ends the relay. */
#include <config.h>

#include "compat.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "address.h"
#include "connect.h"
#include "tcp-connect.h"
#include "error.h"
#include "exit-codes.h"
#include "message.h"
#include "proxy.h"
#include "run.h"

static const char usage_text[] =
  "usage: nc [-46CDdFhklNnrStUuvZz] [-I length] [-i interval] [-M ttl]\n"
  "\t  [-m minttl] [-O length] [-P proxy_username] [-p source_port]\n"
  "\t  [-q seconds] [-s sourceaddr] [-T keyword] [-V rtable] [-W recvlimit]\n"
  "\t  [-w timeout] [-X proxy_protocol] [-x proxy_address[:port]]\n"
  "\t  [destination] [port]\n";

static int
usage (void)
{
  fputs (usage_text, stderr);
  return 1;
}

/* netcat's strtonum(): NULL, or why @text is no number from @min to @max. */
static const char *
strtonum_error (const char *text, long min, long max, int *out)
{
  char *end;
  long n;

  errno = 0;
  n = strtol (text, &end, 10);
  if (end == text || *end != '\0')
    return "invalid";
  if (errno == ERANGE || n < min || n > max)
    return n < min ? "too small" : "too large";
  *out = (int) n;
  return NULL;
}

/* A number with netcat's message about it ("quit timer invalid: x"). */
static bool
parse_int (const char *what, const char *text, long min, long max, int *out)
{
  const char *why = strtonum_error (text, min, max, out);

  if (why)
    ferry_error ("%s %s: %s", what, why, text);
  return why == NULL;
}

/* -T: netcat's keywords, a 0x number or a decimal one. */
static bool
parse_tos (const char *text, int *out)
{
  static const struct { const char *name; int value; } keywords[] = {
    { "af11", 0x28 }, { "af12", 0x30 }, { "af13", 0x38 }, { "af21", 0x48 },
    { "af22", 0x50 }, { "af23", 0x58 }, { "af31", 0x68 }, { "af32", 0x70 },
    { "af33", 0x78 }, { "af41", 0x88 }, { "af42", 0x90 }, { "af43", 0x98 },
    { "critical", IPTOS_PREC_CRITIC_ECP }, { "cs0", 0x00 }, { "cs1", 0x20 },
    { "cs2", 0x40 }, { "cs3", 0x60 }, { "cs4", 0x80 }, { "cs5", 0xa0 },
    { "cs6", 0xc0 }, { "cs7", 0xe0 }, { "ef", 0xb8 },
    { "inetcontrol", IPTOS_PREC_INTERNETCONTROL }, { "lowcost", IPTOS_LOWCOST },
    { "lowdelay", IPTOS_LOWDELAY }, { "netcontrol", IPTOS_PREC_NETCONTROL },
    { "reliability", IPTOS_RELIABILITY }, { "throughput", IPTOS_THROUGHPUT },
  };
  char *end;
  long n;

  for (size_t i = 0; i < G_N_ELEMENTS (keywords); i++)
    if (strcmp (text, keywords[i].name) == 0) {
      *out = keywords[i].value;
      return true;
    }
  errno = 0;
  n = strtol (text, &end, strncmp (text, "0x", 2) == 0 ? 16 : 10);
  if (end == text || *end != '\0' || errno != 0 || n < 0 || n > 255) {
    ferry_error ("illegal tos value %s", text);
    return false;
  }
  *out = (int) n;
  return true;
}

/* netcat's build_ports(): service names, LO-HI ranges and single ports,
 * as numbers, in random order with -r (@randomize).  NULL after the
 * message. */
static GArray *
parse_ports (char **args, int n, bool randomize)
{
  g_autoptr (GArray) ports = g_array_new (FALSE, FALSE, sizeof (int));

  for (int i = 0; i < n; i++) {
    struct servent *sv = getservbyname (args[i], "tcp");
    g_autofree char *lo_text = g_strdup (args[i]);
    char *hi_text = isdigit ((unsigned char) *lo_text) ? strchr (lo_text, '-') : NULL;
    int lo, hi;

    if (sv) {
      lo = hi = ntohs (sv->s_port);
    } else {
      if (hi_text)
        *hi_text++ = '\0';
      if ((hi_text && !parse_int ("port number", hi_text, 1, 65535, &hi)) ||
          !parse_int ("port number", lo_text, 1, 65535, &lo))
        return NULL;
      if (!hi_text)
        hi = lo;
    }
    for (int p = MIN (lo, hi); p <= MAX (lo, hi); p++)
      g_array_append_val (ports, p);
  }
  /* netcat's Fisher-Yates shuffle. */
  for (guint i = ports->len; randomize && i > 1; i--) {
    guint j = (guint) g_random_int_range (0, (gint32) i);
    int p = g_array_index (ports, int, i - 1);

    g_array_index (ports, int, i - 1) = g_array_index (ports, int, j);
    g_array_index (ports, int, j) = p;
  }
  return g_steal_pointer (&ports);
}

/* What nc's flags say, beside the options they set. */
struct nc_flags {
  bool unix_socket;           /* -U: the argument is a UNIX socket's path */
  bool no_stdin;              /* -d: read nothing from stdin */
  bool zero_io;               /* -z: connect and close at once */
  bool verbose;               /* -v */
  bool numeric;               /* -n: no name or service look-ups */
  bool crlf;                  /* -C: send each "\n" as "\r\n" */
  unsigned interval;          /* -i: seconds to wait after each line sent */
  bool randomize;             /* -r: the ports in random order */
  bool pass_fd;               /* -F: pass the socket over stdout instead */
  int quit_seconds;           /* -q: the wait after the end; -1: none */
  bool udp;                   /* -u: UDP datagrams (compat-nc-udp.c) */
  const char *proxy_protocol; /* -X connect|4|5; NULL: SOCKS5 */
  const char *proxy_address;  /* -x HOST[:PORT]: connect through it */
  const char *proxy_user;     /* -P USER */
};

/* netcat's " (IP)" after a host name, where it is not the address itself. */
static char *
ip_note (const char *host, const char *ip, bool numeric)
{
  return numeric || strcmp (host, ip) == 0 ? g_strdup ("") : g_strdup_printf (" (%s)", ip);
}

/* netcat's remote_connect(): each address of @host in turn, under -v a line
 * for each failure.  Returns the connected fd, its address in @ip, or -1
 * (-2 after a message that ends nc: no such host). */
static int
connect_port (const struct ferry_options *options, const struct nc_flags *flags,
              const char *host, const char *port, char ip[NI_MAXHOST])
{
  struct addrinfo hints = {
    .ai_family = options->connect.family,
    .ai_socktype = SOCK_STREAM,
    .ai_protocol = IPPROTO_TCP,
    .ai_flags = flags->numeric ? AI_NUMERICHOST : 0,
  };
  struct addrinfo *list = NULL;
  int r = getaddrinfo (host, port, &hints, &list), fd = -1;

  if (r != 0) {
    ferry_error ("getaddrinfo for host \"%s\" port %s: %s", host, port, gai_strerror (r));
    return -2;
  }
  for (struct addrinfo *ai = list; ai && fd < 0; ai = ai->ai_next) {
    getnameinfo (ai->ai_addr, ai->ai_addrlen, ip, NI_MAXHOST, NULL, 0, NI_NUMERICHOST);
    fd = connect_tcp_addrinfo (ai, &options->connect);
    if (fd < 0 && flags->verbose) {
      int err = errno;
      g_autofree char *note = ip_note (host, ip, flags->numeric);

      ferry_error ("connect to %s%s port %s (tcp) %s: %s", host, note, port,
                   err == ETIMEDOUT ? "timed out" : "failed",
                   g_strerror (err == ETIMEDOUT ? EINPROGRESS : err));
    }
  }
  freeaddrinfo (list);
  return fd;
}

/* -v: netcat's line for a port that took the connection. */
static void
report_success (const struct nc_flags *flags, const char *host, const char *ip,
                const char *port)
{
  struct servent *sv;
  g_autofree char *note = NULL;

  if (!flags->verbose)
    return;
  sv = flags->numeric ? NULL : getservbyport (htons (atoi (port)), "tcp");
  note = ip_note (host, ip, flags->numeric);
  fprintf (stderr, "Connection to %s%s %s port [tcp/%s] succeeded!\n", host, note, port,
           sv ? sv->s_name : "*");
}

/* -z: connect to each port and close; under -v netcat's lines.  Returns 0
 * if some port took the connection, else 1. */
static int
scan_tcp (const struct ferry_options *options, const struct nc_flags *flags,
          const char *host, GArray *ports)
{
  int rc = 1;

  for (guint i = 0; i < ports->len; i++) {
    g_autofree char *port = g_strdup_printf ("%d", g_array_index (ports, int, i));
    char ip[NI_MAXHOST] = "";
    int fd = connect_port (options, flags, host, port, ip);

    if (fd == -2)
      return 1;
    if (fd < 0)
      continue;
    close (fd);
    rc = 0;
    report_success (flags, host, ip, port);
  }
  return rc;
}

/* -F: connect, and pass the socket over stdout (a UNIX socket: ssh's
 * ProxyUseFdpass), as netcat's fdpass().  Returns the exit code. */
static int
pass_fd (const struct ferry_options *options, const struct nc_flags *flags,
         const char *host, int port)
{
  g_autofree char *port_text = g_strdup_printf ("%d", port);
  char ip[NI_MAXHOST] = "", byte = '\0';
  union { struct cmsghdr hdr; char buf[CMSG_SPACE (sizeof (int))]; } control = { 0 };
  struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
  struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                        .msg_controllen = sizeof control.buf };
  struct cmsghdr *cmsg = CMSG_FIRSTHDR (&msg);
  int fd;

  if (isatty (STDOUT_FILENO))
    return ferry_error ("Cannot pass file descriptor to tty"), 1;
  if ((fd = connect_port (options, flags, host, port_text, ip)) < 0)
    return 1;
  report_success (flags, host, ip, port_text);
  cmsg->cmsg_len = CMSG_LEN (sizeof (int));
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  memcpy (CMSG_DATA (cmsg), &fd, sizeof fd);
  while (sendmsg (STDOUT_FILENO, &msg, 0) < 0) {
    struct pollfd writable = { .fd = STDOUT_FILENO, .events = POLLOUT };

    if (errno != EINTR && errno != EAGAIN) {
      ferry_error ("sendmsg: %s", g_strerror (errno));
      return 1;
    }
    if (errno == EAGAIN)
      poll (&writable, 1, -1);  /* a non-blocking stdout, full */
  }
  close (fd);
  return 0;
}

/* -z -U: connect and close. */
static int
scan_unix (const struct ferry_options *options)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (FerryAddress) address = address_parse (options->address, &error);
  g_autoptr (FerryEndpoint) ep = NULL;

  if (address)
    ep = connect_address (address, &options->connect, &error);
  if (ep == NULL) {
    ferry_error ("%s", error->message);
    return 1;
  }
  return 0;
}

/* netcat-openbsd's flags into @options and @flags; returns -1, or the exit
 * code when there is nothing to run (-h, a bad flag). */
static int
parse_flags (int argc, char **argv, struct ferry_options *options, struct nc_flags *flags)
{
  const char *why;
  int c, n;

  opterr = 0;
  optind = 1;
  while ((c = getopt (argc, argv, ":46bCDdFhI:i:klM:m:NnO:P:p:q:rSs:T:tUuV:vW:w:X:x:Zz")) != -1) {
    switch (c) {
    case '4': options->connect.family = AF_INET; break;
    case '6': options->connect.family = AF_INET6; break;
    case 'b': options->connect.broadcast = true; break;
    case 'C': flags->crlf = true; break;
    case 'D': options->connect.so_debug = true; break;
    case 'F': flags->pass_fd = true; break;
    case 'd': flags->no_stdin = true; break;
    case 'k': options->keep_listening = true; break;
    case 'l': options->listen = true; break;
    case 'N': break;          /* the default, see above */
    case 'n': flags->numeric = true; break;
    case 'r': flags->randomize = true; break;
    case 'p': options->connect.bind_port = optarg; break;
    case 's': options->connect.bind_host = optarg; break;
    case 'U': flags->unix_socket = true; break;
    case 'u': flags->udp = true; break;
    case 'v': flags->verbose = true; break;
    case 'z': flags->zero_io = true; break;
    case 'P': flags->proxy_user = optarg; break;
    case 'X': flags->proxy_protocol = optarg; break;
    case 'x': flags->proxy_address = optarg; break;
    case 'I':
    case 'O':
      if (!parse_int (c == 'I' ? "TCP receive window" : "TCP send window", optarg, 1,
                      65536 << 14, &n))
        return 1;
      *(c == 'I' ? &options->connect.rcvbuf : &options->connect.sndbuf) = (size_t) n;
      break;
    case 'M':
    case 'm':
      if ((why = strtonum_error (optarg, 1, 255, c == 'M' ? &options->connect.ttl
                                                          : &options->connect.min_ttl))) {
        ferry_error ("%s is %s", c == 'M' ? "ttl" : "minttl", why);
        return 1;
      }
      break;
    case 'i':
      if (!parse_int ("interval", optarg, 0, INT_MAX, &n))
        return 1;
      flags->interval = (unsigned) n;
      break;
    case 'q':
      if (!parse_int ("quit timer", optarg, INT_MIN, INT_MAX, &flags->quit_seconds))
        return 1;
      break;
    case 'T':
      if (!parse_tos (optarg, &options->connect.tos))
        return 1;
      break;
    case 'w':
      if (!parse_int ("timeout", optarg, 0, INT_MAX / 1000, &n))
        return 1;
      options->connect.timeout = options->relay.idle_timeout = (unsigned) n;
      options->relay.idle_is_eof = true;
      break;
    case 'h':
      fputs ("ferry " PACKAGE_VERSION " as nc: netcat-openbsd 1.219's options "
             "(ferry(1), PERSONALITIES)\n", stderr);
      fputs (usage_text, stderr);
      return 0;
    case ':':
      ferry_error ("option requires an argument -- '%c'", optopt);
      return usage ();
    case '?':
      ferry_error ("invalid option -- '%c'", optopt);
      return usage ();
    default:                  /* -S -t -V -W -Z */
      ferry_error ("-%c is not supported by ferry's nc", c);
      return FERRY_EXIT_NC_UNSUPPORTED;
    }
  }
  return -1;
}

/* netcat's rules for the arguments after the flags, and its messages:
 * *@host (a path with -U, NULL for a listener's wildcard) and the
 * @n_ports port arguments at *@port_args.  Returns -1, or the exit code. */
static int
parse_arguments (int argc, char **argv, const struct ferry_options *options,
                 const struct nc_flags *flags, const char **host, char ***port_args,
                 int *n_ports)
{
  const struct connect_options *c = &options->connect;

  if (argc == 0 && options->listen) {
    *host = c->bind_host;
    *port_args = (char **) &c->bind_port;
    *n_ports = c->bind_port != NULL;
  } else if (argc == 1 && !c->bind_port && !c->bind_host) {
    if (flags->unix_socket)
      *host = argv[0];
    else if (options->listen)
      *port_args = argv, *n_ports = 1;
  } else if (argc >= 2) {
    if (options->listen && (c->bind_port || c->bind_host || argc > 2))
      return usage ();
    *host = argv[0];
    *port_args = argv + 1, *n_ports = argc - 1;
  } else {
    return usage ();
  }
  if (flags->unix_socket) {
    if (*n_ports > 0)
      return ferry_error ("cannot use port with -U"), 1;
    if (*host == NULL)
      return ferry_error ("missing socket pathname"), 1;
  } else if (*n_ports == 0) {
    return ferry_error ("missing port number"), 1;
  }
  if (options->listen && flags->zero_io)
    return ferry_error ("cannot use -z and -l"), 1;
  if (options->keep_listening && !options->listen)
    return ferry_error ("must use -l with -k"), 1;
  if (flags->unix_socket && flags->pass_fd)
    return ferry_error ("cannot use -F and -U"), 1;
  return -1;
}

/* The TCP address of @host and @port; with -n (@numeric) @host must be an
 * address, as netcat's message says.  NULL after the message. */
static char *
tcp_address (const char *host, int port, bool numeric)
{
  g_autofree char *port_text = g_strdup_printf ("%d", port);
  struct addrinfo hints = { .ai_flags = AI_NUMERICHOST }, *list = NULL;
  int r = numeric ? getaddrinfo (host, port_text, &hints, &list) : 0;

  if (list)
    freeaddrinfo (list);
  if (r != 0) {
    ferry_error ("getaddrinfo for host \"%s\" port %s: %s", host, port_text, gai_strerror (r));
    return NULL;
  }
  return address_tcp_text (host, port_text);
}

/* -d: nothing is read, so nothing ends: the socket is not half-closed, even
 * with -N or -q, as netcat's. */
static bool
stdin_from_dev_null (struct ferry_options *options)
{
  int devnull = open ("/dev/null", O_RDONLY | O_CLOEXEC);

  if (devnull < 0 || dup2 (devnull, STDIN_FILENO) < 0) {
    ferry_error ("cannot open /dev/null: %s", g_strerror (errno));
    return false;
  }
  if (devnull != STDIN_FILENO)
    close (devnull);
  options->relay.half_close = false;
  return true;
}

/* -C and -i: the real stdin, the pipe that stands for it, and what to do
 * on the way. */
struct stdin_filter {
  int in;                     /* the real stdin, moved */
  int out;                    /* the pipe's write end */
  bool crlf;                  /* -C */
  unsigned interval;          /* -i: seconds to wait after each line; 0: none */
};

/* Write all of @buf to @fd; false once the relay takes no more. */
static bool
write_all (int fd, const char *buf, size_t len)
{
  while (len > 0) {
    ssize_t w = write (fd, buf, len);

    if (w < 0 && errno != EINTR)
      return false;
    buf += w > 0 ? w : 0;
    len -= w > 0 ? (size_t) w : 0;
  }
  return true;
}

/* @data's (a stdin_filter's) stdin into its pipe, as netcat's drainbuf():
 * with -C each "\n" not after "\r" as "\r\n"; with -i a wait after each
 * line.  A read error is reported; the relay sees EOF. */
static gpointer
filter_stdin (gpointer data)
{
  g_autofree struct stdin_filter *f = data;
  char buf[16384], line[2 * sizeof buf];
  bool after_cr = false;
  ssize_t n;

  while ((n = read (f->in, buf, sizeof buf)) != 0) {
    size_t len = 0;

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      ferry_error ("cannot read stdin: %s", g_strerror (errno));
      break;
    }
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] == '\n' && f->crlf && !after_cr)
        line[len++] = '\r';
      line[len++] = buf[i];
      after_cr = buf[i] == '\r';
      if (buf[i] == '\n' && f->interval > 0) {
        if (!write_all (f->out, line, len))
          goto out;
        len = 0;
        g_usleep ((gulong) f->interval * G_USEC_PER_SEC);
      }
    }
    if (!write_all (f->out, line, len))
      break;
  }
out:
  close (f->out);
  return NULL;
}

/* -C, -i: stdin becomes a pipe that filter_stdin() fills from the real
 * stdin.  Its thread takes no signals. */
static bool
filter_stdin_start (const struct nc_flags *flags)
{
  struct stdin_filter *f = g_new (struct stdin_filter, 1);
  int pipe_fds[2];
  sigset_t all, old;

  if ((f->in = fcntl (STDIN_FILENO, F_DUPFD_CLOEXEC, 3)) < 0 ||
      pipe2 (pipe_fds, O_CLOEXEC) < 0 || dup2 (pipe_fds[0], STDIN_FILENO) < 0) {
    ferry_error ("cannot filter stdin: %s", g_strerror (errno));
    g_free (f);
    return false;
  }
  close (pipe_fds[0]);
  f->out = pipe_fds[1];
  f->crlf = flags->crlf;
  f->interval = flags->interval;
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &old);
  g_thread_unref (g_thread_new ("nc stdin", filter_stdin, f));
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  return true;
}

/* -q SECS once the relay is over: netcat's alarm().  A stop signal ends the
 * wait; nothing is left undelivered, so that is exit 0 too. */
static void
quit_wait (int seconds)
{
  static const int stops[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM };
  struct timespec wait = { .tv_sec = seconds };
  sigset_t set;

  sigemptyset (&set);
  for (size_t i = 0; i < G_N_ELEMENTS (stops); i++)
    sigaddset (&set, stops[i]);
  /* Blocked, they are queued even where ferry now ignores them. */
  pthread_sigmask (SIG_BLOCK, &set, NULL);
  while (sigtimedwait (&set, NULL, &wait) < 0 && errno == EINTR)
    ;
}

/* The flag that -u cannot take, or '\0': the UDP relay reads stdin
 * itself (no -C or -i filter), and -F would pass a TCP socket. */
static char
udp_unsupported (const struct nc_flags *flags, bool listen)
{
  if (flags->pass_fd && !listen)
    return 'F';
  if (flags->no_stdin)
    return '\0';
  return flags->crlf ? 'C' : flags->interval > 0 ? 'i' : '\0';
}

/* The flag combinations ferry's nc refuses, checked before anything is
 * opened; returns -1, or the exit code. */
static int
check_combinations (const struct ferry_options *options, const struct nc_flags *flags)
{
  char c;

  /* netcat's checks, in its order. */
  if (flags->proxy_address &&
      (flags->udp || options->listen || flags->unix_socket || options->connect.bind_host)) {
    ferry_error ("no proxy support for %s", flags->udp ? "UDP mode"
                 : options->listen ? "listen" : flags->unix_socket ? "unix sockets"
                 : "local source address");
    return 1;
  }
  if (flags->proxy_address && (flags->zero_io || flags->pass_fd)) {
    /* -z and -F connect on their own, as netcat's remote_connect(). */
    ferry_error ("-%c with -x is not supported by ferry's nc", flags->zero_io ? 'z' : 'F');
    return FERRY_EXIT_NC_UNSUPPORTED;
  }
  if (flags->udp && (flags->zero_io || flags->unix_socket)) {
    ferry_error ("%s is not supported by ferry's nc", flags->zero_io ? "-z -u" : "-U -u");
    return FERRY_EXIT_NC_UNSUPPORTED;
  }
  if (flags->udp && !options->listen &&
      (options->connect.bind_host || options->connect.bind_port)) {
    ferry_error ("-u with -s or -p is not supported by ferry's nc");
    return FERRY_EXIT_NC_UNSUPPORTED;
  }
  if (flags->udp && (c = udp_unsupported (flags, options->listen))) {
    ferry_error ("-u with -%c is not supported by ferry's nc", c);
    return FERRY_EXIT_NC_UNSUPPORTED;
  }
  return -1;
}

/* The relay to @options->address (with -z -U, only its check), stdin made
 * as -d, -C and -i say; returns the exit code. */
static int
run_relay (struct ferry_options *options, const struct nc_flags *flags)
{
  int rc;

  /* netcat-openbsd 1.219 ends a listening relay at the client's EOF; as a
   * client it keeps sending stdin after the network's EOF. */
  options->relay.remote_eof_ends_local = options->listen;
  if (flags->zero_io)
    return scan_unix (options);
  if (flags->no_stdin && !stdin_from_dev_null (options))
    return 1;
  if ((flags->crlf || flags->interval > 0) && !flags->no_stdin && !filter_stdin_start (flags))
    return 1;
  rc = compat_exit_code (ferry_run (options));
  /* -q SECS: netcat closes the socket, then waits before it exits 0. */
  if (rc == 0 && flags->quit_seconds > 0)
    quit_wait (flags->quit_seconds);
  return rc;
}

int
compat_nc_main (int argc, char **argv)
{
  struct ferry_options options;
  struct nc_flags flags = { .quit_seconds = -1 };
  g_autoptr (FerryProxy) proxy = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *address = NULL;
  g_autoptr (GArray) ports = NULL;
  const char *host = NULL;
  char **port_args = NULL;
  int n_ports = 0, rc;

  g_set_prgname ("nc");
  ferry_options_init (&options);
  if ((rc = parse_flags (argc, argv, &options, &flags)) >= 0)
    return rc;
  if ((rc = parse_arguments (argc - optind, argv + optind, &options, &flags, &host,
                             &port_args, &n_ports)) >= 0)
    return rc;
  if ((rc = check_combinations (&options, &flags)) >= 0)
    return rc;
  if (flags.proxy_address &&
      (options.connect.proxy = proxy = proxy_from_nc (flags.proxy_protocol, flags.proxy_address,
                                                      flags.proxy_user, &error)) == NULL) {
    ferry_error ("%s", error->message);
    return 1;
  }
  options.relay.verbose = flags.verbose;
  if (flags.unix_socket) {
    address = g_strconcat ("unix:", host, NULL);
  } else {
    if ((ports = parse_ports (port_args, n_ports, flags.randomize)) == NULL)
      return 1;
    if (flags.zero_io)
      return scan_tcp (&options, &flags, host, ports);
    if (!options.listen && ports->len > 1) {
      ferry_error ("several ports are not supported by ferry's nc without -z");
      return FERRY_EXIT_NC_UNSUPPORTED;
    }
    if (flags.pass_fd && !options.listen)
      return pass_fd (&options, &flags, host, g_array_index (ports, int, 0));
    if (options.listen) {
      /* The bind options name the listening address, not a source. */
      options.connect.bind_host = options.connect.bind_port = NULL;
      if (host == NULL)
        host = options.connect.family == AF_INET6 ? "::" : "0.0.0.0";
    }
    if (flags.udp) {
      g_autofree char *port = g_strdup_printf ("%d", g_array_index (ports, int, 0));
      return compat_exit_code (compat_nc_udp (&options, host, port, flags.quit_seconds,
                                              !flags.no_stdin));
    }
    if ((address = tcp_address (host, g_array_index (ports, int, 0), flags.numeric)) == NULL)
      return 1;
  }
  options.address = address;
  return run_relay (&options, &flags);
}
