/* ferry: the one place where a GSource is attached, and the one place where
 * a GSource reference is dropped. */
#ifndef FERRY_GSOURCE_RELEASE_H
#define FERRY_GSOURCE_RELEASE_H

#include <glib.h>

/* Attach @source to the calling thread's default main context: the main
 * loop's, or a forward worker's (forward.c), so that code which creates
 * sources runs unchanged on either. */
void gsource_attach (GSource *source);

/* Destroy @source (detach it from its context) and drop the caller's
 * reference.  Safe to call from inside the source's own callback. */
void gsource_release (GSource *source);

#endif
