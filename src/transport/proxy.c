/* ferry: --proxy, the handshakes of HTTP CONNECT, SOCKS4, SOCKS4a and
 * SOCKS5 (see proxy.h).  Blocking, as the TCP connect before it is:
 * connect.c calls it before any relay starts. */
#include <config.h>

#include "proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "error.h"
#include "message.h"
#include "signal-watch.h"
#include "tty-prompt.h"

/* The longest HTTP answer head read: a proxy's error page comes after it. */
#define HTTP_HEAD_MAX 16384

static const struct {
  const char *scheme;
  enum proxy_kind kind;
  const char *default_port;
  bool password;              /* the protocol carries a password */
} schemes[] = {
  { "http", PROXY_HTTP, "3128", true },
  { "socks4", PROXY_SOCKS4, "1080", false },
  { "socks4a", PROXY_SOCKS4A, "1080", false },
  { "socks5", PROXY_SOCKS5, "1080", true },
};

#define EXPECTED_URL "expected SCHEME://[USER[:PASS]@]HOST[:PORT], SCHEME http, " \
                     "socks4, socks4a or socks5"

void
proxy_free (struct proxy *p)
{
  if (p == NULL)
    return;
  g_free (p->user);
  if (p->password)
    memset (p->password, 0, strlen (p->password));
  g_free (p->password);
  g_free (p->host);
  g_free (p->port);
  g_free (p->name);
  g_free (p);
}

/* The fields every form sets, from @option's @text ("--proxy", "-x");
 * checks the lengths SOCKS can carry. */
static struct proxy *
proxy_new (const char *option, const char *text, enum proxy_kind kind, const char *host,
           const char *port, const char *user, const char *password, GError **error)
{
  g_autoptr (FerryProxy) p = g_new0 (struct proxy, 1);

  if (*host == '\0') {
    ferry_set_error (error, FERRY_EXIT_USAGE, "invalid %s '%s': no host", option, text);
    return NULL;
  }
  /* RFC 1929 gives each a length byte. */
  if ((user && strlen (user) > 255) || (password && strlen (password) > 255)) {
    ferry_set_error (error, FERRY_EXIT_USAGE,
                     "invalid %s '%s': the user or password is longer than 255 bytes",
                     option, text);
    return NULL;
  }
  p->kind = kind;
  p->host = g_strdup (host);
  p->port = g_strdup (port);
  p->user = g_strdup (user);
  p->password = g_strdup (password);
  p->name = ferry_host_port (host, port);
  return g_steal_pointer (&p);
}

struct proxy *
proxy_parse (const char *url, GError **error)
{
  g_autoptr (GUri) uri = NULL;
  g_autoptr (GError) uri_error = NULL;
  g_autofree char *port = NULL;
  const char *scheme;
  size_t i;

  if (strstr (url, "://") == NULL) {
    ferry_set_error (error, FERRY_EXIT_USAGE, "invalid --proxy '%s': no scheme (" EXPECTED_URL ")",
                     url);
    return NULL;
  }
  uri = g_uri_parse (url, G_URI_FLAGS_HAS_PASSWORD | G_URI_FLAGS_NON_DNS, &uri_error);
  if (uri == NULL) {
    /* glib's message repeats the URL: its reason is enough. */
    const char *reason = strstr (uri_error->message, ": ");
    ferry_set_error (error, FERRY_EXIT_USAGE, "invalid --proxy '%s': %s (" EXPECTED_URL ")",
                     url, reason ? reason + 2 : uri_error->message);
    return NULL;
  }
  scheme = g_uri_get_scheme (uri);
  for (i = 0; i < G_N_ELEMENTS (schemes); i++)
    if (g_ascii_strcasecmp (scheme, schemes[i].scheme) == 0)
      break;
  if (i == G_N_ELEMENTS (schemes)) {
    ferry_set_error (error, FERRY_EXIT_USAGE, "invalid --proxy '%s': unknown scheme '%s' ("
                     EXPECTED_URL ")", url, scheme);
    return NULL;
  }
  if ((*g_uri_get_path (uri) != '\0' && strcmp (g_uri_get_path (uri), "/") != 0) ||
      g_uri_get_query (uri) || g_uri_get_fragment (uri)) {
    ferry_set_error (error, FERRY_EXIT_USAGE, "invalid --proxy '%s': a path, query or fragment "
                     "after HOST[:PORT] (" EXPECTED_URL ")", url);
    return NULL;
  }
  if (g_uri_get_password (uri) && !schemes[i].password) {
    ferry_set_error (error, FERRY_EXIT_USAGE, "invalid --proxy '%s': %s carries a user id, not "
                     "a password", url, schemes[i].scheme);
    return NULL;
  }
  port = g_uri_get_port (uri) > 0 ? g_strdup_printf ("%d", g_uri_get_port (uri))
                                  : g_strdup (schemes[i].default_port);
  return proxy_new ("--proxy", url, schemes[i].kind,
                    g_uri_get_host (uri) ? g_uri_get_host (uri) : "", port,
                    g_uri_get_user (uri), g_uri_get_password (uri), error);
}

