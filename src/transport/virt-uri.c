/* ferry: libvirt URI -> daemon socket (see virt-uri.h). */
#include <config.h>

#include "virt-uri.h"

#include <string.h>
#include <unistd.h>

#include "error.h"

/* libvirt builds system paths from LOCALSTATEDIR, not RUNSTATEDIR, so a
 * client works with hosts that lack /run; messages name the same path. */
#define SYSTEM_SOCKET_DIR "/var/run/libvirt"

enum mode { MODE_AUTO, MODE_LEGACY, MODE_DIRECT };

struct virt_uri {
  char *driver;               /* "qemu" of "qemu+unix" */
  char *transport;            /* "unix" of "qemu+unix", lower case; NULL if none */
  char *server;               /* host part of the authority; NULL if empty */
  char *path;                 /* "/system", "/session", ... */
  char *socket;               /* ?socket= */
  char *mode;                 /* ?mode= */
};

static void
virt_uri_clear (struct virt_uri *u)
{
  g_free (u->driver);
  g_free (u->transport);
  g_free (u->server);
  g_free (u->path);
  g_free (u->socket);
  g_free (u->mode);
}

bool
virt_uri_matches (const char *text)
{
  size_t n = strspn (text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");

  return n > 0 && g_ascii_isalpha (text[0]) && g_str_has_prefix (text + n, "://");
}

static bool
parse_error (GError **error, const char *uri, const char *reason)
{
  return ferry_set_error (error, FERRY_EXIT_USAGE, "cannot parse URI transport '%s': %s",
                          uri, reason);
}

/* Query parameters as libvirt reads them: '&' or ';' separated, percent
 * decoded; names are case-insensitive; the last one of a name wins. */
static bool
parse_query (struct virt_uri *u, const char *query)
{
  g_auto (GStrv) params = g_strsplit_set (query, "&;", -1);

  for (char **p = params; *p; p++) {
    const char *eq = strchr (*p, '=');
    g_autofree char *name = g_strndup (*p, eq ? (size_t) (eq - *p) : strlen (*p));
    char *value = g_uri_unescape_string (eq ? eq + 1 : "", NULL);

    if (value == NULL)
      return false;
    if (g_ascii_strcasecmp (name, "socket") == 0)
      g_free (u->socket), u->socket = value;
    else if (g_ascii_strcasecmp (name, "mode") == 0)
      g_free (u->mode), u->mode = value;
    else
      g_free (value);
  }
  return true;
}

static bool
parse_uri (struct virt_uri *u, const char *uri, GError **error)
{
  static const char *const transports[] = {
    "tls", "unix", "ssh", "libssh2", "ext", "tcp", "libssh", NULL,
  };
  const char *sep = strstr (uri, "://");
  const char *auth, *auth_end, *host, *query, *fragment;
  g_autofree char *scheme = NULL;
  char *plus;

  if (!virt_uri_matches (uri))
    return parse_error (error, uri, "missing scheme for URI");
  scheme = g_strndup (uri, sep - uri);
  plus = strchr (scheme, '+');
  u->driver = g_strndup (scheme, plus ? (size_t) (plus - scheme) : strlen (scheme));
  if (plus)
    u->transport = g_ascii_strdown (plus + 1, -1);

  auth = sep + 3;
  auth_end = auth + strcspn (auth, "/?#");
  host = memchr (auth, '@', auth_end - auth);
  host = host ? host + 1 : auth;
  if (host[0] == '[')
    u->server = g_strndup (host + 1, strcspn (host + 1, "]"));
  else
    u->server = g_strndup (host, strcspn (host, ":/?#"));
  if (u->server[0] == '\0')
    g_clear_pointer (&u->server, g_free);

  fragment = auth_end + strcspn (auth_end, "#");
  query = memchr (auth_end, '?', fragment - auth_end);
  u->path = g_strndup (auth_end, (query ? query : fragment) - auth_end);
  if (query) {
    g_autofree char *q = g_strndup (query + 1, fragment - query - 1);
    if (!parse_query (u, q))
      return parse_error (error, uri, "invalid percent escape in the query");
  }

  if (u->transport && !g_strv_contains (transports, u->transport))
    return parse_error (error, uri, "remote_open: transport in URL not recognised "
                        "(should be tls|unix|ssh|ext|tcp|libssh2|libssh)");
  if (u->transport && strcmp (u->transport, "unix") == 0 && u->server) {
    g_autofree char *reason =
      g_strdup_printf ("using unix socket and remote server '%s' is not supported.",
                       u->server);
    return parse_error (error, uri, reason);
  }
  /* No transport: TLS with a server, else a local UNIX socket. */
  if (u->server || (u->transport && strcmp (u->transport, "unix") != 0)) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "unexpected URI transport '%s'", uri);
    return false;
  }
  return true;
}

/* libvirt's user runtime directory, computed without creating anything. */
static char *
session_dir (void)
{
  const char *runtime = g_getenv ("XDG_RUNTIME_DIR");
  const char *cache = g_getenv ("XDG_CACHE_HOME");

  if (runtime && runtime[0])
    return g_build_filename (runtime, "libvirt", NULL);
  if (cache && g_path_is_absolute (cache))
    return g_build_filename (cache, "libvirt", NULL);
  return g_build_filename (g_get_home_dir (), ".cache", "libvirt", NULL);
}

static char *
socket_name (const char *dir, const char *prefix, bool session, bool readonly)
{
  /* The session daemon has no read-only socket. */
  const char *suffix = !session && readonly ? "sock-ro" : "sock";

  return g_strdup_printf ("%s/%s-%s", dir, prefix, suffix);
}

char *
virt_uri_socket (const char *uri, bool readonly, GError **error)
{
  struct virt_uri u = { 0 };
  g_autofree char *dir = NULL, *direct = NULL, *legacy = NULL, *daemon = NULL;
  enum mode mode = MODE_AUTO;
  bool session;
  char *result = NULL;

  if (!parse_uri (&u, uri, error))
    goto out;
  if (u.mode == NULL || strcmp (u.mode, "auto") == 0) {
    mode = MODE_AUTO;
  } else if (strcmp (u.mode, "legacy") == 0) {
    mode = MODE_LEGACY;
  } else if (strcmp (u.mode, "direct") == 0) {
    mode = MODE_DIRECT;
  } else {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE, "unknown remote mode '%s'", u.mode);
    goto out;
  }
  if (u.socket) {
    result = g_steal_pointer (&u.socket);
    goto out;
  }

  session = (strcmp (u.path, "/session") == 0 || strncmp (uri, "test+", 5) == 0) &&
            geteuid () != 0;
  dir = session ? session_dir () : g_strdup (SYSTEM_SOCKET_DIR);
  daemon = g_strdup_printf ("virt%sd", u.driver);
  direct = socket_name (dir, daemon, session, readonly);
  legacy = socket_name (dir, "libvirt", session, readonly);
  /* Auto: the modular daemon's socket if it exists, else libvirtd's (also
   * the default libvirt is built with when neither exists). */
  if (mode == MODE_AUTO)
    mode = access (direct, F_OK) == 0 ? MODE_DIRECT : MODE_LEGACY;
  if (mode == MODE_DIRECT)
    result = g_steal_pointer (&direct);
  else
    result = g_steal_pointer (&legacy);
out:
  virt_uri_clear (&u);
  return result;
}
