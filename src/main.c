/* ferry: command line. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "error.h"
#include "message.h"
#include "options.h"
#include "virt-uri.h"

static const char description[] =
  "ADDRESS forms:\n"
  "  unix:PATH, or a PATH containing '/'   UNIX socket\n"
  "  unix:@NAME, @NAME                      abstract UNIX socket\n"
  "  tcp:HOST:PORT, HOST:PORT, [V6]:PORT    TCP (TCP_NODELAY always on)\n"
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
  "  socket EOF: deliver what was read to stdout, then close stdout; stop\n"
  "              reading stdin but still deliver stdin bytes already read.\n"
  "  ferry exits once both directions are finished.  Bytes that cannot be\n"
  "  delivered are counted in a message, and the exit code says so.\n"
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
  "Exit codes:\n"
  "  0 success, 1 any failure (nc and virt-ssh-helper only),\n"
  "  2 usage error, 3 cannot connect or listen,\n"
  "  4 I/O failure during the relay, 5 idle timeout,\n"
  "  6 NBD protocol violation (--nbd),\n"
  "  7 ssh host key unknown or changed, 8 ssh authentication failed,\n"
  "  129 SIGHUP, 130 SIGINT, 131 SIGQUIT, 143 SIGTERM (bytes were lost).\n"
  "  In ssh exec mode a remote helper's non-zero\n"
  "  exit status becomes ferry's.\n";

/* --buffer-size, --sndbuf, --rcvbuf: @data is the group's, the options. */
static gboolean
parse_size (const char *name, const char *value, gpointer data, GError **error)
{
  struct ferry_options *options = data;
  size_t *out = g_str_equal (name, "--sndbuf") ? &options->connect.sndbuf
              : g_str_equal (name, "--rcvbuf") ? &options->connect.rcvbuf
              : &options->relay.buffer_size;
  char *end;
  guint64 n = g_ascii_strtoull (value, &end, 10);
  guint64 scale = 1;

  switch (g_ascii_toupper (*end)) {
  case 'K': scale = 1024; end++; break;
  case 'M': scale = 1024 * 1024; end++; break;
  case 'G': scale = 1024 * 1024 * 1024; end++; break;
  }
  if (end == value || *end != '\0' || n == 0 || n > (1ull << 30) / scale) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "invalid %s '%s': expected 1 to 1G bytes, e.g. 65536, 64K or 1M",
                 name, value);
    return FALSE;
  }
  *out = n * scale;
  return TRUE;
}

/* --keepalive SECS: TCP keepalive probes after SECS idle, then every SECS;
 * ssh:// sessions also send an ssh keepalive every SECS.  Either way three
 * unanswered ones end the connection.  (An optional argument would swallow
 * the ADDRESS that follows.) */
static gboolean
parse_keepalive (const char *name, const char *value, gpointer data, GError **error)
{
  struct connect_options *connect = &((struct ferry_options *) data)->connect;
  char *end;
  guint64 n = g_ascii_strtoull (value, &end, 10);

  (void) name;
  if (end == value || *end != '\0' || n == 0 || n > 86400) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "invalid --keepalive '%s': expected seconds between keepalives, 1-86400",
                 value);
    return FALSE;
  }
  connect->keepalive = (unsigned) n;
  return TRUE;
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

