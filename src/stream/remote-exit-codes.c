/* ferry: the remote copy's exit codes (remote-exit-codes.h). */
#include <config.h>

#include "remote-exit-codes.h"

#include <glib.h>
#include <string.h>
#include <sys/wait.h>

#include "exit-codes.h"

/* Remote failures of the stream mode (20 to 23) become 30 to 33. */
#define REMOTE_CODE_OFFSET (FERRY_EXIT_REMOTE_NBD - FERRY_EXIT_NBD)

int
remote_exit_code (int status, const char *signal, int stop_code, bool same_host)
{
  if (status == 0)
    return FERRY_EXIT_OK;
  if (stop_code && (status == stop_code || (status < 0 && signal == NULL) ||
                    (status < 0 && g_strcmp0 (signal, sigabbrev_np (stop_code - 128)) == 0)))
    return stop_code;
  /* On this host its codes are its own; killed, it said nothing, and
   * report_halves says how it ended. */
  if (same_host)
    return status >= 0 ? status : FERRY_EXIT_REMOTE;
  /* Its export failed, and its message came through. */
  if (status == FERRY_EXIT_CONNECT)
    return FERRY_EXIT_REMOTE_NBD;
  if (status >= FERRY_EXIT_NBD && status <= FERRY_EXIT_TOO_SMALL)
    return status + REMOTE_CODE_OFFSET;
  return FERRY_EXIT_REMOTE;
}

int
remote_child_code (int wstatus)
{
  return WIFEXITED (wstatus) ? WEXITSTATUS (wstatus) : 128 + WTERMSIG (wstatus);
}

int
remote_copy_exit_code (bool upload, int local, int remote, int relay, int stop_code,
                       bool same_host)
{
  int sender = upload ? local : remote, receiver = upload ? remote : local;
  int broken = upload && !same_host ? FERRY_EXIT_STREAM + REMOTE_CODE_OFFSET : FERRY_EXIT_STREAM;
  bool stopped = false;

  if (stop_code) {
    if (receiver == stop_code || receiver == broken)
      receiver = FERRY_EXIT_OK, stopped = true;
    if (sender == stop_code)
      sender = FERRY_EXIT_OK, stopped = true;
    if (relay != FERRY_EXIT_OK)
      relay = FERRY_EXIT_OK, stopped = true;
  }
  /* --idle-timeout: the relay gave up on an idle copy, and the halves'
   * failures (a remote half without a status, a cut stream) follow. */
  if (relay == FERRY_EXIT_TIMEOUT)
    return relay;
  if (receiver != FERRY_EXIT_OK && !(receiver == broken && sender != FERRY_EXIT_OK))
    return receiver;
  if (sender != FERRY_EXIT_OK)
    return sender;
  return stopped ? stop_code : relay;
}
