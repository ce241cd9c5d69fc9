/* ferry: a worker thread's kick of the copy loop's pump (the kicked flag
 * of nbd_kick_source_new, nbd-aio-source.h). */
#ifndef FERRY_KICK_H
#define FERRY_KICK_H

#include <glib.h>
#include <stdbool.h>

/* Set *@kicked, and wake the default main context only if the flag was
 * clear: while it is set, the loop has been woken already (by whoever set
 * it) and has yet to clear it, which it does before it looks at the work.
 * One syscall per wake-up, not per job. */
static inline void
kick_from_thread (bool *kicked)
{
  if (!__atomic_exchange_n (kicked, true, __ATOMIC_SEQ_CST))
    g_main_context_wakeup (NULL);
}

#endif
