/* ferry: --proxy, a tunnel for ferry's TCP connections through an HTTP
 * CONNECT, SOCKS4, SOCKS4a or SOCKS5 proxy.  connect.c connects to the
 * proxy and hands the socket here for the handshake; what follows it is
 * the target's bytes.
 *
 *   http://[USER[:PASS]@]HOST[:PORT]     CONNECT (RFC 9110), Basic auth; port 3128
 *   socks4://[USER@]HOST[:PORT]          SOCKS4: the target resolved here (IPv4); 1080
 *   socks4a://[USER@]HOST[:PORT]         SOCKS4a: the proxy resolves the name; 1080
 *   socks5://[USER[:PASS]@]HOST[:PORT]   SOCKS5 (RFC 1928), user/password (RFC 1929);
 *                                        the proxy resolves the name; 1080
 * %XX escapes are decoded in USER and PASS. */
#ifndef FERRY_PROXY_H
#define FERRY_PROXY_H

#include <stdbool.h>

#include <glib.h>

enum proxy_kind {
  PROXY_HTTP,
  PROXY_SOCKS4,
  PROXY_SOCKS4A,
  PROXY_SOCKS5,
};

struct proxy {
  enum proxy_kind kind;
  char *user;                 /* NULL: no authentication (SOCKS4: an empty user id) */
  char *password;             /* NULL: none given (sent as empty with a @user) */
  char *host;                 /* name or literal, brackets removed */
  char *port;                 /* number or service name */
  char *name;                 /* "HOST:PORT" for messages, never the password */
  bool ask_password;          /* nc -P: a 407 to a request without @password
                                 asks for it on the terminal, for the next
                                 connection (netcat's way) */
};

enum proxy_result {
  PROXY_TUNNEL,               /* the tunnel is open */
  PROXY_FAILED,               /* refused, or broken: the error says which */
  PROXY_RETRY,                /* nc -P's password was asked for after a 407:
                                 connect again, to send it */
};

/* Parse a --proxy URL.  NULL with a FERRY_EXIT_USAGE error, "invalid
 * --proxy 'URL': REASON", naming what is wrong. */
struct proxy *proxy_parse (const char *url, GError **error);

/* nc's -X PROTOCOL ("connect", "4": SOCKS4, "5", or NULL: SOCKS5), -x
 * HOST[:PORT] and -P USER (or NULL; CONNECT only, its password asked for),
 * with netcat's default ports.  NULL with a FERRY_EXIT_USAGE error naming
 * what is wrong. */
struct proxy *proxy_from_nc (const char *protocol, const char *host_port,
                             const char *user, GError **error);

void proxy_free (struct proxy *proxy);

/* Ask @proxy, connected on @fd (non-blocking), for a tunnel to @host
 * @port, waiting at most @timeout_ms in all (-1: forever).  PROXY_FAILED
 * with a FERRY_EXIT_CONNECT error, "proxy NAME refused CONNECT HOST:PORT: ITS
 * ANSWER" or what went wrong, or a stop signal's, "stopped by SIGTERM
 * while connecting to @name".  Nothing of the target's bytes is read. */
enum proxy_result proxy_handshake (struct proxy *proxy, int fd, const char *host,
                                   const char *port, const char *name, int timeout_ms,
                                   GError **error);

typedef struct proxy FerryProxy;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FerryProxy, proxy_free)

#endif
