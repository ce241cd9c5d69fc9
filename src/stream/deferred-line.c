/* ferry: a local half's deferred line (see deferred-line.h). */
#include <config.h>

#include "deferred-line.h"

#include <string.h>
#include <sys/socket.h>

#include <glib.h>

/* The packet: the reason, then after a NUL the place, if any. */
bool
deferred_line_send (int report_fd, const char *reason, const char *where)
{
  g_autoptr (GString) packet = g_string_new (reason);

  if (where) {
    g_string_append_c (packet, '\0');
    g_string_append (packet, where);
  }
  return send (report_fd, packet->str, packet->len, MSG_NOSIGNAL) == (ssize_t) packet->len;
}

bool
deferred_line_take (int fd, char **reason, char **where)
{
  ssize_t len = recv (fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
  char *packet;

  if (len <= 0)
    return false;
  packet = g_malloc (len + 1);
  len = recv (fd, packet, len, MSG_DONTWAIT);
  if (len <= 0) {
    g_free (packet);
    return false;
  }
  packet[len] = '\0';
  *reason = packet;
  *where = strlen (packet) < (size_t) len ? g_strdup (packet + strlen (packet) + 1) : NULL;
  return true;
}