static bool
parse_count (const char *option, int value, const char *unit, unsigned *out,
             GError **error)
{
  if (value < 0) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "invalid %s '%d': expected a number of %s >= 0", option, value, unit);
    return false;
  }
  *out = (unsigned) value;
  return true;
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
  struct ferry_options options;
  gboolean listen = FALSE, keep = FALSE, no_shutdown = FALSE, ask_password = FALSE;
  gboolean verbose = FALSE, version = FALSE, no_splice = FALSE, readonly = FALSE;
  gboolean nbd = FALSE, nbd_readonly = FALSE;
  int stats_interval = 0, greeting_timeout = FERRY_DEFAULT_NBD_GREETING_TIMEOUT;
  /* Strings that GOptionContext allocates, and the activation fds' names,
   * freed on every way out. */
  g_autofree char *stats_file = NULL;
  g_autofree char *remote_helper = NULL;
  g_autoptr (FerrySocketActivation) activation = NULL;
  int idle_timeout = 0, connect_timeout = 0;
  int max_connections = 0, exit_idle_time = 0;
  int drain_timeout = FERRY_DEFAULT_DRAIN_TIMEOUT;
  bool activated;
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) context = NULL;

  reserve_stdio_fds ();
  setlocale (LC_ALL, "");
  g_autofree char *base = g_path_get_basename (argv[0]);
  const struct personality *personality = find_personality (base);
  if (personality)
    return personality->main (argc, argv);
  g_set_prgname ("ferry");
  if (argc >= 2 && g_str_has_prefix (argv[1], "--compat=")) {
    personality = find_personality (argv[1] + strlen ("--compat="));
    if (personality == NULL) {
      ferry_error ("unknown %s: expected --compat=nc or --compat=virt-ssh-helper", argv[1]);
      return FERRY_EXIT_USAGE;
    }
    /* The personality sees its own name as argv[0]. */
    argv[1] = (char *) personality->name;
    return personality->main (argc - 1, argv + 1);
  }
  ferry_options_init (&options);

  GOptionEntry entries[] = {
    { "listen", 'l', 0, G_OPTION_ARG_NONE, &listen,
      "Listen on ADDRESS and relay a connection with stdio", NULL },
    { "keep-open", 'k', 0, G_OPTION_ARG_NONE, &keep,
      "With -l, accept another connection after each one", NULL },
    { "buffer-size", 'b', 0, G_OPTION_ARG_CALLBACK, parse_size,
      "Fixed buffer per direction (default 1M)", "BYTES" },
    { "no-splice", 0, 0, G_OPTION_ARG_NONE, &no_splice,
      "Copy through memory instead of splice(2) (also FERRY_NO_SPLICE=1)", NULL },
    { "sndbuf", 0, 0, G_OPTION_ARG_CALLBACK, parse_size,
      "SO_SNDBUF for the socket(s) (default: the kernel's for TCP, --buffer-size for UNIX)", "BYTES" },
    { "rcvbuf", 0, 0, G_OPTION_ARG_CALLBACK, parse_size,
      "SO_RCVBUF for the socket(s) (default: the kernel's)", "BYTES" },
    { "no-shutdown", 0, 0, G_OPTION_ARG_NONE, &no_shutdown,
      "Do not half-close the socket after stdin EOF", NULL },
    { "idle-timeout", 0, 0, G_OPTION_ARG_INT, &idle_timeout,
      "End the relay after SECS without traffic (exit 5)", "SECS" },
    { "connect-timeout", 0, 0, G_OPTION_ARG_INT, &connect_timeout,
      "Give up connecting after SECS", "SECS" },
    { "max-connections", 0, 0, G_OPTION_ARG_INT, &max_connections,
      "With a TARGET, relay at most N connections at once; more wait", "N" },
    { "exit-idle-time", 0, 0, G_OPTION_ARG_INT, &exit_idle_time,
      "With a TARGET, exit after SECS without connections", "SECS" },
    { "drain-timeout", 0, 0, G_OPTION_ARG_INT, &drain_timeout,
      "On SIGTERM, SIGINT or SIGHUP, give the live relays SECS to deliver (default 10)",
      "SECS" },
    { "keepalive", 0, 0, G_OPTION_ARG_CALLBACK, parse_keepalive,
      "Probe an idle peer every SECS (TCP keepalive; ssh keepalive on ssh://); "
      "3 unanswered end the connection", "SECS" },
    { "remote-helper", 0, 0, G_OPTION_ARG_STRING, &remote_helper,
      "ssh:// exec mode: the program run on the server (default ferry)", "PROGRAM" },
    { "ask-password", 0, 0, G_OPTION_ARG_NONE, &ask_password,
      "ssh://: also try password and keyboard-interactive authentication, "
      "prompting on the terminal", NULL },
    { "readonly", 'r', 0, G_OPTION_ARG_NONE, &readonly,
      "With a libvirt URI ADDRESS: the daemon's read-only socket", NULL },
    { "nbd", 0, 0, G_OPTION_ARG_NONE, &nbd,
      "Parse the traffic as NBD: check it, count it (exit 6 on a violation)", NULL },
    { "nbd-readonly", 0, 0, G_OPTION_ARG_NONE, &nbd_readonly,
      "Like --nbd, and refuse writes (EPERM); the export shows read-only", NULL },
    { "stats-interval", 0, 0, G_OPTION_ARG_INT, &stats_interval,
      "With --nbd, print stats every SECS too, not only at the end", "SECS" },
    { "stats-file", 0, 0, G_OPTION_ARG_FILENAME, &stats_file,
      "With --nbd, append stats to FILE instead of stderr", "FILE" },
    { "nbd-greeting-timeout", 0, 0, G_OPTION_ARG_INT, &greeting_timeout,
      "With --nbd, give up if the server has not greeted in SECS (default 30; 0: never)",
      "SECS" },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose,
      "Print statistics for each direction at exit", NULL },
    { "version", 'V', 0, G_OPTION_ARG_NONE, &version,
      "Print the version and exit", NULL },
    { NULL },
  };

  context = g_option_context_new ("ADDRESS | -l LISTEN [TARGET] - relay stdin/stdout "
                                  "(or accepted connections) to a socket, losing nothing");
  g_option_context_set_description (context, description);
  /* Option callbacks receive the group's data: the options they set. */
  GOptionGroup *group = g_option_group_new ("ferry", "ferry options", "ferry options",
                                            &options, NULL);
  g_option_group_add_entries (group, entries);
  g_option_context_set_main_group (context, group);

  if (!g_option_context_parse (context, &argc, &argv, &error)) {
    ferry_error ("%s", error->message);
    return FERRY_EXIT_USAGE;
  }
  if (version) {
    printf ("ferry %s\n", PACKAGE_VERSION);
    return FERRY_EXIT_OK;
  }
  activation = &options.activation;
  if (!socket_activation_take (activation, &error)) {
    ferry_error ("%s", error->message);
    return FERRY_EXIT_USAGE;
  }
  activated = options.activation.n_fds > 0;
  if (argc < 2) {
    ferry_error ("missing ADDRESS (see --help)");
    return FERRY_EXIT_USAGE;
  }
  if (activated && (listen || argc > 2)) {
    ferry_error ("socket-activated (LISTEN_FDS=%d): expected 'ferry [OPTIONS] TARGET', "
                 "without -l", options.activation.n_fds);
    return FERRY_EXIT_USAGE;
  }
  if (argc > 3 || (argc > 2 && !listen)) {
    ferry_error ("unexpected argument '%s': expected ADDRESS, or -l LISTEN [TARGET] "
                 "(see --help)", argv[listen ? 3 : 2]);
    return FERRY_EXIT_USAGE;
  }
  if (!parse_count ("--idle-timeout", idle_timeout, "seconds",
                    &options.relay.idle_timeout, &error) ||
      !parse_count ("--connect-timeout", connect_timeout, "seconds",
                    &options.connect.timeout, &error) ||
      !parse_count ("--max-connections", max_connections, "connections",
                    &options.max_connections, &error) ||
      !parse_count ("--exit-idle-time", exit_idle_time, "seconds",
                    &options.exit_idle_time, &error) ||
      !parse_count ("--stats-interval", stats_interval, "seconds",
                    &options.relay.nbd.stats_interval, &error) ||
      !parse_count ("--nbd-greeting-timeout", greeting_timeout, "seconds",
                    &options.relay.nbd.greeting_timeout, &error) ||
      !parse_count ("--drain-timeout", drain_timeout, "seconds",
                    &options.drain_timeout, &error)) {
    ferry_error ("%s", error->message);
    return FERRY_EXIT_USAGE;
  }
  if (keep && !listen && !activated) {
    ferry_error ("-k/--keep-open needs -l/--listen");
    return FERRY_EXIT_USAGE;
  }

  if (activated) {
    options.listen = true;
    options.target = argv[1];
  } else {
    options.address = argv[1];
    options.listen = listen;
    options.target = argc > 2 ? argv[2] : NULL;
  }
  /* -r picks a libvirt daemon's socket: the address ferry connects to. */
  const char *connects_to = options.target ? options.target : options.address;
  if (readonly && !virt_uri_matches (connects_to)) {
    ferry_error ("-r/--readonly needs a libvirt URI ADDRESS, not '%s'", connects_to);
    return FERRY_EXIT_USAGE;
  }
  if (options.target == NULL && (max_connections || exit_idle_time)) {
    ferry_error ("--max-connections and --exit-idle-time need "
                 "-l LISTEN TARGET (or socket activation)");
    return FERRY_EXIT_USAGE;
  }
  options.keep_listening = keep;
  options.relay.half_close = !no_shutdown;
  if (no_splice)
    options.relay.splice = false;
  options.relay.verbose = verbose;
  options.relay.nbd.enabled = nbd || nbd_readonly;
  options.relay.nbd.readonly = nbd_readonly;
  options.relay.nbd.stats_file = stats_file;
  if (!options.relay.nbd.enabled && (stats_interval || stats_file)) {
    ferry_error ("--stats-interval and --stats-file need --nbd");
    return FERRY_EXIT_USAGE;
  }
  options.readonly = readonly;
  options.connect.ask_password = ask_password;
  options.connect.remote_helper = remote_helper;
  return ferry_run (&options);
}
