/* ferry: the image commands, in the shape of cp, scp and sha256sum:
 *   ferry copy [OPTIONS] SRC DST
 *   ferry digest [OPTIONS] IMAGE...
 * Each image is a local path (a file or a block device, raw or in one of
 * qemu's formats), [USER@]HOST:PATH (scp's form), ssh://[USER@]HOST[:PORT]/PATH,
 * an NBD URI, or '[ CMD ARGS... ]'.  They are spelt out as the stream
 * mode's options (--nbd-send, --nbd-receive, --remote-nbd-*, --nbd-digest),
 * which run them. */
#ifndef FERRY_COPY_H
#define FERRY_COPY_H

#include "options.h"

/* "copy" or "digest" as argv[1]: take it out of argv and return it, else NULL. */
const char *image_command_take (int *argc, char **argv);

/* Run `ferry copy` with @args, SRC and DST (@options from the rest of the
 * command line), and return the exit code. */
int copy_main (struct ferry_options *options, char **args, int n_args);

/* Run `ferry digest` over @args and return the first failure's exit code,
 * or 0. */
int digest_main (struct ferry_options *options, char **args, int n_args);

#endif
