/* ferry: the command line.  parse_argv() reads it into struct command_line
 * through one table of options, validate() gives every usage error that
 * involves more than one option or argument, and main() runs the result.
 * The compat personalities (compat-*.c) parse their own command lines.
 *
 * Adding an option is one entry in option_table below: its names, its
 * --help group, a parse_* function for its kind of value and the field of
 * struct ferry_options that it sets (FIELD), then a line in doc/ferry.1.
 * A rule between options goes into validate(). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"
#include "compat.h"
#include "copy.h"
#include "error.h"
#include "message.h"
#include "nbd-remote.h"
#include "nbd-stream.h"
#include "proxy.h"
#include "range-messages.h"
#include "run.h"
#include "stats.h"
#include "suggest.h"
#include "virt-uri.h"

/* ferry --help: the forms, the common options and examples; the rest is
 * in --help-all (the option table's groups and @description below) and in
 * the man page. */
static const char short_help[] =
  "Usage:\n"
  "  ferry [OPTION...] ADDRESS            relay stdin/stdout to a socket\n"
  "  ferry [OPTION...] HOST PORT          the same, TCP (ProxyCommand ferry %h %p)\n"
  "  ferry [OPTION...] -l LISTEN          accept a connection, relay it with stdio\n"
  "  ferry [OPTION...] -l LISTEN TARGET   forward each connection to TARGET\n"
  "  ferry --nbd [OPTION...] ADDRESS      relay NBD, checked and counted\n"
  "  ferry --nbd-send=SRC > STREAM        an image as a sparse, verified stream\n"
  "  ferry --nbd-receive=DST < STREAM     write a stream into an image\n"
  "  ferry --nbd-send=SRC --remote-nbd-receive=DST ssh://[USER@]HOST  (and back)\n"
  "  ferry --nbd-digest=IMAGE             an image's block-hash digest\n"
  "  ferry copy SRC DST                   copy a disk image, sparse and verified\n"
  "  ferry copy SRC [USER@]HOST:DST       ... to another host, over ssh\n"
  "  ferry copy [USER@]HOST:SRC DST       ... from another host\n"
  "  ferry digest IMAGE...                each image's digest, as sha256sum prints\n"
  "  ferry --compat=nc ARGS...            netcat-openbsd's command line\n"
  "  ferry --compat=virt-ssh-helper [-r] URI   libvirt's virt-ssh-helper\n"
  "ADDRESS: unix:PATH, @NAME, HOST:PORT, fd:N, ssh://[USER@]HOST[:PORT]/PATH,\n"
  "  qemu:///system, ...; an image: a file, a block device, an NBD URI.\n"
  "\n"
  "Common options:\n"
  "  -l, --listen       listen on the first address (-k: accept again after each)\n"
  "  -v, --verbose      a summary at exit; -vv also a line per connection, range\n"
  "  -q, --quiet        print nothing but errors\n"
  "  --progress=WHEN    a live progress line: auto (on a terminal), always, never\n"
  "  --streams=N        a remote copy's ssh channels at once (default 4)\n"
  "\n"
  "Examples:\n"
  "  ProxyCommand ferry %h %p                   in ~/.ssh/config\n"
  "  ferry -l -k unix:/run/db.sock db1:5432     forward a UNIX socket to TCP\n"
  "  ferry ssh://root@kvm1/run/libvirt/libvirt-sock   a socket on another host\n"
  "  ferry copy vm1.qcow2 /dev/vg/vm1           an image onto a block device\n"
  "  ferry copy -v vm1.img backup@nas:/srv/     upload over ssh, 4 channels\n"
  "  ferry digest vm1.img /dev/vg/vm1           compare two images\n"
  "\n"
  "More: ferry --help-all (every option, the ADDRESS forms, end of stream,\n"
  "  signals, exit codes); one group: --help-relay, --help-forward, --help-ssh,\n"
  "  --help-nbd, --help-nbd-stream; ferry copy --help; man ferry.\n";

