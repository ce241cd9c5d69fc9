/* ferry: libFuzzer target over the libvirt URI mapping (src/transport/virt-uri.c).
 *
 * Input: one byte of settings, then the URI text (cut at the first NUL).
 * Settings bit 0 asks for the read-only socket; bits 1-2 set or unset
 * XDG_RUNTIME_DIR and XDG_CACHE_HOME, which session URIs depend on.
 * virt_uri_socket must never crash or leak, must return a socket or set
 * one usage error, and may only answer for a text virt_uri_matches: a
 * socket, one of libvirt's "/libvirt/...-sock[-ro]" names unless
 * ?socket= named it (then anything, even empty, as libvirt takes it: the
 * address parser refuses an empty path). */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "virt-uri.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
check (bool ok)
{
  if (!ok)
    abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *uri = NULL, *socket = NULL, *lower = NULL;

  if (size < 1)
    return 0;
  if (data[0] & 2)
    g_setenv ("XDG_RUNTIME_DIR", "/run/user/1000", TRUE);
  else
    g_unsetenv ("XDG_RUNTIME_DIR");
  if (data[0] & 4)
    g_setenv ("XDG_CACHE_HOME", "/home/u/.cache", TRUE);
  else
    g_unsetenv ("XDG_CACHE_HOME");
  uri = g_strndup ((const char *) data + 1, size - 1);
  socket = virt_uri_socket (uri, data[0] & 1, &error);
  if (socket == NULL) {
    check (error != NULL && error->domain == FERRY_ERROR && error->code == FERRY_EXIT_USAGE);
    check (strstr (error->message, uri) != NULL ||
           g_str_has_prefix (error->message, "unknown remote mode '"));
    return 0;
  }
  check (error == NULL);
  check (virt_uri_matches (uri));
  lower = g_ascii_strdown (uri, -1);
  if (strstr (lower, "socket") == NULL)
    check (socket[0] == '/' && strstr (socket, "/libvirt/") != NULL &&
           (g_str_has_suffix (socket, "-sock") ||
            ((data[0] & 1) && g_str_has_suffix (socket, "-sock-ro"))));
  return 0;
}
