/* ferry: the GSources that drive libnbd from the glib main loop
 * (nbd-aio-source.c). */
#ifndef FERRY_NBD_AIO_SOURCE_H
#define FERRY_NBD_AIO_SOURCE_H

#ifdef FERRY_EXECUTABLE
#error "libnbd.h belongs to the stream module: ferry's executable must not include it"
#endif

#include <glib.h>
#include <libnbd.h>
#include <stdbool.h>

/* A GSource that drives @nbd; it calls @on_failure
 * once if the connection fails, with the reason. */
GSource *nbd_aio_source_new (struct nbd_handle *nbd,
                             void (*on_failure) (void *data, const char *reason),
                             void *data);

/* A GSource that runs @pump (returning G_SOURCE_CONTINUE) once per
 * main-loop turn in which *@kicked was set, and clears it first.  Completion
 * callbacks set the flag: the follow-up work then runs outside the
 * handle's lock. */
GSource *nbd_kick_source_new (bool *kicked, GSourceFunc pump, void *data);

#endif