static const char description[] =
  "Disk images (ferry copy --help, ferry digest --help):\n"
  "  ferry copy SRC DST        copy an image, sparse and verified; SRC and DST\n"
  "                            are a PATH (a file or a block device, raw or\n"
  "                            qcow2, ...), [USER@]HOST:PATH, ssh://[USER@]HOST\n"
  "                            [:PORT]/PATH, an NBD URI or '[ CMD ARGS... ]'\n"
  "  ferry digest IMAGE...     each image's block-hash digest, as sha256sum\n"
  "\n"
  "ADDRESS forms:\n"
  "  unix:PATH, or a PATH containing '/'   UNIX socket\n"
  "  unix:@NAME, @NAME                      abstract UNIX socket\n"
  "  tcp:HOST:PORT, HOST:PORT, [V6]:PORT    TCP (TCP_NODELAY always on)\n"
  "  HOST PORT (two arguments, without -l)  TCP, as ssh's ProxyCommand gives\n"
  "                                         them: ProxyCommand ferry %h %p\n"
  "  fd:N                                   inherited connected socket\n"
  "  ssh://[USER@]HOST[:PORT]/ABS/PATH      UNIX socket on HOST, over ssh\n"
  "  ssh://[USER@]HOST[:PORT]?tcp=RHOST:RPORT   TCP port seen from HOST, over ssh\n"
  "    parameters (&-separated): proxy=auto|direct|exec, keyfile=FILE,\n"
  "    known_hosts=FILE, known_hosts_verify=normal|auto|ignore\n"
  "  DRIVER:///system, DRIVER:///session    libvirt daemon socket, as libvirt\n"
  "     [?socket=PATH][&mode=auto|legacy|direct]   resolves it (see -r)\n"
  "\n"
  "Other programs' command lines (also when run through a link of that name):\n"
  "  ferry --compat=nc ARGS...                netcat-openbsd's tunnel options\n"
  "  ferry --compat=virt-ssh-helper [-r] URI  libvirt's virt-ssh-helper\n"
  "  (--compat must come first.)  These exit with 0 or 1 only.\n"
  "\n"
  "End of stream (nothing that was read is ever dropped silently):\n"
  "  stdin EOF:  deliver what was read, then shutdown(SHUT_WR) the socket\n"
  "              (not with --no-shutdown); keep relaying socket -> stdout.\n"
  "  socket EOF: deliver what was read to stdout, then close stdout; keep\n"
  "              relaying stdin -> socket until stdin EOF (a half-close).\n"
  "  peer gone:  (UNIX HUP, EPIPE/ECONNRESET, ssh channel closed) stop\n"
  "              reading stdin at once; exit 4 if read bytes are undelivered.\n"
  "  A TCP peer that closed while stdin is idle looks half-closed until ferry\n"
  "  writes: ferry waits for stdin EOF, or --half-close-timeout SECS of idle.\n"
  "  ferry exits once both directions are finished.  Bytes that cannot be\n"
  "  delivered are counted in a message, and the exit code says so; a reader\n"
  "  that goes away with nothing left for it (head -c) is no error.\n"
  "\n"
  "Listen and forward (ferry -l LISTEN TARGET):\n"
  "  each accepted connection is relayed to its own new connection to TARGET,\n"
  "  with its own buffers and the rules above.  One connection's failure ends\n"
  "  that connection alone.  Without -k ferry exits after the first connection\n"
  "  with its exit code; with -k it keeps accepting.\n"
  "\n"
  "Signals: SIGTERM, SIGINT or SIGHUP stops reading (and accepting) and\n"
  "  delivers what is buffered for up to --drain-timeout; exit 0 if every\n"
  "  byte read was delivered, else one line with the count and 128+signal\n"
  "  (143, 130, 129).  A second signal, or SIGQUIT (131), gives up at once\n"
  "  with the count.  SIGUSR1 prints each live relay's statistics.\n"
  "  --nbd-receive: the writes in flight end, every connection is flushed,\n"
  "  and one line says how far DEST is complete; --nbd-send ends its stream\n"
  "  with a STOP record (which stops its receiver too) and says how far it\n"
  "  sent; both exit 128+signal.  A second signal, or SIGQUIT, at once.\n"
  "  --remote-nbd-send/--remote-nbd-receive pass the signal on to both halves\n"
  "  and exit 128+signal once they have ended (a second one cuts at once).\n"
  "\n"
  "Socket activation (systemd, or nbdcopy/nbdinfo '[ CMD ]'):\n"
  "  when LISTEN_PID is ferry's pid, 'ferry [OPTIONS] TARGET' accepts on the\n"
  "  passed fds (3, 4, ...) and forwards as above.\n"
  "\n"
  "NBD (--nbd): both directions are parsed as NBD and relayed unchanged; a\n"
  "  protocol violation (wrong magic, oversize option or payload, unknown or\n"
  "  reused cookie, ...) ends the relay with one line and exit code 6.\n"
  "  --nbd-readonly marks the export read-only and answers WRITE, TRIM and\n"
  "  WRITE_ZEROES itself with EPERM.  Per-command stats (key=value) go to\n"
  "  stderr (or --stats-file) at the end and every --stats-interval SECS.\n"
  "\n"
  "NBD stream (doc/nbd-stream.md):\n"
  "  ferry --nbd-send=SRC | ssh HOST ferry --nbd-receive=DST   copy an export\n"
  "  ferry --nbd-send=SRC --remote-nbd-receive=DST ssh://[USER@]HOST[:PORT]\n"
  "  ferry --nbd-receive=DST --remote-nbd-send=SRC ssh://...   the same in one\n"
  "    command (upload, download), the remote half run by --remote-helper;\n"
  "    --streams=N (default 4) copies ranges of the image over N ssh channels at once\n"
  "  ferry --nbd-send=SRC > disk.stream    sparse backup; restore with\n"
  "  ferry --nbd-receive=DST < disk.stream; ferry --nbd-digest=IMAGE checks it.\n"
  "  SRC/DST: an NBD URI (nbd://, nbd+unix://, nbds://...), '[ CMD ARGS... ]',\n"
  "  or a local file or block device (read and written with no NBD server).\n"
  "\n"
  "Exit codes:\n"
  "  0 success, 1 any failure (nc and virt-ssh-helper only),\n"
  "  2 usage error, 3 cannot connect or listen,\n"
  "  4 I/O failure during the relay, 5 idle timeout,\n"
  "  6 NBD protocol violation (--nbd),\n"
  "  20 an NBD command failed or the server went away, 21 damaged or\n"
  "  truncated stream, 22 digest mismatch, 23 destination too small\n"
  "  (--nbd-send, --nbd-receive, --nbd-digest),\n"
  "  24 the remote half could not run, 30 to 33 it failed as 3 or 20, 21 to 23\n"
  "  (--remote-nbd-send, --remote-nbd-receive),\n"
  "  7 ssh host key unknown or changed, 8 ssh authentication failed,\n"
  "  129 SIGHUP, 130 SIGINT, 131 SIGQUIT, 143 SIGTERM (bytes were lost,\n"
  "  or a stream mode's copy was stopped).\n"
  "  In ssh exec mode a remote helper's non-zero\n"
  "  exit status becomes ferry's.\n";

/* At most this many entries in option_table (one option group's entries). */
#define MAX_OPTIONS 128

/* --help's sections: --help-NAME shows one, --help-all every one. */
enum option_group {
  GROUP_MAIN, GROUP_RELAY, GROUP_FORWARD, GROUP_SSH, GROUP_NBD, GROUP_STREAM, N_GROUPS
};

/* What the command line says, as parse_argv() read it. */
struct command_line {
  const char *image_command;      /* "copy" or "digest" (copy.h); NULL: neither */
  struct ferry_options options;   /* the option table writes here */
  bool version;                   /* -V: print the version, run nothing */
  int verbose;                    /* -v given this many times */
  bool quiet;                     /* -q */
  char **args;                    /* the arguments: ADDRESS, or LISTEN [TARGET] */
  int n_args;
  GPtrArray *strings;             /* owns the string values in @options */
  GOptionContext *context;        /* while parsing: for --help */
  GOptionGroup *groups[N_GROUPS];  /* the context's, by enum option_group */
};

/* Store @value, the text given to option @name, into @field, or fail with a
 * FERRY_EXIT_USAGE error that names both.  @value is NULL for a flag. */
