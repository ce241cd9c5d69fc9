/* ferry: parsed addresses.  Every textual form is handled here, and only here.
 *
 *   unix:PATH, or a bare PATH containing '/'     UNIX socket in the filesystem
 *   unix:@NAME, or @NAME                         abstract UNIX socket
 *   tcp:HOST:PORT, HOST:PORT, [V6ADDR]:PORT      TCP
 *   fd:N                                         an inherited connected socket
 *   ssh://[USER@]HOST[:PORT]/ABS/PATH[?PARAMS]   a remote UNIX socket, over ssh
 *   ssh://[USER@]HOST[:PORT]?tcp=RHOST:RPORT[&PARAMS]   a remote TCP port, over ssh
 *     PARAMS, '&'-separated: proxy=auto|direct|exec, keyfile=FILE,
 *     known_hosts=FILE, known_hosts_verify=normal|auto|ignore
 *     (libvirt's names); %XX escapes are decoded in the path and values.
 *   DRIVER:///system, DRIVER:///session[?...]    a libvirt daemon's UNIX socket
 *                                                (resolved by virt-uri.c)
 */
#ifndef FERRY_ADDRESS_H
#define FERRY_ADDRESS_H

#include <stdbool.h>

#include <glib.h>

enum address_kind {
  ADDRESS_UNIX,
  ADDRESS_TCP,
  ADDRESS_FD,
  ADDRESS_SSH,
};

/* How an ssh:// address reaches the remote socket. */
enum ssh_proxy {
  SSH_PROXY_AUTO,             /* direct, then exec if the server refuses */
  SSH_PROXY_DIRECT,           /* a direct-streamlocal or direct-tcpip channel */
  SSH_PROXY_EXEC,             /* run "<remote-helper> unix:PATH" on the server */
};

/* What to do with the server's host key (libvirt's known_hosts_verify). */
enum ssh_verify {
  SSH_VERIFY_NORMAL,          /* known keys only; an unknown host fails */
  SSH_VERIFY_AUTO,            /* add an unknown host's key to known_hosts */
  SSH_VERIFY_IGNORE,          /* accept an unknown host without recording it */
};

/* The parts of an ssh:// address.  A changed key is fatal whatever @verify. */
struct address_ssh {
  char *user;                 /* NULL: from ~/.ssh/config, else the login name */
  char *host;                 /* as given (a config Host alias is fine), no brackets */
  char *port;                 /* NULL: from ~/.ssh/config, else 22 */
  char *path;                 /* remote UNIX socket, absolute; NULL with tcp= */
  char *tcp_host;             /* tcp=RHOST:RPORT: the remote TCP target */
  char *tcp_port;
  enum ssh_proxy proxy;
  char *keyfile;              /* keyfile=: identity tried after the agent; NULL: ~/.ssh/id_* */
  char *known_hosts;          /* known_hosts=: NULL means ~/.ssh/known_hosts */
  enum ssh_verify verify;     /* known_hosts_verify=; only it relaxes the host key
                                 check (~/.ssh/config's StrictHostKeyChecking
                                 does not) */
};

struct address {
  enum address_kind kind;
  char *text;                 /* as the user wrote it */
  char *name;                 /* for messages: the path of a filesystem
                                 socket, "@NAME" for a libvirt URI's abstract
                                 one, else @text */
  char *path;                 /* UNIX: the path, or the abstract name without '@' */
  bool abstract;              /* UNIX: in the abstract namespace */
  char *host;                 /* TCP: name or literal, brackets removed */
  char *port;                 /* TCP: number or service name */
  int fd;                     /* FD: the descriptor number */
  struct address_ssh ssh;     /* SSH */
};

enum address_flags {
  /* A libvirt URI names the daemon's read-only socket (libvirt's -r). */
  ADDRESS_LIBVIRT_READONLY = 1 << 0,
  /* Only an ssh:// session, ssh://[USER@]HOST[:PORT][?PARAMS], without a
   * socket path or tcp= (the remote stream mode runs ferry there). */
  ADDRESS_SSH_SESSION = 1 << 1,
};

/* Returns NULL with a FERRY_EXIT_USAGE error naming @text and the reason. */
struct address *address_parse (const char *text, GError **error);
/* The same, with address_flags. */
struct address *address_parse_flags (const char *text, unsigned flags, GError **error);
void address_free (struct address *address);

/* Fill @sun for a UNIX address; returns the length to pass to bind/connect. */
struct sockaddr_un;
unsigned address_unix_sockaddr (const struct address *address, struct sockaddr_un *sun);

/* The remote target of an ssh:// address as a ferry address
 * ("unix:PATH" or "tcp:HOST:PORT"), e.g. for a remote helper.  Free it. */
char *address_ssh_target (const struct address *address);

/* "tcp:HOST:PORT" for a host and a port given apart (nc's HOST PORT,
 * ssh's ProxyCommand %h %p), an IPv6 literal in brackets.  Free it. */
char *address_tcp_text (const char *host, const char *port);

/* Whether @host and @port are a host (a name or an IP literal: no other
 * form's '/' or '@', no ':' outside an IPv6 literal) and a port (a number
 * or a service name), so that they can only mean TCP. */
bool address_is_host_port (const char *host, const char *port);

/* The name messages use (@name). */
const char *address_display_name (const struct address *address);

typedef struct address FerryAddress;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FerryAddress, address_free)

#endif
