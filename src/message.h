/* ferry: one-line diagnostics on stderr, prefixed with the program name
 * ("ferry", "nc" or "virt-ssh-helper", whichever personality runs). */
#ifndef FERRY_MESSAGE_H
#define FERRY_MESSAGE_H

#include <glib.h>

void ferry_error (const char *fmt, ...) G_GNUC_PRINTF (1, 2);

#endif