typedef bool option_parse_fn (struct command_line *cli, const char *name,
                              const char *value, void *field, GError **error);

#define usage_error(error, ...) ferry_set_error ((error), FERRY_EXIT_USAGE, __VA_ARGS__)

/* Flags: a bool field. */
static bool
parse_set (struct command_line *cli, const char *name, const char *value,
           void *field, GError **error)
{
  (void) cli, (void) name, (void) value, (void) error;
  *(bool *) field = true;
  return true;
}

/* -v, -vv: an int field, counting. */
static bool
parse_count_up (struct command_line *cli, const char *name, const char *value,
                void *field, GError **error)
{
  (void) cli, (void) name, (void) value, (void) error;
  ++*(int *) field;
  return true;
}

/* --no-X flags: clear the bool field X. */
static bool
parse_clear (struct command_line *cli, const char *name, const char *value,
             void *field, GError **error)
{
  (void) cli, (void) name, (void) value, (void) error;
  *(bool *) field = false;
  return true;
}

/* An unsigned field from an integer >= 0, in @unit; a non-number gets
 * glib's own message, as G_OPTION_ARG_INT would. */
static bool
parse_count (const char *name, const char *value, const char *unit,
             unsigned *out, GError **error)
{
  char *end;
  gint64 n;

  errno = 0;
  n = g_ascii_strtoll (value, &end, 0);
  if (*value == '\0' || *end != '\0')
    return usage_error (error, g_dgettext ("glib20", "Cannot parse integer value “%s” for %s"),
                        value, name);
  if (errno == ERANGE || n < G_MININT || n > G_MAXINT)
    return usage_error (error, g_dgettext ("glib20", "Integer value “%s” for %s out of range"),
                        value, name);
  if (n < 0)
    return usage_error (error, "invalid %s '%d': expected a number of %s >= 0",
                        name, (int) n, unit);
  *out = (unsigned) n;
  return true;
}

static bool
parse_seconds (struct command_line *cli, const char *name, const char *value,
               void *field, GError **error)
{
  (void) cli;
  return parse_count (name, value, "seconds", field, error);
}

static bool
parse_connections (struct command_line *cli, const char *name, const char *value,
                   void *field, GError **error)
{
  (void) cli;
  return parse_count (name, value, "connections", field, error);
}

/* --streams: 1 to NBD_MAX_STREAMS (0 stays "not given"). */
static bool
parse_streams (struct command_line *cli, const char *name, const char *value,
               void *field, GError **error)
{
  unsigned *streams = field;

  (void) cli;
  if (!parse_count (name, value, "streams", streams, error))
    return false;
  if (*streams < 1 || *streams > NBD_MAX_STREAMS)
    return usage_error (error, "invalid %s '%s': expected 1 to %d", name, value,
                        NBD_MAX_STREAMS);
  return true;
}

/* A size_t field from 1 to 1G bytes, with an optional K, M or G. */
static bool
parse_size (struct command_line *cli, const char *name, const char *value,
            void *field, GError **error)
{
  char *end;
  guint64 n = g_ascii_strtoull (value, &end, 10);
  guint64 scale = 1;

  (void) cli;
  switch (g_ascii_toupper (*end)) {
  case 'K': scale = 1024; end++; break;
  case 'M': scale = 1024 * 1024; end++; break;
  case 'G': scale = 1024 * 1024 * 1024; end++; break;
  }
  if (end == value || *end != '\0' || n == 0 || n > (1ull << 30) / scale)
    return usage_error (error, "invalid %s '%s': expected 1 to 1G bytes, e.g. 65536, 64K or 1M",
                        name, value);
  *(size_t *) field = n * scale;
  return true;
}

/* An image's size in bytes: any, up to 2^63 - 1. */
static bool
parse_image_size (struct command_line *cli, const char *name, const char *value,
                  void *field, GError **error)
{
  guint64 n;

  (void) cli;
  if (!g_ascii_string_to_unsigned (value, 10, 1, G_MAXINT64, &n, NULL))
    return usage_error (error, "invalid %s '%s': expected a size in bytes", name, value);
  *(uint64_t *) field = n;
  return true;
}

/* --keepalive SECS: TCP keepalive probes after SECS idle, then every SECS;
 * ssh:// sessions also send an ssh keepalive every SECS (by default
 * FERRY_DEFAULT_SSH_KEEPALIVE).  Either way three unanswered ones end the
 * connection; 0 sends none.  (An optional argument would swallow the
 * ADDRESS that follows.) */
static bool
parse_keepalive (struct command_line *cli, const char *name, const char *value,
                 void *field, GError **error)
{
  char *end;
  guint64 n = g_ascii_strtoull (value, &end, 10);

  (void) name;
  if (end == value || *end != '\0' || n > 86400)
    return usage_error (error, "invalid --keepalive '%s': expected seconds between "
                        "keepalives, 0-86400 (0: none)", value);
  *(unsigned *) field = (unsigned) n;
  cli->options.connect.keepalive_given = true;
  return true;
}

/* A const char * field; the command line owns the copy. */
static bool
parse_string (struct command_line *cli, const char *name, const char *value,
              void *field, GError **error)
{
  char *copy = g_strdup (value);

  (void) name, (void) error;
  g_ptr_array_add (cli->strings, copy);
  *(const char **) field = copy;
  return true;
}

/* Like parse_string, for a file name: its bytes as given, not converted to
 * UTF-8 (G_OPTION_FLAG_FILENAME). */
static bool
parse_filename (struct command_line *cli, const char *name, const char *value,
                void *field, GError **error)
{
  return parse_string (cli, name, value, field, error);
}

/* --proxy URL: parsed at once, so that a malformed one is a usage error;
 * the last one given wins.  main() frees it. */
static bool
parse_proxy (struct command_line *cli, const char *name, const char *value,
             void *field, GError **error)
{
  struct proxy *proxy = proxy_parse (value, error);

  (void) cli, (void) name;
  if (proxy == NULL)
    return false;
  proxy_free (*(struct proxy **) field);
  *(struct proxy **) field = proxy;
  return true;
}

/* --progress[=auto|always|never|fd:N] */
static bool
parse_progress (struct command_line *cli, const char *name, const char *value,
                void *field, GError **error)
{
  (void) cli, (void) name;
  return progress_spec_parse (value, field, error);
}

