/* ferry: systemd socket activation. */
#include <config.h>

#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "socket-activation.h"

#include "error.h"

bool
socket_activation_take (struct socket_activation *sa, GError **error)
{
  g_autofree char *pid_text = g_strdup (g_getenv ("LISTEN_PID"));
  g_autofree char *fds_text = g_strdup (g_getenv ("LISTEN_FDS"));
  g_autofree char *names_text = g_strdup (g_getenv ("LISTEN_FDNAMES"));
  g_auto (GStrv) names = NULL;
  guint64 pid, n;
  bool named_all;

  sa->n_fds = 0;
  sa->names = NULL;
  g_unsetenv ("LISTEN_PID");
  g_unsetenv ("LISTEN_FDS");
  g_unsetenv ("LISTEN_FDNAMES");
  /* Variables meant for another process (our parent) are not ours. */
  if (pid_text == NULL || !g_ascii_string_to_unsigned (pid_text, 10, 1, G_MAXINT, &pid, NULL) ||
      pid != (guint64) getpid ())
    return true;
  if (fds_text == NULL ||
      !g_ascii_string_to_unsigned (fds_text, 10, 0, G_MAXINT - SOCKET_ACTIVATION_FIRST_FD,
                                   &n, NULL)) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "invalid LISTEN_FDS '%s' from socket activation: expected a number of fds",
                 fds_text ? fds_text : "");
    return false;
  }
  if (names_text)
    names = g_strsplit (names_text, ":", -1);
  sa->n_fds = (int) n;
  /* A name list that does not match the fds is ignored. */
  named_all = names && g_strv_length (names) == n;
  sa->names = g_new0 (char *, n + 1);
  for (guint i = 0; i < n; i++) {
    bool named = named_all && names[i][0] != '\0';
    sa->names[i] = named ? g_strdup (names[i])
                         : g_strdup_printf ("fd:%u", SOCKET_ACTIVATION_FIRST_FD + i);
  }
  return true;
}

void
socket_activation_clear (struct socket_activation *sa)
{
  g_clear_pointer (&sa->names, g_strfreev);
  sa->n_fds = 0;
}
