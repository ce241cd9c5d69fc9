/* ferry: a prompt on the controlling terminal (see tty-prompt.h). */
#include <config.h>

#include "tty-prompt.h"

#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "signal-watch.h"

bool
tty_prompt (const char *prompt, char *buf, size_t len, bool echo)
{
  int fd = signal_watch_stop_pending () ? -1 : open ("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  struct termios saved, quiet;
  bool restore = false;
  size_t n = 0;
  char ch;

  if (fd < 0 || len == 0)
    return fd >= 0 ? close (fd), false : false;
  if (!echo && tcgetattr (fd, &saved) == 0) {
    quiet = saved;
    quiet.c_lflag &= ~(tcflag_t) ECHO;
    restore = tcsetattr (fd, TCSAFLUSH, &quiet) == 0;
  }
  if (write (fd, prompt, strlen (prompt)) < 0)
    n = len;                  /* no terminal after all: fail below */
  /* Each key waited for by poll: read(2) on the terminal would go on
   * waiting after a stop signal (SA_RESTART). */
  while (n < len - 1 && signal_watch_poll (fd, POLLIN, -1) > 0 && read (fd, &ch, 1) == 1 &&
         ch != '\n')
    buf[n++] = ch;
  buf[n < len ? n : 0] = '\0';
  if (restore) {
    tcsetattr (fd, TCSAFLUSH, &saved);
    if (write (fd, "\n", 1) < 0)
      n = len;
  }
  close (fd);
  if (n < len && !signal_watch_stop_pending ())
    return true;
  explicit_bzero (buf, len);  /* what was typed before a stop signal */
  return false;
}