/* --stats=json[:FILE]: stats.c keeps it, as message.c the verbosity.
 * @field is unused. */
static bool
parse_stats (struct command_line *cli, const char *name, const char *value,
             void *field, GError **error)
{
  (void) cli, (void) name, (void) field;
  return ferry_stats_parse (value, error);
}

/* GOption would take the ADDRESS after a bare --progress as its optional
 * WHEN: spell the default out instead, so WHEN comes only after '='. */
static void
spell_out_bare_progress (int argc, char **argv)
{
  for (int i = 1; i < argc && strcmp (argv[i], "--") != 0; i++)
    if (strcmp (argv[i], "--progress") == 0)
      argv[i] = (char *) "--progress=auto";
}

static const struct {
  const char *name, *title, *help;
} groups[N_GROUPS] = {
  [GROUP_RELAY] = { "relay", "Relay options:", "Show relay options" },
  [GROUP_FORWARD] = { "forward", "Listen and forward options (-l LISTEN TARGET):",
                      "Show listen and forward options" },
  [GROUP_SSH] = { "ssh", "ssh options (ssh:// addresses):", "Show ssh options" },
  [GROUP_NBD] = { "nbd", "NBD options:", "Show NBD options" },
  [GROUP_STREAM] = { "nbd-stream", "NBD stream options (doc/nbd-stream.md):",
                     "Show NBD stream options" },
};

static option_parse_fn parse_help;

#define FIELD(member) offsetof (struct command_line, member)

