/* ferry: a prompt on the controlling terminal, never on stdio (which
 * carries data): ssh passwords and passphrases, nc -P's proxy password. */
#ifndef FERRY_TTY_PROMPT_H
#define FERRY_TTY_PROMPT_H

#include <stdbool.h>
#include <stddef.h>

/* Write @prompt to /dev/tty and read a line into @buf (@len bytes, NUL
 * included), without echo unless @echo.  Returns false without a
 * terminal, or once a stop signal has come (@buf then wiped). */
bool tty_prompt (const char *prompt, char *buf, size_t len, bool echo);

#endif
