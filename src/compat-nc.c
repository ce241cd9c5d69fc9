/* ferry: the "nc" personality, netcat-openbsd's command line for the
 * options tunnels use.  Differences from netcat-openbsd, all on purpose:
 *
 *  - stdin EOF always half-closes the socket (-N is accepted and is the
 *    default): a tunnel must end when its client goes away, and libvirt
 *    runs "nc -q0" or plain "nc" expecting exactly that.
 *  - End of stream otherwise as netcat-openbsd 1.219: as a client, stdin
 *    is still sent after the network's EOF (until a peer gone completely:
 *    see relay.h); with -l, the client's EOF ends the relay.
 *  - -q SECS bounds how long the reply may keep coming after stdin EOF, but
 *    bytes already read are delivered, even with -q0; without -q the reply
 *    is relayed until the socket's EOF.
 *  - -v prints ferry's per-direction statistics at exit; with -z it prints
 *    netcat's "Connection to HOST PORT port [tcp/NAME] succeeded!".
 *  - Errors are always one line on stderr; the exit code is 0 or 1.  A
 *    peer that goes away before taking everything makes netcat exit 0
 *    silently; this nc names the count of bytes lost and exits 1. */
#include <config.h>

#include "compat.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "address.h"
#include "error.h"
#include "message.h"
#include "run.h"

static const char usage_text[] =
  "usage: nc [-46dhklNUuvz] [-q seconds] [-w timeout] [destination] [port]\n"
  "       nc -U [-dhklNvz] [-q seconds] [-w timeout] path\n";

static int
usage (void)
{
  fputs (usage_text, stderr);
  return 1;
}

/* netcat's strtonum() checks, with its messages ("quit timer invalid: x"). */
static bool
parse_int (const char *what, const char *text, int min, int *out)
{
  char *end;
  long n;

  errno = 0;
  n = strtol (text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || n < min || n > INT_MAX) {
    ferry_error ("%s %s: %s", what,
                 end == text || *end != '\0' ? "invalid" : n < min ? "too small" : "too large",
                 text);
    return false;
  }
  *out = (int) n;
  return true;
}

/* -z: connect and close at once. */
static int
scan (const struct ferry_options *options, const char *host, const char *port,
      bool verbose)
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
  if (verbose && host) {
    struct servent *sv = getservbyport (htons (atoi (port)), "tcp");
    fprintf (stderr, "Connection to %s %s port [tcp/%s] succeeded!\n",
             host, port, sv ? sv->s_name : "*");
  }
  return 0;
}

/* What nc's flags say, beside the options they set. */
struct nc_flags {
  bool unix_socket;           /* -U: the argument is a UNIX socket's path */
  bool no_stdin;              /* -d: read nothing from stdin */
  bool zero_io;               /* -z: connect and close at once */
  bool verbose;               /* -v */
  bool udp;                   /* -u: UDP datagrams (compat-nc-udp.c) */
};

/* netcat-openbsd's flags into @options and @flags; returns -1, or the exit
 * code when there is nothing to run (-h, a bad flag). */
static int
parse_flags (int argc, char **argv, struct ferry_options *options, struct nc_flags *flags)
{
  int c, seconds;

  opterr = 0;
  optind = 1;
  while ((c = getopt (argc, argv, ":46dhklNq:Uuvw:z")) != -1) {
    switch (c) {
    case '4': options->connect.family = AF_INET; break;
    case '6': options->connect.family = AF_INET6; break;
    case 'd': flags->no_stdin = true; break;
    case 'k': options->keep_listening = true; break;
    case 'l': options->listen = true; break;
    case 'N': break;          /* the default, see above */
    case 'U': flags->unix_socket = true; break;
    case 'u': flags->udp = true; break;
    case 'v': flags->verbose = true; break;
    case 'z': flags->zero_io = true; break;
    case 'q':
      if (!parse_int ("quit timer", optarg, INT_MIN, &seconds))
        return 1;
      options->relay.bound_eof_wait = seconds >= 0;
      options->relay.eof_wait = seconds >= 0 ? (unsigned) seconds : 0;
      break;
    case 'w':
      if (!parse_int ("timeout", optarg, 0, &seconds))
        return 1;
      options->connect.timeout = options->relay.idle_timeout = (unsigned) seconds;
      break;
    case 'h':
      fputs ("ferry " PACKAGE_VERSION " as nc (the netcat-openbsd options tunnels use)\n",
             stderr);
      return usage ();
    case ':':
      ferry_error ("option requires an argument -- '%c'", optopt);
      return usage ();
    default:
      ferry_error ("invalid option -- '%c'", optopt);
      return usage ();
    }
  }
  return -1;
}

/* -d: nothing is read, so nothing ends: the socket is not half-closed. */
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
  options->relay.bound_eof_wait = false;
  return true;
}

int
compat_nc_main (int argc, char **argv)
{
  struct ferry_options options;
  struct nc_flags flags = { 0 };
  g_autofree char *address = NULL;
  const char *host = NULL, *port = NULL;
  int rc;

  g_set_prgname ("nc");
  ferry_options_init (&options);
  if ((rc = parse_flags (argc, argv, &options, &flags)) >= 0)
    return rc;
  argc -= optind;
  argv += optind;

  if (options.keep_listening && !options.listen) {
    ferry_error ("must use -l with -k");
    return 1;
  }
  if (flags.udp && (flags.zero_io || flags.unix_socket)) {
    ferry_error ("%s is not supported by ferry's nc", flags.zero_io ? "-z -u" : "-U -u");
    return 1;
  }
  if (flags.unix_socket) {
    if (argc != 1)
      return argc == 2 ? (ferry_error ("cannot use port with -U"), 1) : usage ();
    address = g_strconcat ("unix:", argv[0], NULL);
  } else {
    if (argc == 2) {
      host = argv[0];
      port = argv[1];
    } else if (argc == 1 && options.listen) {
      host = options.connect.family == AF_INET6 ? "::" : "0.0.0.0";
      port = argv[0];
    } else {
      return usage ();
    }
    address = address_tcp_text (host, port);
  }
  options.address = address;
  options.relay.verbose = flags.verbose && !flags.zero_io;
  /* netcat-openbsd 1.219 ends a listening relay at the client's EOF; as a
   * client it keeps sending stdin after the network's EOF. */
  options.relay.remote_eof_ends_local = options.listen;

  if (flags.udp)
    return compat_exit_code (compat_nc_udp (&options, host, port, !flags.no_stdin));

  if (flags.zero_io && !options.listen)
    return scan (&options, flags.unix_socket ? NULL : host, port, flags.verbose);
  if (flags.no_stdin && !stdin_from_dev_null (&options))
    return 1;
  return compat_exit_code (ferry_run (&options));
}