static const struct option {
  const char *long_name;
  char short_name;
  enum option_group group;
  option_parse_fn *parse;
  size_t field;               /* FIELD (options.x): where parse stores the value */
  const char *arg;            /* the value's name in --help; NULL for a flag */
  const char *help;           /* NULL: an option between ferry's own halves
                                 (the remote copy's), hidden from --help */
} option_table[] = {
  { "listen", 'l', GROUP_MAIN, parse_set, FIELD (options.listen), NULL,
    "Listen on ADDRESS and relay a connection with stdio" },
  { "keep-open", 'k', GROUP_MAIN, parse_set, FIELD (options.keep_listening), NULL,
    "With -l, accept another connection after each one" },
  { "readonly", 'r', GROUP_MAIN, parse_set, FIELD (options.readonly), NULL,
    "With a libvirt URI ADDRESS: the daemon's read-only socket" },
  { "quiet", 'q', GROUP_MAIN, parse_set, FIELD (quiet), NULL,
    "Print nothing but errors: no progress line, summary or notice" },
  { "verbose", 'v', GROUP_MAIN, parse_count_up, FIELD (verbose), NULL,
    "Print a summary at exit (statistics for each direction); -vv also a line "
    "per connection, channel and range" },
  { "stats", 0, GROUP_MAIN, parse_stats, FIELD (version), "json[:FILE]",
    "At the end, write -v's counts and the exit code as one JSON object on a line "
    "of stderr, or of FILE (created or truncated); also with -q" },
  { "version", 'V', GROUP_MAIN, parse_set, FIELD (version), NULL,
    "Print the version and exit" },
  /* glib's own help is off (parse_argv): these print it. */
  { "help", 'h', GROUP_MAIN, parse_help, FIELD (version), NULL,
    "Show a short help: the forms, common options, examples" },
  { "help-all", 0, GROUP_MAIN, parse_help, FIELD (version), NULL,
    "Show every option, and the reference" },
  { "help-relay", 0, GROUP_MAIN, parse_help, FIELD (version), NULL, "Show relay options" },
  { "help-forward", 0, GROUP_MAIN, parse_help, FIELD (version), NULL,
    "Show listen and forward options" },
  { "help-ssh", 0, GROUP_MAIN, parse_help, FIELD (version), NULL, "Show ssh options" },
  { "help-nbd", 0, GROUP_MAIN, parse_help, FIELD (version), NULL, "Show NBD options" },
  { "help-nbd-stream", 0, GROUP_MAIN, parse_help, FIELD (version), NULL,
    "Show NBD stream options" },

  { "buffer-size", 'b', GROUP_RELAY, parse_size, FIELD (options.relay.buffer_size), "BYTES",
    "Fixed buffer per direction (default 1M)" },
  { "no-splice", 0, GROUP_RELAY, parse_clear, FIELD (options.relay.splice), NULL,
    "Copy through memory instead of splice(2) (also FERRY_NO_SPLICE=1)" },
  { "sndbuf", 0, GROUP_RELAY, parse_size, FIELD (options.connect.sndbuf), "BYTES",
    "SO_SNDBUF for the socket(s) (default: the kernel's for TCP, --buffer-size for UNIX)" },
  { "rcvbuf", 0, GROUP_RELAY, parse_size, FIELD (options.connect.rcvbuf), "BYTES",
    "SO_RCVBUF for the socket(s) (default: the kernel's)" },
  { "no-shutdown", 0, GROUP_RELAY, parse_clear, FIELD (options.relay.half_close), NULL,
    "Do not half-close the socket after stdin EOF" },
  { "idle-timeout", 0, GROUP_RELAY, parse_seconds, FIELD (options.relay.idle_timeout), "SECS",
    "End the relay after SECS without traffic (exit 5)" },
  { "half-close-timeout", 0, GROUP_RELAY, parse_seconds, FIELD (options.relay.half_close_timeout), "SECS",
    "Once one direction has ended, end the other after SECS idle (default: "
    "never; a TCP peer that closed looks half-closed until ferry writes)" },
  { "connect-timeout", 0, GROUP_RELAY, parse_seconds, FIELD (options.connect.timeout), "SECS",
    "Give up connecting after SECS" },
  { "proxy", 0, GROUP_RELAY, parse_proxy, FIELD (options.connect.proxy), "URL",
    "Make TCP connections (and ssh sessions') through a proxy: "
    "http://[USER[:PASS]@]HOST[:PORT] (CONNECT), socks4://[USER@]HOST[:PORT], "
    "socks4a:// or socks5://[USER[:PASS]@]HOST[:PORT] (these two let the proxy "
    "resolve names)" },
  { "progress", 0, GROUP_RELAY, parse_progress, FIELD (options.progress), "WHEN",
    "A live line on stderr: bytes, MiB/s, percent and ETA of a sized stdin or "
    "an NBD stream (WHEN: auto, the default, only on a terminal; always; never; "
    "fd:N, nbdcopy's 'P/100' lines on fd N)" },
  { "drain-timeout", 0, GROUP_RELAY, parse_seconds, FIELD (options.drain_timeout), "SECS",
    "On SIGTERM, SIGINT or SIGHUP, give the live relays SECS to deliver (default 10), "
    "or the remote stream mode's halves SECS to end" },
  { "keepalive", 0, GROUP_RELAY, parse_keepalive, FIELD (options.connect.keepalive), "SECS",
    "Probe an idle peer every SECS (TCP keepalive; ssh keepalive on ssh://, by "
    "default every 15); 3 unanswered end the connection; 0: never" },

  { "max-connections", 0, GROUP_FORWARD, parse_connections, FIELD (options.max_connections),
    "N", "With a TARGET, relay at most N connections at once; more wait" },
  { "exit-idle-time", 0, GROUP_FORWARD, parse_seconds, FIELD (options.exit_idle_time), "SECS",
    "With a TARGET, exit after SECS without connections" },

  { "remote-helper", 0, GROUP_SSH, parse_filename, FIELD (options.connect.remote_helper),
    "PROGRAM", "ssh:// exec mode: the program run on the server (default ferry)" },
  { "ask-password", 0, GROUP_SSH, parse_set, FIELD (options.connect.ask_password), NULL,
    "ssh://: also try password and keyboard-interactive authentication, "
    "prompting on the terminal" },

  { "nbd", 0, GROUP_NBD, parse_set, FIELD (options.relay.nbd.enabled), NULL,
    "Parse the traffic as NBD: check it, count it (exit 6 on a violation)" },
  { "nbd-readonly", 0, GROUP_NBD, parse_set, FIELD (options.relay.nbd.readonly), NULL,
    "Like --nbd, and refuse writes (EPERM); the export shows read-only" },
  { "stats-interval", 0, GROUP_NBD, parse_seconds, FIELD (options.relay.nbd.stats_interval),
    "SECS", "With --nbd, print stats every SECS too, not only at the end" },
  { "stats-file", 0, GROUP_NBD, parse_filename, FIELD (options.relay.nbd.stats_file), "FILE",
    "With --nbd, append stats to FILE instead of stderr" },
  { "nbd-greeting-timeout", 0, GROUP_NBD, parse_seconds,
    FIELD (options.relay.nbd.greeting_timeout), "SECS",
    "With --nbd, give up if the server has not greeted in SECS (default 30; 0: never)" },

  { "nbd-send", 0, GROUP_STREAM, parse_filename, FIELD (options.stream.send), "SOURCE",
    "Write the NBD export SOURCE (a URI, '[ CMD ARGS... ]', or a local file or "
    "block device) to stdout as a sparse, verified stream" },
  { "nbd-receive", 0, GROUP_STREAM, parse_filename, FIELD (options.stream.receive), "DEST",
    "Apply a stream from stdin to the NBD export DEST (a URI, '[ CMD ARGS... ]', or "
    "a local file or block device)" },
  { "remote-nbd-receive", 0, GROUP_STREAM, parse_filename, FIELD (options.stream.remote_receive),
    "DEST", "With --nbd-send and ADDRESS ssh://[USER@]HOST[:PORT]: copy SOURCE to the "
    "export DEST on HOST, applied by the remote ferry (--remote-helper)" },
  { "remote-nbd-send", 0, GROUP_STREAM, parse_filename, FIELD (options.stream.remote_send),
    "SOURCE", "With --nbd-receive and ADDRESS ssh://[USER@]HOST[:PORT]: copy the export "
    "SOURCE on HOST, read by the remote ferry, to DEST" },
  { "streams", 0, GROUP_STREAM, parse_streams, FIELD (options.stream.streams), "N",
    "With --remote-nbd-send/--remote-nbd-receive: N ssh channels at once, each with "
    "its own remote ferry, taking ranges of up to 128 MiB in turn (default 4; 1: one stream); "
    "with a local ferry copy, N receivers here" },
  { "delta", 0, GROUP_STREAM, parse_set, FIELD (options.stream.delta), NULL,
    "With --streams (2 or more): send only the 64 KiB blocks whose digest differs from "
    "the destination's (a resumed or refreshed copy)" },
  { "session-per-stream", 0, GROUP_STREAM, parse_set, FIELD (options.stream.session_per_stream),
    NULL, "With --streams over ssh: each stream logs in on an ssh connection of its own "
    "(with keys; one sshd each on HOST)" },
  { "ranged", 0, GROUP_STREAM, parse_set, FIELD (options.stream.ranged), NULL, NULL },
  { "nbd-digest", 0, GROUP_STREAM, parse_filename, FIELD (options.stream.digest), "IMAGE",
    "Print the block-hash digest (SHA-256, 64 KiB blocks) of an NBD export, a local "
    "file or a block device" },
  { "src-format", 0, GROUP_STREAM, parse_string, FIELD (options.stream.src_format), "FORMAT",
    "A SOURCE path's format: auto (the default: from its header), raw, or one of "
    "qemu's (qcow2, vmdk, vdi, vhdx, vpc, qed), served by qemu-nbd" },
  { "dst-format", 0, GROUP_STREAM, parse_string, FIELD (options.stream.dst_format), "FORMAT",
    "A DEST path's format: raw (the default; never probed) or one of qemu's" },
  { "create-size", 0, GROUP_STREAM, parse_image_size, FIELD (options.stream.create_size),
    "BYTES", NULL },
  { "source-name", 0, GROUP_STREAM, parse_filename, FIELD (options.stream.source_name), "NAME",
    NULL },
  { "check-source", 0, GROUP_STREAM, parse_set, FIELD (options.stream.check_source), NULL,
    "ferry copy: read SRC's digest again at the end, and fail (exit 22) if it is no longer "
    "DST's (SRC was written during the copy)" },
  { "image-name", 0, GROUP_STREAM, parse_filename, FIELD (options.stream.image_name), "NAME",
    "The name that messages and the digest line give the image (default: as given)" },
  { "raw", 0, GROUP_STREAM, parse_set, FIELD (options.stream.raw), NULL,
    "With --nbd-send/--nbd-receive: plain image bytes, as nbdcopy URI - / nbdcopy - URI" },
  { "connections", 0, GROUP_STREAM, parse_connections, FIELD (options.stream.connections),
    "N", "NBD connections when the server allows multi-conn (default and at most 4)" },
  { "no-extents", 0, GROUP_STREAM, parse_set, FIELD (options.stream.no_extents), NULL,
    "Do not ask the source for its allocation map (read everything, scan for zeros)" },
  { "destination-is-zero", 0, GROUP_STREAM, parse_set,
    FIELD (options.stream.destination_is_zero), NULL,
    "--nbd-receive: the destination reads as zeros already; skip ZERO records" },
  { "allocated", 0, GROUP_STREAM, parse_set, FIELD (options.stream.allocated), NULL,
    "--nbd-receive: write zeros allocated (NO_HOLE) instead of punching holes" },
  { "compress", 0, GROUP_STREAM, parse_set, FIELD (options.stream.compress), NULL,
    "With --nbd-send or --remote-nbd-send: compress each data record with zstd where "
    "that shrinks it (for slow links)" },
  { "no-verify", 0, GROUP_STREAM, parse_set, FIELD (options.stream.no_verify), NULL,
    "Leave the digest out of the stream, or do not check it" },
  { "request-size", 0, GROUP_STREAM, parse_size, FIELD (options.stream.request_size), "BYTES",
    "NBD read/write request size (default 2M; within the server's limits)" },
  { "in-flight", 0, GROUP_STREAM, parse_size, FIELD (options.stream.in_flight), "BYTES",
    "Bytes of image data held at most: reads, writes, the hash's backlog (default 32M)" },
};
G_STATIC_ASSERT (G_N_ELEMENTS (option_table) <= MAX_OPTIONS);

