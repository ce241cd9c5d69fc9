/* ferry: address parsing. */
#include <config.h>

#include "address.h"

#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "error.h"
#include "message.h"
#include "suggest.h"
#include "virt-uri.h"

static bool
fail (GError **error, const char *text, const char *reason)
{
  return ferry_set_error (error, FERRY_EXIT_USAGE, "invalid address '%s': %s", text, reason);
}

static bool
parse_unix (struct address *a, const char *rest, GError **error)
{
  a->kind = ADDRESS_UNIX;
  a->abstract = rest[0] == '@';
  if (a->abstract)
    rest++;
  if (rest[0] == '\0')
    return fail (error, a->text, "empty socket path");
  /* The abstract name has no terminating NUL, so it may use every byte. */
  if (strlen (rest) >= sizeof (((struct sockaddr_un *) 0)->sun_path) - !a->abstract)
    return fail (error, a->text, "socket path too long");
  a->path = g_strdup (rest);
  return true;
}

static bool
valid_port (const char *port)
{
  gint64 n;
  char *end;

  if (port[0] == '\0')
    return false;
  /* A service name starts with a letter (RFC 6335): "-1" is no port. */
  if (!g_ascii_isdigit (port[0]))
    return g_ascii_isalpha (port[0]) &&
           strspn (port, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen (port);
  n = g_ascii_strtoll (port, &end, 10);
  return *end == '\0' && n > 0 && n <= 65535;
}

/* Hex digits, ':' and '.' (up to a %zone): an IPv6 address, or a part. */
static bool
looks_ipv6 (const char *text)
{
  size_t len = strcspn (text, "%");

  return strspn (text, "0123456789abcdefABCDEF:.") == len;
}

static bool
parse_tcp (struct address *a, const char *rest, GError **error)
{
  const char *colon;

  a->kind = ADDRESS_TCP;
  if (rest[0] == '[') {
    const char *close = strchr (rest, ']');
    if (close == NULL || close[1] != ':')
      return fail (error, a->text, "expected [ADDRESS]:PORT");
    a->host = g_strndup (rest + 1, close - rest - 1);
    colon = close + 1;
  } else {
    colon = strrchr (rest, ':');
    if (colon == NULL)
      return fail (error, a->text, "expected HOST:PORT");
    a->host = g_strndup (rest, colon - rest);
    if (strchr (a->host, ':') && looks_ipv6 (a->host))
      return fail (error, a->text, "an IPv6 address needs brackets: [ADDRESS]:PORT");
    /* A name has no ':': the port is what follows its first one. */
    if ((colon = strchr (rest, ':')) - rest < (ptrdiff_t) strlen (a->host)) {
      g_free (a->host);
      a->host = g_strndup (rest, colon - rest);
    }
  }
  a->port = g_strdup (colon + 1);
  if (a->host[0] == '\0')
    return fail (error, a->text, "empty host");
  if (strpbrk (a->host, "[]"))
    return fail (error, a->text, "a host cannot contain '[' or ']'");
  if (!valid_port (a->port)) {
    g_autofree char *reason = g_strdup_printf ("port '%s' must be 1-65535 or a service name",
                                               a->port);
    return fail (error, a->text, reason);
  }
  return true;
}

static bool
parse_fd (struct address *a, const char *rest, GError **error)
{
  char *end;
  gint64 n;

  a->kind = ADDRESS_FD;
  n = g_ascii_strtoll (rest, &end, 10);
  if (rest[0] == '\0' || *end != '\0' || n < 0 || n > G_MAXINT)
    return fail (error, a->text, "expected fd:N with N a descriptor number");
  a->fd = (int) n;
  return true;
}

/* %XX-decode @len bytes of @text; NULL for a bad escape or an encoded NUL. */
static char *
uri_decode (const char *text, size_t len)
{
  g_autofree char *raw = g_strndup (text, len);

  return g_uri_unescape_string (raw, NULL);
}

static bool
parse_ssh_param (struct address *a, const char *param, GError **error)
{
  struct address_ssh *ssh = &a->ssh;
  const char *eq = strchr (param, '=');
  g_autofree char *name = eq ? g_strndup (param, eq - param) : g_strdup (param);
  g_autofree char *value = eq ? uri_decode (eq + 1, strlen (eq + 1)) : NULL;

  if (eq == NULL || value == NULL || value[0] == '\0')
    return fail (error, a->text, "expected NAME=VALUE after '?' or '&'");
  if (strcmp (name, "tcp") == 0) {
    struct address tcp = { .text = a->text };
    bool ok = parse_tcp (&tcp, value, error);
    /* The last tcp= wins, as for every parameter. */
    g_free (ssh->tcp_host);
    g_free (ssh->tcp_port);
    ssh->tcp_host = tcp.host;
    ssh->tcp_port = tcp.port;
    return ok;
  }
  if (strcmp (name, "proxy") == 0) {
    static const char *const names[] = { "auto", "direct", "exec" };
    for (size_t i = 0; i < G_N_ELEMENTS (names); i++)
      if (strcmp (value, names[i]) == 0) {
        ssh->proxy = (enum ssh_proxy) i;
        return true;
      }
    return fail (error, a->text, "proxy= must be auto, direct or exec");
  }
  if (strcmp (name, "known_hosts_verify") == 0) {
    static const char *const names[] = { "normal", "auto", "ignore" };
    for (size_t i = 0; i < G_N_ELEMENTS (names); i++)
      if (strcmp (value, names[i]) == 0) {
        ssh->verify = (enum ssh_verify) i;
        return true;
      }
    return fail (error, a->text, "known_hosts_verify= must be normal, auto or ignore");
  }
  if (strcmp (name, "keyfile") == 0) {
    g_free (ssh->keyfile);
    ssh->keyfile = g_steal_pointer (&value);
    return true;
  }
  if (strcmp (name, "known_hosts") == 0) {
    g_free (ssh->known_hosts);
    ssh->known_hosts = g_steal_pointer (&value);
    return true;
  }
  g_autofree char *reason =
    g_strdup_printf ("unknown parameter '%s' (expected tcp, proxy, keyfile, "
                     "known_hosts or known_hosts_verify)", name);
  return fail (error, a->text, reason);
}

/* ssh://[USER@]HOST[:PORT]/PATH[?PARAMS] or ssh://[USER@]HOST[:PORT]?tcp=H:P[&PARAMS] */
static bool
parse_ssh (struct address *a, const char *rest, unsigned flags, GError **error)
{
  struct address_ssh *ssh = &a->ssh;
  size_t auth_len = strcspn (rest, "/?");
  const char *query = strchr (rest + auth_len, '?');
  const char *path = rest[auth_len] == '/' ? rest + auth_len : NULL;
  const char *at = memchr (rest, '@', auth_len);
  const char *host = at ? at + 1 : rest;
  const char *end = rest + auth_len, *colon;

  a->kind = ADDRESS_SSH;
  if (at) {
    ssh->user = uri_decode (rest, at - rest);
    if (ssh->user == NULL || ssh->user[0] == '\0')
      return fail (error, a->text, "empty or malformed user name");
  }
  if (host[0] == '[') {
    const char *close = memchr (host, ']', end - host);
    if (close == NULL || (close + 1 != end && close[1] != ':'))
      return fail (error, a->text, "expected [ADDRESS] or [ADDRESS]:PORT");
    ssh->host = g_strndup (host + 1, close - host - 1);
    colon = close + 1 != end ? close + 1 : NULL;
  } else {
    colon = memchr (host, ':', end - host);
    ssh->host = g_strndup (host, (colon ? colon : end) - host);
  }
  if (ssh->host[0] == '\0')
    return fail (error, a->text, "empty host");
  if (colon) {
    gint64 n;
    char *num_end;
    ssh->port = g_strndup (colon + 1, end - colon - 1);
    n = g_ascii_strtoll (ssh->port, &num_end, 10);
    /* strtoll would skip leading blanks: "h: 22" is no port. */
    if (!g_ascii_isdigit (ssh->port[0]) || *num_end != '\0' || n <= 0 || n > 65535)
      return fail (error, a->text, "ssh port must be 1-65535");
  }
  if (path) {
    ssh->path = uri_decode (path, (query ? query : path + strlen (path)) - path);
    if (ssh->path == NULL)
      return fail (error, a->text, "malformed %-escape in the socket path");
    if (strcmp (ssh->path, "/") == 0)
      return fail (error, a->text, "empty socket path");
  }
  if (query) {
    g_auto (GStrv) params = g_strsplit (query + 1, "&", -1);
    for (char **p = params; *p; p++)
      if (!parse_ssh_param (a, *p, error))
        return false;
  }
  if ((flags & ADDRESS_SSH_SESSION) && (path || ssh->tcp_host))
    return fail (error, a->text, "expected ssh://[USER@]HOST[:PORT], without a socket "
                 "path or tcp=");
  if (ssh->path && ssh->tcp_host)
    return fail (error, a->text, "give either a socket path or tcp=HOST:PORT, not both");
  if (!ssh->path && !ssh->tcp_host && !(flags & ADDRESS_SSH_SESSION))
    return fail (error, a->text, "expected ssh://HOST/ABSOLUTE/PATH or ssh://HOST?tcp=HOST:PORT");
  return true;
}

/* A libvirt URI becomes the UNIX address of the socket it resolves to;
 * libvirt's own messages need no "invalid address" prefix. */
static bool
parse_libvirt (struct address *a, unsigned flags, GError **error)
{
  g_autofree char *path = virt_uri_socket (a->text, flags & ADDRESS_LIBVIRT_READONLY,
                                             error);

  if (path == NULL)
    return false;
  if (!parse_unix (a, path, error))
    return false;
  if (a->abstract)
    a->name = g_steal_pointer (&path);
  return true;
}

/* A type ferry has not: WORD:HOST:PORT with WORD near a type ferry knows
 * ("tpc:host:22"), but not "host:ssh:22", nor an IPv6 address without
 * brackets (WORD://, a URI, is libvirt's).  False with the message if
 * @text starts so. */
static bool
check_type (const char *text, GError **error)
{
  static const char *const types[] = { "unix", "tcp", "fd", "ssh", "udp" };
  size_t len = strspn (text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
  const char *rest = text + len + 1;
  g_autofree char *word = g_strndup (text, len);
  g_autofree char *reason = NULL;

  if (!g_ascii_isalpha (text[0]) || text[len] != ':')
    return true;
  if (!strchr (rest, ':') || looks_ipv6 (word) ||
      ferry_suggest (word, types, G_N_ELEMENTS (types)) == NULL)
    return true;
  if (g_ascii_strcasecmp (word, "udp") == 0)
    return fail (error, text, "udp: needs --compat=nc -u");
  reason = g_strdup_printf ("unknown address type '%s' (expected unix:, tcp:, fd:, ssh://)",
                            word);
  return fail (error, text, reason);
}

/* A bare word, neither a path nor HOST:PORT: say what either lacks. */
static bool
fail_bare (GError **error, const char *text)
{
  g_autofree char *reason =
    g_strdup_printf ("a socket path needs a '/' (./%s or unix:%s), a TCP address a port "
                     "(%s:PORT)", text, text, text);

  return fail (error, text, reason);
}

struct address *
address_parse (const char *text, GError **error)
{
  return address_parse_flags (text, 0, error);
}

struct address *
address_parse_flags (const char *text, unsigned flags, GError **error)
{
  g_autoptr (FerryAddress) a = g_new0 (struct address, 1);
  bool ok;

  a->text = g_strdup (text);
  a->fd = -1;
  if (text[0] == '\0')
    ok = fail (error, text, "empty address");
  else if (g_str_has_prefix (text, "unix:"))
    ok = parse_unix (a, text + 5, error);
  else if (g_str_has_prefix (text, "tcp:"))
    ok = parse_tcp (a, text + 4, error);
  else if (g_str_has_prefix (text, "fd:"))
    ok = parse_fd (a, text + 3, error);
  else if (g_str_has_prefix (text, "ssh://"))
    ok = parse_ssh (a, text + 6, flags, error);
  else if (virt_uri_matches (text))
    ok = parse_libvirt (a, flags, error);
  else if (!check_type (text, error))
    ok = false;
  else if (text[0] == '@' || strchr (text, '/'))
    ok = parse_unix (a, text, error);
  else if (strchr (text, ':'))
    ok = parse_tcp (a, text, error);
  else
    ok = fail_bare (error, text);
  if (!ok)
    return NULL;
  if (a->name == NULL)
    a->name = g_strdup (a->kind == ADDRESS_UNIX && !a->abstract ? a->path : a->text);
  return g_steal_pointer (&a);
}

void
address_free (struct address *a)
{
  if (a == NULL)
    return;
  g_free (a->text);
  g_free (a->name);
  g_free (a->path);
  g_free (a->host);
  g_free (a->port);
  g_free (a->ssh.user);
  g_free (a->ssh.host);
  g_free (a->ssh.port);
  g_free (a->ssh.path);
  g_free (a->ssh.tcp_host);
  g_free (a->ssh.tcp_port);
  g_free (a->ssh.keyfile);
  g_free (a->ssh.known_hosts);
  g_free (a);
}

unsigned
address_unix_sockaddr (const struct address *a, struct sockaddr_un *sun)
{
  size_t len = strlen (a->path);

  memset (sun, 0, sizeof *sun);
  sun->sun_family = AF_UNIX;
  /* Abstract names start with a NUL byte and are not NUL-terminated. */
  memcpy (sun->sun_path + a->abstract, a->path, len);
  return offsetof (struct sockaddr_un, sun_path) + a->abstract + len + !a->abstract;
}

char *
address_ssh_target (const struct address *a)
{
  const struct address_ssh *ssh = &a->ssh;

  if (ssh->path)
    return g_strconcat ("unix:", ssh->path, NULL);
  return address_tcp_text (ssh->tcp_host, ssh->tcp_port);
}

char *
address_tcp_text (const char *host, const char *port)
{
  g_autofree char *host_port = ferry_host_port (host, port);

  return g_strconcat ("tcp:", host_port, NULL);
}

bool
address_is_host_port (const char *host, const char *port)
{
  return host[0] != '\0' && !strpbrk (host, "/@[]") &&
         (!strchr (host, ':') || g_hostname_is_ip_address (host)) && valid_port (port);
}

const char *
address_display_name (const struct address *a)
{
  return a->name;
}
