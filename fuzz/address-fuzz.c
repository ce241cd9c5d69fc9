/* ferry: libFuzzer target over the address parser (src/transport/address.c), every
 * form: unix:, @, tcp:, [V6]:PORT, fd:, ssh:// with its parameters, and the
 * libvirt URIs it hands to src/transport/virt-uri.c.
 *
 * Input: one byte of settings (bit 0: ADDRESS_LIBVIRT_READONLY), then the
 * address text (cut at the first NUL).  The parser must never crash or
 * leak, must either return an address or set exactly one usage error, and
 * what it returns must hold together: a UNIX path that fits a sockaddr_un,
 * a TCP host and port, an ssh:// address with a host and exactly one
 * remote target, a target that parses again. */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "address.h"
#include "error.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
check (bool ok)
{
  if (!ok)
    abort ();
}

static void
check_address (const struct address *a)
{
  struct sockaddr_un sun;

  check (a->text != NULL && a->name != NULL && address_display_name (a) == a->name);
  switch (a->kind) {
  case ADDRESS_UNIX:
    check (a->path != NULL && a->path[0] != '\0');
    check (address_unix_sockaddr (a, &sun) <= sizeof sun);
    break;
  case ADDRESS_TCP:
    check (a->host != NULL && a->host[0] != '\0' && a->port != NULL && a->port[0] != '\0');
    break;
  case ADDRESS_FD:
    check (a->fd >= 0);
    break;
  case ADDRESS_SSH: {
    g_autoptr (GError) error = NULL;
    g_autofree char *target = address_ssh_target (a);
    g_autoptr (FerryAddress) again = NULL;

    check (a->ssh.host != NULL && a->ssh.host[0] != '\0');
    check ((a->ssh.path != NULL) != (a->ssh.tcp_host != NULL));
    check (a->ssh.path == NULL || a->ssh.path[0] == '/');
    check (a->ssh.tcp_host == NULL || a->ssh.tcp_port != NULL);
    /* The remote helper gets the target as an address of its own.  A
     * remote path too long for a local sockaddr_un may be refused, but
     * nothing else. */
    again = address_parse (target, &error);
    check (again != NULL || (a->ssh.path != NULL && strlen (a->ssh.path) >= sizeof sun.sun_path - 1));
    if (again != NULL)
      check (again->kind == (a->ssh.path ? ADDRESS_UNIX : ADDRESS_TCP));
    break;
  }
  default:
    check (false);
  }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *text = NULL;
  g_autoptr (FerryAddress) a = NULL;

  if (size < 1)
    return 0;
  text = g_strndup ((const char *) data + 1, size - 1);
  a = address_parse_flags (text, data[0] & 1 ? ADDRESS_LIBVIRT_READONLY : 0, &error);
  if (a == NULL) {
    check (error != NULL && error->domain == FERRY_ERROR && error->code == FERRY_EXIT_USAGE);
    check (error->message != NULL && error->message[0] != '\0');
    return 0;
  }
  check (error == NULL);
  check_address (a);
  return 0;
}