static const struct option *
option_named (const char *name)
{
  for (size_t i = 0; i < G_N_ELEMENTS (option_table); i++) {
    const struct option *o = &option_table[i];
    if (g_str_has_prefix (name, "--") ? strcmp (name + 2, o->long_name) == 0
                                      : name[1] == o->short_name)
      return o;
  }
  g_assert_not_reached ();
}

/* -h, --help, --help-all, --help-GROUP: print it on stdout and exit, as
 * glib's own help does (whose -h would print the main group's options and
 * the whole reference, @description).  The image commands' -h is glib's
 * main group, with their usage line.  @field is unused. */
static bool
parse_help (struct command_line *cli, const char *name, const char *value,
            void *field, GError **error)
{
  char *text = NULL;          /* freed before exit(), which no cleanup follows */

  (void) value, (void) field, (void) error;
  if (strcmp (name, "-h") == 0 || strcmp (name, "--help") == 0)
    text = cli->image_command ? g_option_context_get_help (cli->context, TRUE, NULL)
                              : g_strdup (short_help);
  else if (strcmp (name, "--help-all") == 0)
    text = g_option_context_get_help (cli->context, FALSE, NULL);
  for (enum option_group group = GROUP_MAIN + 1; text == NULL && group < N_GROUPS; group++)
    if (strcmp (name + strlen ("--help-"), groups[group].name) == 0)
      text = g_option_context_get_help (cli->context, FALSE, cli->groups[group]);
  g_assert (text);
  fputs (text, stdout);
  g_free (text);
  exit (fflush (stdout) == 0 ? FERRY_EXIT_OK : FERRY_EXIT_FAILURE);
}

/* Every entry's GOptionEntry callback: @name is as typed, "-b" or "--buffer-size". */
static gboolean
on_option (const char *name, const char *value, gpointer data, GError **error)
{
  struct command_line *cli = data;
  const struct option *o = option_named (name);

  return o->parse (cli, name, value, (char *) cli + o->field, error);
}

static GOptionGroup *
option_group_new (struct command_line *cli, enum option_group group)
{
  GOptionEntry entries[MAX_OPTIONS + 1] = { { NULL } };
  size_t n = 0;
  GOptionGroup *g = group == GROUP_MAIN
    ? g_option_group_new ("ferry", "ferry options", "ferry options", cli, NULL)
    : g_option_group_new (groups[group].name, groups[group].title, groups[group].help,
                          cli, NULL);

  for (size_t i = 0; i < G_N_ELEMENTS (option_table); i++) {
    const struct option *o = &option_table[i];
    if (o->group != group)
      continue;
    entries[n++] = (GOptionEntry) {
      .long_name = o->long_name, .short_name = o->short_name,
      .flags = (o->arg ? 0 : G_OPTION_FLAG_NO_ARG)
             | (o->parse == parse_filename ? G_OPTION_FLAG_FILENAME : 0)
             | (o->help ? 0 : G_OPTION_FLAG_HIDDEN),
      .arg = G_OPTION_ARG_CALLBACK, .arg_data = on_option,
      .description = o->help, .arg_description = o->arg,
    };
  }
  g_option_group_add_entries (g, entries);   /* copies @entries */
  return g;
}

/* GLib's "Unknown option --stream=2" gets the long option meant, if one
 * is near: "(did you mean --streams?)". */
static void
suggest_option (GError *error)
{
  const char *given = strrchr (error->message, ' ');
  g_autofree const char **names = g_new (const char *, G_N_ELEMENTS (option_table));
  g_autofree char *word = NULL;
  const char *meant;
  size_t n = 0;
  char *message;

  if (given == NULL || !g_str_has_prefix (given + 1, "--"))
    return;
  word = g_strndup (given + 3, strcspn (given + 3, "="));
  for (size_t i = 0; i < G_N_ELEMENTS (option_table); i++)
    if (option_table[i].long_name && option_table[i].help)
      names[n++] = option_table[i].long_name;
  if ((meant = ferry_suggest (word, names, n)) == NULL)
    return;
  message = g_strdup_printf ("%s (did you mean --%s?)", error->message, meant);
  g_free (error->message);
  error->message = message;
}

