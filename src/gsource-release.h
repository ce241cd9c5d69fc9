/* ferry: the one place where a GSource reference is dropped. */
#ifndef FERRY_GSOURCE_RELEASE_H
#define FERRY_GSOURCE_RELEASE_H

#include <glib.h>

/* Destroy @source (detach it from its context) and drop the caller's
 * reference.  Safe to call from inside the source's own callback. */
void gsource_release (GSource *source);

#endif