struct proxy *
proxy_from_nc (const char *protocol, const char *host_port, const char *user, GError **error)
{
  enum proxy_kind kind;
  g_autofree char *host = NULL;
  const char *port, *colon = strrchr (host_port, ':');

  if (protocol == NULL || strcmp (protocol, "5") == 0)
    kind = PROXY_SOCKS5;
  else if (strcmp (protocol, "4") == 0)
    kind = PROXY_SOCKS4;        /* netcat resolves the name itself */
  else if (g_ascii_strcasecmp (protocol, "connect") == 0)
    kind = PROXY_HTTP;
  else {
    ferry_set_error (error, FERRY_EXIT_USAGE, "unsupported proxy protocol '%s' (expected -X "
                     "connect, 4 or 5)", protocol);
    return NULL;
  }
  /* HOST, HOST:PORT, [V6ADDR] or [V6ADDR]:PORT; a bare IPv6 literal has
   * more than one ':'. */
  if (host_port[0] == '[') {
    const char *close = strchr (host_port, ']');
    if (close == NULL || (close[1] != '\0' && close[1] != ':')) {
      ferry_set_error (error, FERRY_EXIT_USAGE, "invalid -x '%s': expected HOST[:PORT] "
                       "or [V6ADDR]:PORT", host_port);
      return NULL;
    }
    host = g_strndup (host_port + 1, close - host_port - 1);
    port = close[1] == ':' ? close + 2 : NULL;
  } else if (colon && strchr (host_port, ':') == colon) {
    host = g_strndup (host_port, colon - host_port);
    port = colon + 1;
  } else {
    host = g_strdup (host_port);
    port = NULL;
  }
  if (port && *port == '\0') {
    ferry_set_error (error, FERRY_EXIT_USAGE, "invalid -x '%s': empty port", host_port);
    return NULL;
  }
  if (port == NULL)
    port = kind == PROXY_HTTP ? "3128" : "1080";
  /* As netcat, -P is for CONNECT only, and its password is asked for. */
  struct proxy *p = proxy_new ("-x", host_port, kind, host, port,
                               kind == PROXY_HTTP ? user : NULL, NULL, error);
  if (p)
    p->ask_password = p->user != NULL;
  return p;
}

/* One handshake: the socket, its deadline, and the names messages give. */
struct exchange {
  struct proxy *proxy;
  int fd;
  gint64 deadline;            /* monotonic microseconds; -1: none */
  int timeout_ms;
  const char *request;        /* "CONNECT", "SOCKS5 CONNECT", ... */
  char *target;               /* "HOST:PORT" as asked for */
  const char *name;           /* the address, for a stop signal's message */
};

/* The error of a failed wait or transfer: @err is errno, 0 for a peer
 * that closed, ETIMEDOUT for the deadline, EINTR for a stop signal. */
