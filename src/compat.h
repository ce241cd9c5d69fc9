/* ferry: personalities that take another program's command line.
 *
 * main() picks one by the name ferry was run as (a link named "nc" or
 * "virt-ssh-helper"), or by "ferry --compat=NAME ARGS...".  Each maps its
 * command line to struct ferry_options and calls ferry_run(); messages
 * start with "NAME: ", and the exit code is only 0 or 1, as the original's
 * (and nc's 2 for an option of netcat's it does not have). */
#ifndef FERRY_COMPAT_H
#define FERRY_COMPAT_H

#include <stdbool.h>

#include "options.h"

/* @argv[0] is the personality's name, the rest its arguments. */
int compat_nc_main (int argc, char **argv);
int compat_virt_ssh_helper_main (int argc, char **argv);

/* nc -u (compat-nc-udp.c): HOST PORT to connect to, or with -l to bind;
 * @options as nc's flags set them, @quit_seconds -q's (-1: none).  Returns
 * ferry's exit code. */
int compat_nc_udp (const struct ferry_options *options, const char *host,
                   const char *port, int quit_seconds, bool read_stdin);

/* What a personality returns for ferry's exit code @code: 0 or 1. */
static inline int
compat_exit_code (int code)
{
  return code == 0 ? 0 : 1;
}

#endif