/* Fills @cli from the command line, or fails with glib's message or a
 * parse_* function's. */
static bool
parse_argv (struct command_line *cli, int argc, char **argv, GError **error)
{
  g_autoptr (GOptionContext) context = g_option_context_new (
    cli->image_command == NULL
      ? "ADDRESS | HOST PORT | -l LISTEN [TARGET] - relay stdin/stdout (or accepted "
        "connections) to a socket, losing nothing"
      : strcmp (cli->image_command, "copy") == 0
      ? "copy SRC DST - copy a disk image (a file, a block device, qcow2, an NBD URI), "
        "sparse and verified; SRC or DST may be [USER@]HOST:PATH"
      : "digest IMAGE... - print each image's block-hash digest (SHA-256, 64 KiB blocks)");

  g_option_context_set_description (context, description);
  /* The option table has its own -h and --help-* (parse_help). */
  g_option_context_set_help_enabled (context, FALSE);
  cli->context = context;
  g_option_context_set_main_group (context, option_group_new (cli, GROUP_MAIN));
  for (enum option_group group = GROUP_MAIN + 1; group < N_GROUPS; group++) {
    cli->groups[group] = option_group_new (cli, group);
    g_option_context_add_group (context, cli->groups[group]);
  }
  spell_out_bare_progress (argc, argv);
  if (!g_option_context_parse (context, &argc, &argv, error)) {
    if (g_error_matches (*error, G_OPTION_ERROR, G_OPTION_ERROR_UNKNOWN_OPTION))
      suggest_option (*error);
    return false;
  }
  cli->context = NULL;
  /* glib leaves the '--' that ended the options where it was when an
   * argument after it starts with '-': it is no argument. */
  for (int i = 1; i < argc; i++)
    if (strcmp (argv[i], "--") == 0) {
      memmove (&argv[i], &argv[i + 1], (argc - i) * sizeof *argv);
      argc--;
      break;
    }
  cli->args = argv + 1;
  cli->n_args = argc - 1;
  if (cli->quiet && cli->verbose)
    return usage_error (error, "-q/--quiet and -v/--verbose contradict each other");
  if (ferry_stats_enabled () && cli->options.relay.nbd.stats_file)
    return usage_error (error, "--stats-file goes without --stats=json (use --stats=json:FILE)");
  if (!ferry_stats_open (error))
    return false;
  /* The one verbosity level (message.h); the relay's and the stream
   * mode's summaries follow it. */
  ferry_set_verbosity (cli->quiet ? FERRY_QUIET : MIN (cli->verbose, FERRY_DETAIL));
  cli->options.relay.verbose = ferry_verbosity () >= FERRY_VERBOSE;
  return true;
}

/* Every usage error that involves more than one option or argument, then
 * the options that follow from the arguments: where to connect or listen. */
/* The stream modes take no address and none of the relay's roles; their
 * own rules are nbd-stream.c's.  They share -v and --progress. */
static bool
validate_stream (struct command_line *cli, GError **error)
{
  struct ferry_options *options = &cli->options;

  if (nbd_remote_requested (&options->stream)) {
    if (cli->n_args != 1)
      return usage_error (error, "--remote-nbd-send and --remote-nbd-receive take one "
                          "ADDRESS, ssh://[USER@]HOST[:PORT]");
    options->address = cli->args[0];
  } else if (cli->n_args > 0) {
    return usage_error (error, "stream mode takes no ADDRESS: %s", cli->args[0]);
  }
  if (options->listen || options->keep_listening)
    return usage_error (error, "stream mode takes no -l/--listen or -k/--keep-open");
  options->stream.progress = options->progress;
  options->stream.verbose = options->relay.verbose;
  return nbd_stream_validate (&options->stream, error);
}

/* ferry copy and ferry digest spell out the stream mode's options
 * themselves, from their arguments. */
static bool
validate_image_command (struct command_line *cli, GError **error)
{
  struct ferry_options *options = &cli->options;

  if (nbd_stream_requested (&options->stream) || options->stream.ranged)
    return usage_error (error, "ferry %s takes its images as arguments, not --nbd-send, "
                        "--nbd-receive, --remote-nbd-*, --nbd-digest or --ranged",
                        cli->image_command);
  if (options->listen || options->keep_listening)
    return usage_error (error, "ferry %s takes no -l/--listen or -k/--keep-open",
                        cli->image_command);
  if (options->stream.check_source && strcmp (cli->image_command, "copy") != 0)
    return usage_error (error, "--check-source goes with ferry copy");
  if (options->stream.delta && (options->stream.streams == 1 || options->stream.no_verify))
    return usage_error (error, "--delta takes --streams of 2 or more and no --no-verify: its "
                        "ranged streams carry DST's digests");
  if (!nbd_stream_validate_sizes (&options->stream, error))
    return false;
  options->stream.progress = options->progress;
  options->stream.verbose = options->relay.verbose;
  return true;
}