static bool
exchange_failed (const struct exchange *x, int err, GError **error)
{
  if (err == EINTR && signal_watch_set_stopped (error, x->name))
    return false;
  if (err == 0)
    return ferry_set_error (error, FERRY_EXIT_CONNECT, "proxy %s closed the connection during "
                            "%s %s", x->proxy->name, x->request, x->target);
  if (err == ETIMEDOUT)
    return ferry_set_error (error, FERRY_EXIT_CONNECT, "proxy %s did not answer %s %s within "
                            "%d s", x->proxy->name, x->request, x->target,
                            x->timeout_ms / 1000);
  return ferry_set_error (error, FERRY_EXIT_CONNECT, "proxy %s: %s %s: %s", x->proxy->name,
                          x->request, x->target, g_strerror (err));
}

/* Wait for @events; an errno for exchange_failed, or -1 once ready. */
static int
exchange_wait (const struct exchange *x, short events)
{
  switch (signal_watch_poll (x->fd, events, x->deadline)) {
  case 1:
    return -1;
  case 0:
    return ETIMEDOUT;
  default:
    return errno;
  }
}

/* Send or receive exactly @len bytes: never more, which would be the
 * target's. */
static bool
transfer (const struct exchange *x, void *buf, size_t len, bool sending, GError **error)
{
  char *p = buf;

  while (len > 0) {
    ssize_t n = sending ? send (x->fd, p, len, MSG_NOSIGNAL) : recv (x->fd, p, len, 0);
    int err;
    if (n > 0) {
      p += n;
      len -= (size_t) n;
      continue;
    }
    if (n == 0 && !sending)
      return exchange_failed (x, 0, error);
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return exchange_failed (x, errno, error);
    if ((err = exchange_wait (x, sending ? POLLOUT : POLLIN)) >= 0)
      return exchange_failed (x, err, error);
  }
  return true;
}

static bool
send_all (const struct exchange *x, const void *buf, size_t len, GError **error)
{
  return transfer (x, (void *) buf, len, true, error);
}

static bool
recv_exact (const struct exchange *x, void *buf, size_t len, GError **error)
{
  return transfer (x, buf, len, false, error);
}

