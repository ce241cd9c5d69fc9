/* ferry: command line. */
#include <config.h>

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
  "Exit codes:\n"
  "  0 success, 1 any failure (nc and virt-ssh-helper only),\n"
  "  2 usage error, 3 cannot connect or listen,\n"
  "  4 I/O failure during the relay, 5 idle timeout,\n"
  "  130 SIGINT, 143 SIGTERM.\n";

static gboolean
parse_size (const char *name, const char *value, gpointer data, GError **error)
{
  size_t *out = data;
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
  gboolean listen = FALSE, keep = FALSE, no_shutdown = FALSE, keepalive = FALSE;
  gboolean verbose = FALSE, version = FALSE, readonly = FALSE;
  int idle_timeout = 0, connect_timeout = 0;
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) context = NULL;

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
    { "no-shutdown", 0, 0, G_OPTION_ARG_NONE, &no_shutdown,
      "Do not half-close the socket after stdin EOF", NULL },
    { "idle-timeout", 0, 0, G_OPTION_ARG_INT, &idle_timeout,
      "End the relay after SECS without traffic (exit 5)", "SECS" },
    { "connect-timeout", 0, 0, G_OPTION_ARG_INT, &connect_timeout,
      "Give up connecting after SECS", "SECS" },
    { "keepalive", 0, 0, G_OPTION_ARG_NONE, &keepalive,
      "Set SO_KEEPALIVE on TCP connections", NULL },
    { "readonly", 'r', 0, G_OPTION_ARG_NONE, &readonly,
      "With a libvirt URI ADDRESS: the daemon's read-only socket", NULL },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose,
      "Print statistics for each direction at exit", NULL },
    { "version", 'V', 0, G_OPTION_ARG_NONE, &version,
      "Print the version and exit", NULL },
    { NULL },
  };

  context = g_option_context_new ("ADDRESS - relay stdin/stdout to a socket, losing nothing");
  g_option_context_set_description (context, description);
  /* parse_size receives the group's data: where the size goes. */
  GOptionGroup *group = g_option_group_new ("ferry", "ferry options", "ferry options",
                                            &options.relay.buffer_size, NULL);
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
  if (readonly && !virt_uri_matches (argv[1])) {
    ferry_error ("-r/--readonly needs a libvirt URI ADDRESS, not '%s'", argv[1]);
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
  options.readonly = readonly;
  options.connect.keepalive = keepalive;
  return ferry_run (&options);
}