static bool
validate (struct command_line *cli, GError **error)
{
  struct ferry_options *options = &cli->options;
  bool activated, host_port;

  if (options->stream.check_source)
    return usage_error (error, "--check-source goes with ferry copy");
  if (nbd_stream_requested (&options->stream))
    return validate_stream (cli, error);
  if (!socket_activation_take (&options->activation, error))
    return false;
  activated = options->activation.n_fds > 0;
  if (cli->n_args < 1)
    return usage_error (error, "missing ADDRESS");
  if (activated && (options->listen || cli->n_args > 1))
    return usage_error (error, "socket-activated (LISTEN_FDS=%d): expected "
                        "'ferry [OPTIONS] TARGET', without -l", options->activation.n_fds);
  /* HOST PORT, as nc and ssh's ProxyCommand (%h %p) give them; with -l,
   * two arguments are LISTEN TARGET. */
  host_port = !options->listen && cli->n_args >= 2 &&
              address_is_host_port (cli->args[0], cli->args[1]);
  /* netcat's -q SECS: here -q is --quiet, and SECS became the address. */
  bool nc_quit_timer = cli->quiet && cli->args[0][strspn (cli->args[0], "0123456789")] == '\0';
  if (cli->n_args > 2 || (cli->n_args == 2 && !options->listen && !host_port))
    return usage_error (error, "unexpected argument '%s': expected ADDRESS, HOST PORT, "
                        "or -l LISTEN [TARGET]%s",
                        cli->args[options->listen || host_port ? 2 : 1],
                        nc_quit_timer ? " (-q is --quiet; netcat's -q SECS is ferry "
                                        "--compat=nc's)" : "");
  if (options->keep_listening && !options->listen && !activated)
    return usage_error (error, "-k/--keep-open needs -l/--listen");

  if (activated) {
    options->listen = true;
    options->target = cli->args[0];
  } else if (host_port) {
    char *address = address_tcp_text (cli->args[0], cli->args[1]);

    g_ptr_array_add (cli->strings, address);
    options->address = address;
  } else {
    options->address = cli->args[0];
    options->target = cli->n_args > 1 ? cli->args[1] : NULL;
  }
  /* -r picks a libvirt daemon's socket: the address ferry connects to. */
  const char *connects_to = options->target ? options->target : options->address;
  if (options->readonly && !virt_uri_matches (connects_to))
    return usage_error (error, "-r/--readonly needs a libvirt URI ADDRESS, not '%s'",
                        connects_to);
  if (options->target == NULL &&
      (options->max_connections || options->exit_idle_time))
    return usage_error (error, "--max-connections and --exit-idle-time "
                        "need -l LISTEN TARGET (or socket activation)");
  if (options->target && options->progress.mode != PROGRESS_NEVER)
    return usage_error (error, "--progress needs a relay with stdio, not -l LISTEN TARGET");
  if (options->relay.nbd.readonly)
    options->relay.nbd.enabled = true;
  if (!options->relay.nbd.enabled &&
      (options->relay.nbd.stats_interval || options->relay.nbd.stats_file))
    return usage_error (error, "--stats-interval and --stats-file need --nbd");
  return true;
}

static const struct personality {
  const char *name;
  int (*main) (int argc, char **argv);
} personalities[] = {
  { "nc", compat_nc_main },
  { "virt-ssh-helper", compat_virt_ssh_helper_main },
};

static const struct personality *
find_personality (const char *name)
{
  for (size_t i = 0; i < G_N_ELEMENTS (personalities); i++)
    if (strcmp (personalities[i].name, name) == 0)
      return &personalities[i];
  return NULL;
}

/* Run as a link named after a personality, or as "ferry --compat=NAME":
 * returns that personality's exit code, or -1 for ferry's own command line. */
static int
run_personality (int argc, char **argv)
{
  g_autofree char *base = g_path_get_basename (argv[0]);
  const struct personality *personality = find_personality (base);

  if (personality)
    return personality->main (argc, argv);
  if (argc < 2 || !g_str_has_prefix (argv[1], "--compat="))
    return -1;
  g_set_prgname ("ferry");
  personality = find_personality (argv[1] + strlen ("--compat="));
  if (personality == NULL) {
    ferry_error ("unknown %s: expected --compat=nc or --compat=virt-ssh-helper", argv[1]);
    return FERRY_EXIT_USAGE;
  }
  /* The personality sees its own name as argv[0]. */
  argv[1] = (char *) personality->name;
  return personality->main (argc - 1, argv + 1);
}

/* A closed stdin, stdout or stderr would be taken by the next fd ferry
 * opens (its socket, glib's wakeup fd), and ferry would relay out of or
 * into that, or print its messages into the socket.  Occupy each closed
 * one with /dev/null opened the other way round, so that it still fails as
 * a closed fd does (EBADF), which the relay reports. */
static void
reserve_stdio_fds (void)
{
  static const int modes[] = { O_WRONLY, O_RDONLY, O_WRONLY };

  for (int fd = 0; fd < 3; fd++) {
    /* open() takes the lowest free number: this fd. */
    if (fcntl (fd, F_GETFD) < 0 && errno == EBADF)
      open ("/dev/null", modes[fd]);
  }
}

int
main (int argc, char **argv)
{
  struct command_line cli = { .strings = g_ptr_array_new_with_free_func (g_free) };
  g_autoptr (GError) error = NULL;
  int rc;

  reserve_stdio_fds ();
  setlocale (LC_ALL, "");
  rc = run_personality (argc, argv);
  if (rc >= 0)
    return rc;
  g_set_prgname ("ferry");
  ferry_options_init (&cli.options);
  cli.image_command = image_command_take (&argc, argv);
  /* nbdcopy's '[ CMD ARGS... ]': the server's options stay its own. */
  nbd_stream_take_command (&cli.options.stream, &argc, argv);
  if (!parse_argv (&cli, argc, argv, &error)) {
    rc = FERRY_EXIT_USAGE;
  } else if (cli.version) {
    printf ("ferry %s\n", PACKAGE_VERSION);
    rc = FERRY_EXIT_OK;
  } else if (cli.image_command) {
    rc = !validate_image_command (&cli, &error) ? FERRY_EXIT_USAGE
       : strcmp (cli.image_command, "copy") == 0 ? copy_main (&cli.options, cli.args, cli.n_args)
       : digest_main (&cli.options, cli.args, cli.n_args);
  } else if (!validate (&cli, &error)) {
    rc = FERRY_EXIT_USAGE;
  } else if (nbd_remote_requested (&cli.options.stream)) {
    rc = nbd_remote_main (&cli.options);
  } else if (nbd_stream_requested (&cli.options.stream)) {
    rc = nbd_stream_main (&cli.options.stream);
  } else {
    rc = ferry_run (&cli.options);
  }
  /* A usage error is one line, with where to read the usage. */
  if (error && (error->domain == G_OPTION_ERROR || error->code == FERRY_EXIT_USAGE))
    ferry_error ("%s; see 'ferry %s%s--help'", error->message,
                 cli.image_command ? cli.image_command : "", cli.image_command ? " " : "");
  else if (error)
    ferry_error ("%s", error->message);
  /* The one object of --stats=json, with the exit code. */
  ferry_stats_finish (rc);
  socket_activation_clear (&cli.options.activation);
  nbd_stream_options_clear (&cli.options.stream);
  proxy_free (cli.options.connect.proxy);
  g_ptr_array_unref (cli.strings);
  return rc;
}