static bool
refused (const struct exchange *x, GError **error, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

/* "proxy NAME refused REQUEST TARGET: ANSWER" */
static bool
refused (const struct exchange *x, GError **error, const char *fmt, ...)
{
  va_list ap;
  g_autofree char *answer = NULL;

  va_start (ap, fmt);
  answer = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  return ferry_set_error (error, FERRY_EXIT_CONNECT, "proxy %s refused %s %s: %s",
                          x->proxy->name, x->request, x->target, answer);
}

/* Bytes that are not the protocol's, quoted: at most 40, escaped. */
static bool
malformed (const struct exchange *x, const void *bytes, size_t len, GError **error)
{
  g_autoptr (GString) quoted = g_string_new (NULL);

  for (size_t i = 0; i < MIN (len, 40); i++) {
    unsigned char c = ((const unsigned char *) bytes)[i];
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
      g_string_append_c (quoted, (char) c);
    else
      g_string_append_printf (quoted, "\\x%02x", c);
  }
  return ferry_set_error (error, FERRY_EXIT_CONNECT, "proxy %s sent a malformed answer to %s "
                          "%s: '%s%s'", x->proxy->name, x->request, x->target, quoted->str,
                          len > 40 ? "..." : "");
}

/* nc -P, as netcat: the proxy said 407 to a request without a password;
 * ask for it on the terminal for the next connection's.  False without a
 * terminal. */
static bool
ask_password (struct proxy *p)
{
  char password[256];
  g_autofree char *prompt = g_strdup_printf ("Proxy password for %s@%s: ", p->user, p->name);

  bool answered = tty_prompt (prompt, password, sizeof password, false);

  if (answered)
    p->password = g_strdup (password);
  explicit_bzero (password, sizeof password);   /* a part typed before a stop too */
  return answered;
}

/* HTTP CONNECT (RFC 9110 9.3.6): any 2xx opens the tunnel.  *@retry: a
 * 407 got nc -P's password, for a new connection to send. */
static bool
handshake_http (const struct exchange *x, bool *retry, GError **error)
{
  struct proxy *p = x->proxy;
  g_autoptr (GString) request = g_string_new (NULL);
  char head[HTTP_HEAD_MAX + 1];
  size_t len = 0;
  int status;
  char *eol;

  g_string_printf (request, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", x->target, x->target);
  /* nc -P sends none until the proxy asks, as netcat. */
  if (p->user && !(p->ask_password && p->password == NULL)) {
    g_autofree char *pair = g_strconcat (p->user, ":", p->password ? p->password : "", NULL);
    g_autofree char *basic = g_base64_encode ((const guchar *) pair, strlen (pair));
    g_string_append_printf (request, "Proxy-Authorization: Basic %s\r\n", basic);
    memset (pair, 0, strlen (pair));
  }
  g_string_append (request, "\r\n");
  if (!send_all (x, request->str, request->len, error))
    return false;
  /* Byte by byte up to the blank line: what follows is the target's. */
  while (len < 4 || memcmp (head + len - 4, "\r\n\r\n", 4) != 0) {
    if (len >= 2 && memcmp (head + len - 2, "\n\n", 2) == 0)
      break;
    if (len == HTTP_HEAD_MAX)
      return malformed (x, head, len, error);
    if (!recv_exact (x, head + len, 1, error))
      return false;
    len++;
    /* Not HTTP at all: say so at once, with what else has come, rather
     * than wait for a blank line. */
    if (len <= 5 && memcmp (head, "HTTP/", len) != 0) {
      ssize_t more = recv (x->fd, head + len, 39, MSG_DONTWAIT);
      return malformed (x, head, len + (size_t) MAX (more, 0), error);
    }
  }
  head[len] = '\0';
  eol = strpbrk (head, "\r\n");
  *eol = '\0';
  if (sscanf (head, "HTTP/%*1d.%*1d %3d", &status) != 1 || status < 100 || status > 999)
    return malformed (x, head, strlen (head), error);
  if (status / 100 == 2)
    return true;
  if (status == 407 && p->ask_password && p->password == NULL) {
    if (ask_password (p)) {
      *retry = true;
      return false;
    }
    /* A stop at the prompt is a stop, not the 407. */
    if (signal_watch_set_stopped (error, x->name))
      return false;
  }
  /* "HTTP/1.1 407 Proxy Authentication Required": from the code on. */
  char *answer = head + strcspn (head, " \t");
  answer += strspn (answer, " \t");
  for (char *c = answer; *c; c++)
    if ((unsigned char) *c < 0x20 || (unsigned char) *c == 0x7f)
      *c = '?';
  return refused (x, error, "%.200s", answer);
}

/* @port as a number, or -1 (a service name is looked up, thread-safe). */
static int
port_number (const struct exchange *x, const char *port, GError **error)
{
  struct addrinfo hints = { .ai_family = AF_INET, .ai_flags = AI_NUMERICHOST };
  struct addrinfo *ai = NULL;
  int number;

  if (getaddrinfo ("0.0.0.0", port, &hints, &ai) != 0) {
    ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s' through proxy %s: "
                     "unknown port '%s'", x->name, x->proxy->name, port);
    return -1;
  }
  number = ntohs (((struct sockaddr_in *) ai->ai_addr)->sin_port);
  freeaddrinfo (ai);
  return number;
}

static const char *
socks4_reply (unsigned code)
{
  switch (code) {
  case 91: return "request rejected or failed (91)";
  case 92: return "request rejected: the proxy cannot reach our identd (92)";
  case 93: return "request rejected: identd reports another user id (93)";
  default: return NULL;
  }
}

/* SOCKS4, and SOCKS4a's name for the proxy to resolve. */
static bool
handshake_socks4 (const struct exchange *x, const char *host, const char *port,
                  GError **error)
{
  const struct proxy *p = x->proxy;
  g_autoptr (GByteArray) req = g_byte_array_new ();
  struct in_addr ip;
  int nport = port_number (x, port, error);
  guint8 reply[8];
  bool send_name = false;

  if (nport < 0)
    return false;
  if (inet_pton (AF_INET, host, &ip) != 1) {
    if (strchr (host, ':'))
      return ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s' through "
                              "proxy %s: SOCKS4 carries no IPv6 address (use socks5://)",
                              x->name, p->name);
    if (p->kind == PROXY_SOCKS4A) {
      ip.s_addr = htonl (1);  /* 0.0.0.1: the name follows */
      send_name = true;
    } else {
      struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
      struct addrinfo *ai = NULL;
      int r = getaddrinfo (host, NULL, &hints, &ai);
      if (r != 0)
        return ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s' through "
                                "proxy %s: %s (SOCKS4 needs an IPv4 address; socks4a:// "
                                "lets the proxy resolve it)", x->name, p->name,
                                r == EAI_SYSTEM ? g_strerror (errno) : gai_strerror (r));
      ip = ((struct sockaddr_in *) ai->ai_addr)->sin_addr;
      freeaddrinfo (ai);
    }
  }
  guint8 head[] = { 4, 1, nport >> 8, nport & 0xff };
  g_byte_array_append (req, head, sizeof head);
  g_byte_array_append (req, (const guint8 *) &ip.s_addr, 4);
  g_byte_array_append (req, (const guint8 *) (p->user ? p->user : ""),
                       (guint) strlen (p->user ? p->user : "") + 1);
  if (send_name)
    g_byte_array_append (req, (const guint8 *) host, (guint) strlen (host) + 1);
  if (!send_all (x, req->data, req->len, error) || !recv_exact (x, reply, sizeof reply, error))
    return false;
  if (reply[0] != 0 || (reply[1] != 90 && socks4_reply (reply[1]) == NULL))
    return malformed (x, reply, sizeof reply, error);
  if (reply[1] != 90)
    return refused (x, error, "%s", socks4_reply (reply[1]));
  return true;
}

