/* ferry: the remote stream mode, a disk copy over ferry's own ssh://
 * transport in one command:
 *   ferry --nbd-send=SRC --remote-nbd-receive=DST ssh://[USER@]HOST[:PORT]   upload
 *   ferry --nbd-receive=DST --remote-nbd-send=SRC ssh://[USER@]HOST[:PORT]   download
 * The remote half is ferry's stream mode, run by --remote-helper (default
 * ferry) over an exec channel. */
#ifndef FERRY_NBD_REMOTE_H
#define FERRY_NBD_REMOTE_H

#include <stdbool.h>

#include "options.h"

/* True when --remote-nbd-send or --remote-nbd-receive was given. */
bool nbd_remote_requested (const struct nbd_stream_options *options);

/* Runs the copy to or from @options->address (an ssh:// session address)
 * and returns the exit code: the failing side's (ferry(1), "The remote
 * stream mode"). */
int nbd_remote_main (const struct ferry_options *options);

#endif
