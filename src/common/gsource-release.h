/* ferry: the one place where a GSource is attached, the one place where a
 * GSource reference is dropped, and the one way to make a timer. */
#ifndef FERRY_GSOURCE_RELEASE_H
#define FERRY_GSOURCE_RELEASE_H

#include <glib.h>

/* Attach @source to the calling thread's default main context: the main
 * loop's, or a forward worker's (forward.c), so that code which creates
 * sources runs unchanged on either. */
void gsource_attach (GSource *source);

/* A timer, attached as above, that fires after @seconds, and again every
 * @seconds for as long as @fn returns G_SOURCE_CONTINUE.  Millisecond
 * precision on purpose: g_timeout_source_new_seconds() may fire up to a
 * second early (it coalesces wakeups), which a timeout of a few seconds
 * would notice. */
GSource *gsource_timer_new (unsigned seconds, GSourceFunc fn, void *data);

/* Destroy @source (detach it from its context) and drop the caller's
 * reference.  Safe to call from inside the source's own callback. */
void gsource_release (GSource *source);

#endif
