/* ferry: command line. */
#include <config.h>

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "message.h"
#include "options.h"

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
  "\n"
  "End of stream (nothing that was read is ever dropped silently):\n"
  "  stdin EOF:  deliver what was read, then shutdown(SHUT_WR) the socket\n"
  "              (not with --no-shutdown); keep relaying socket -> stdout.\n"
  "  socket EOF: deliver what was read to stdout, then close stdout; stop\n"
  "              reading stdin but still deliver stdin bytes already read.\n"
  "  ferry exits once both directions are finished.  Bytes that cannot be\n"
  "  delivered are counted in a message, and the exit code says so.\n"
  "\n"
  "Exit codes:\n"
  "  0 success, 2 usage error, 3 cannot connect or listen,\n"
  "  4 I/O failure during the relay, 5 idle timeout,\n"
  "  7 ssh host key unknown or changed, 8 ssh authentication failed,\n"
  "  130 SIGINT, 143 SIGTERM.  In ssh exec mode a remote helper's non-zero\n"
  "  exit status becomes ferry's.\n";

static gboolean
parse_size (const char *name, const char *value, gpointer data, GError **error)
{
  size_t *out = &((struct ferry_options *) data)->relay.buffer_size;
  char *end;
  guint64 n = g_ascii_strtoull (value, &end, 10);
  guint64 scale = 1;

  (void) name;
  switch (g_ascii_toupper (*end)) {
  case 'K': scale = 1024; end++; break;
  case 'M': scale = 1024 * 1024; end++; break;
  case 'G': scale = 1024 * 1024 * 1024; end++; break;
  }
  if (end == value || *end != '\0' || n == 0 || n > (1ull << 30) / scale) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "invalid buffer size '%s': expected 1 to 1G bytes, e.g. 65536, 64K or 1M",
                 value);
    return FALSE;
  }
  *out = n * scale;
  return TRUE;
}

/* --keepalive alone: SO_KEEPALIVE on TCP; --keepalive=SECS also sends ssh
 * keepalives every SECS seconds on ssh:// sessions. */
static gboolean
parse_keepalive (const char *name, const char *value, gpointer data, GError **error)
{
  struct connect_options *connect = &((struct ferry_options *) data)->connect;
  char *end;
  guint64 n;

  (void) name;
  connect->keepalive = true;
  if (value == NULL)
    return TRUE;
  n = g_ascii_strtoull (value, &end, 10);
  if (end == value || *end != '\0' || n == 0 || n > 86400) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "invalid --keepalive '%s': expected seconds between keepalives, 1-86400",
                 value);
    return FALSE;
  }
  connect->keepalive_interval = (unsigned) n;
  return TRUE;
}

static bool
parse_seconds (const char *option, int value, unsigned *out, GError **error)
{
  if (value < 0) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "invalid %s '%d': expected a number of seconds >= 0", option, value);
    return false;
  }
  *out = (unsigned) value;
  return true;
}

int
main (int argc, char **argv)
{
  struct ferry_options options;
  gboolean listen = FALSE, keep = FALSE, no_shutdown = FALSE, ask_password = FALSE;
  gboolean verbose = FALSE, version = FALSE;
  int idle_timeout = 0, connect_timeout = 0;
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) context = NULL;

  setlocale (LC_ALL, "");
  g_set_prgname ("ferry");
  ferry_options_init (&options);

  GOptionEntry entries[] = {
    { "listen", 'l', 0, G_OPTION_ARG_NONE, &listen,
      "Listen on ADDRESS and relay a connection with stdio", NULL },
    { "keep-open", 'k', 0, G_OPTION_ARG_NONE, &keep,
      "With -l, accept another connection after each one", NULL },
    { "buffer-size", 'b', 0, G_OPTION_ARG_CALLBACK, parse_size,
      "Fixed buffer per direction (default 1M)", "BYTES" },
    { "no-shutdown", 0, 0, G_OPTION_ARG_NONE, &no_shutdown,
      "Do not half-close the socket after stdin EOF", NULL },
    { "idle-timeout", 0, 0, G_OPTION_ARG_INT, &idle_timeout,
      "End the relay after SECS without traffic (exit 5)", "SECS" },
    { "connect-timeout", 0, 0, G_OPTION_ARG_INT, &connect_timeout,
      "Give up connecting after SECS", "SECS" },
    { "keepalive", 0, G_OPTION_FLAG_OPTIONAL_ARG, G_OPTION_ARG_CALLBACK, parse_keepalive,
      "Set SO_KEEPALIVE on TCP connections; with =SECS, also an ssh keepalive "
      "every SECS (3 unanswered end the session)", "SECS" },
    { "remote-helper", 0, 0, G_OPTION_ARG_STRING, &options.connect.remote_helper,
      "ssh:// exec mode: the program run on the server (default ferry)", "PROGRAM" },
    { "ask-password", 0, 0, G_OPTION_ARG_NONE, &ask_password,
      "ssh://: also try password and keyboard-interactive authentication, "
      "prompting on the terminal", NULL },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose,
      "Print statistics for each direction at exit", NULL },
    { "version", 'V', 0, G_OPTION_ARG_NONE, &version,
      "Print the version and exit", NULL },
    { NULL },
  };

  context = g_option_context_new ("ADDRESS - relay stdin/stdout to a socket, losing nothing");
  g_option_context_set_description (context, description);
  /* Option callbacks receive the group's data: the options. */
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
  if (argc < 2) {
    ferry_error ("missing ADDRESS (see --help)");
    return FERRY_EXIT_USAGE;
  }
  if (argc > 2) {
    ferry_error ("unexpected argument '%s': expected one ADDRESS (see --help)", argv[2]);
    return FERRY_EXIT_USAGE;
  }
  if (!parse_seconds ("--idle-timeout", idle_timeout, &options.relay.idle_timeout, &error) ||
      !parse_seconds ("--connect-timeout", connect_timeout, &options.connect.timeout, &error)) {
    ferry_error ("%s", error->message);
    return FERRY_EXIT_USAGE;
  }
  if (keep && !listen) {
    ferry_error ("-k/--keep-open needs -l/--listen");
    return FERRY_EXIT_USAGE;
  }

  options.address = argv[1];
  options.listen = listen;
  options.keep_listening = keep;
  options.relay.half_close = !no_shutdown;
  options.relay.verbose = verbose;
  options.connect.ask_password = ask_password;
  return ferry_run (&options);
}
