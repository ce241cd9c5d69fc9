/* ferry: running what a command line (ferry's own or a personality's) asked for. */
#ifndef FERRY_RUN_H
#define FERRY_RUN_H

#include "options.h"

/* Defaults for every personality (FERRY_NO_SPLICE=1 turns splice off). */
void ferry_options_init (struct ferry_options *options);

/* Run the relay(s) the options describe; returns the exit code. */
int ferry_run (const struct ferry_options *options);

#endif
