/* ferry: parsed addresses.  Every textual form is handled here, and only here.
 *
 *   unix:PATH, or a bare PATH containing '/'     UNIX socket in the filesystem
 *   unix:@NAME, or @NAME                         abstract UNIX socket
 *   tcp:HOST:PORT, HOST:PORT, [V6ADDR]:PORT      TCP
 *   fd:N                                         an inherited connected socket
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
};

enum address_flags {
  /* A libvirt URI names the daemon's read-only socket (libvirt's -r). */
  ADDRESS_LIBVIRT_READONLY = 1 << 0,
};

/* Returns NULL with a FERRY_EXIT_USAGE error naming @text and the reason. */
struct address *address_parse (const char *text, GError **error);
/* The same, with address_flags. */
struct address *address_parse_flags (const char *text, unsigned flags, GError **error);
void address_free (struct address *address);

/* Fill @sun for a UNIX address; returns the length to pass to bind/connect. */
struct sockaddr_un;
unsigned address_unix_sockaddr (const struct address *address, struct sockaddr_un *sun);

/* The name messages use (@name). */
const char *address_display_name (const struct address *address);

typedef struct address FerryAddress;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FerryAddress, address_free)

#endif