static const char *
socks5_reply (unsigned code)
{
  static const char *const text[] = {
    [1] = "general SOCKS server failure",
    [2] = "connection not allowed by ruleset",
    [3] = "network unreachable",
    [4] = "host unreachable",
    [5] = "connection refused",
    [6] = "TTL expired",
    [7] = "command not supported",
    [8] = "address type not supported",
  };
  return code < G_N_ELEMENTS (text) ? text[code] : "unassigned reply";
}

/* RFC 1929: user and password, once the proxy chose it. */
static bool
socks5_authenticate (const struct exchange *x, GError **error)
{
  const struct proxy *p = x->proxy;
  const char *password = p->password ? p->password : "";
  size_t ulen = strlen (p->user), plen = strlen (password);
  g_autofree guint8 *req = g_malloc (3 + ulen + plen);
  guint8 reply[2];
  bool sent;

  req[0] = 1;
  req[1] = (guint8) ulen;
  memcpy (req + 2, p->user, ulen);
  req[2 + ulen] = (guint8) plen;
  memcpy (req + 3 + ulen, password, plen);
  sent = send_all (x, req, 3 + ulen + plen, error);
  memset (req, 0, 3 + ulen + plen);
  if (!sent || !recv_exact (x, reply, sizeof reply, error))
    return false;
  if (reply[0] != 1)
    return malformed (x, reply, sizeof reply, error);
  if (reply[1] != 0)
    return refused (x, error, "user/password authentication failed for user '%s'", p->user);
  return true;
}

/* RFC 1928: the name goes to the proxy, which resolves it. */
static bool
handshake_socks5 (const struct exchange *x, const char *host, const char *port,
                  GError **error)
{
  const struct proxy *p = x->proxy;
  g_autoptr (GByteArray) req = g_byte_array_new ();
  guint8 greeting[] = { 5, p->user ? 2 : 1, 0, 2 };
  guint8 reply[4 + 1 + 255 + 2];
  guint8 addr[16];
  int nport = port_number (x, port, error);
  size_t rest;

  if (nport < 0)
    return false;
  if (strlen (host) > 255)
    return ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s' through proxy "
                            "%s: SOCKS5 carries names of 255 bytes at most", x->name, p->name);
  if (!send_all (x, greeting, p->user ? 4 : 3, error) || !recv_exact (x, reply, 2, error))
    return false;
  if (reply[0] != 5 || (reply[1] != 0 && reply[1] != 0xff && !(reply[1] == 2 && p->user)))
    return malformed (x, reply, 2, error);
  if (reply[1] == 0xff)
    return refused (x, error, p->user ? "no acceptable authentication method"
                    : "no acceptable authentication method (it may want socks5://USER:PASS@)");
  if (reply[1] == 2 && !socks5_authenticate (x, error))
    return false;

  guint8 head[] = { 5, 1, 0 };
  g_byte_array_append (req, head, sizeof head);
  if (inet_pton (AF_INET, host, addr) == 1) {
    g_byte_array_append (req, (const guint8 *) "\1", 1);
    g_byte_array_append (req, addr, 4);
  } else if (inet_pton (AF_INET6, host, addr) == 1) {
    g_byte_array_append (req, (const guint8 *) "\4", 1);
    g_byte_array_append (req, addr, 16);
  } else {
    guint8 len = (guint8) strlen (host);
    g_byte_array_append (req, (const guint8 *) "\3", 1);
    g_byte_array_append (req, &len, 1);
    g_byte_array_append (req, (const guint8 *) host, len);
  }
  guint8 nport_be[] = { nport >> 8, nport & 0xff };
  g_byte_array_append (req, nport_be, 2);
  if (!send_all (x, req->data, req->len, error) || !recv_exact (x, reply, 5, error))
    return false;
  /* VER REP RSV ATYP, then the bound address (its first byte read) and port. */
  switch (reply[3]) {
  case 1: rest = 4 - 1 + 2; break;
  case 4: rest = 16 - 1 + 2; break;
  case 3: rest = reply[4] + 2; break;
  default: rest = 0; break;
  }
  if (reply[0] != 5 || reply[2] != 0 || rest == 0)
    return malformed (x, reply, 5, error);
  if (reply[1] != 0)
    return refused (x, error, "%s (%u)", socks5_reply (reply[1]), reply[1]);
  return recv_exact (x, reply + 5, rest, error);
}

enum proxy_result
proxy_handshake (struct proxy *p, int fd, const char *host, const char *port,
                 const char *name, int timeout_ms, GError **error)
{
  struct exchange x = {
    .proxy = p,
    .fd = fd,
    .deadline = timeout_ms < 0 ? -1 : g_get_monotonic_time () + timeout_ms * G_GINT64_CONSTANT (1000),
    .timeout_ms = timeout_ms,
    .name = name,
    .target = ferry_host_port (host, port),
  };
  bool ok = false, retry = false;

  switch (p->kind) {
  case PROXY_HTTP:
    x.request = "CONNECT";
    ok = handshake_http (&x, &retry, error);
    break;
  case PROXY_SOCKS4:
  case PROXY_SOCKS4A:
    x.request = p->kind == PROXY_SOCKS4 ? "SOCKS4 CONNECT" : "SOCKS4a CONNECT";
    ok = handshake_socks4 (&x, host, port, error);
    break;
  case PROXY_SOCKS5:
    x.request = "SOCKS5 CONNECT";
    ok = handshake_socks5 (&x, host, port, error);
    break;
  }
  g_free (x.target);
  return ok ? PROXY_TUNNEL : retry ? PROXY_RETRY : PROXY_FAILED;
}
