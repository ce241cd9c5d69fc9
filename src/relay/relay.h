/* ferry: a relay joins two endpoints with two one-way pumps.  Many relays
 * can share one main loop.
 *
 * Vocabulary, used throughout src/:
 *  - the two ends: "local" is the side ferry serves: its stdio, or with
 *    -l ADDR TARGET each accepted connection (forward.c).  "remote" is the
 *    other one: what ferry connected to (ADDRESS or TARGET: a socket, an
 *    ssh:// channel, the NBD server), or what -l ADDR alone accepted.
 *  - the two directions: "up" is local -> remote, "down" remote -> local.
 *  - a "peer" is whatever program is across one endpoint, at either end.
 *  - "client" and "server" name NBD roles only (nbd-framing.h): under --nbd
 *    the local end is the NBD client, so up carries the client's stream.
 *    The name "client" of forward's accepted endpoint and the command
 *    line's TARGET are user-visible, so they stay.
 *
 * End-of-stream rules (ferry(1), END OF STREAM); an EOF ends one
 * direction only, whichever end sends it:
 *  - local EOF: deliver what was read to remote, then half-close remote
 *    (unless half_close is false); keep relaying down.
 *  - remote EOF: deliver what was read to local, then close local's write
 *    side; keep relaying up until local EOF.
 *  - remote gone completely (endpoint_peer_gone: a UNIX socket's HUP, a
 *    reset, a closed ssh channel), or local's write side failed: stop
 *    reading local at once; what was read from it and cannot be delivered
 *    is counted and reported (exit 4).
 *  - a write that fails because its reader went away (EPIPE, ECONNRESET)
 *    with nothing buffered for it lost nothing: that direction ends, and
 *    it is no error unless bytes read after it are dropped.
 *  - half_close_timeout: once one direction is done, end the other after
 *    it has been idle that long (a TCP peer that closed looks half-closed).
 *  - done when both directions are finished: every byte read was written,
 *    or a failure was reported with the count of bytes that were not. */
#ifndef FERRY_RELAY_H
#define FERRY_RELAY_H

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

#include "endpoint.h"
#include "stats-value.h"
#include "nbd-relay.h"

struct relay_config {
  size_t buffer_size;         /* bytes per direction, allocated once */
  bool half_close;            /* shutdown(SHUT_WR) remote after local EOF */
  bool splice;                /* move bytes with splice(2) where both ends allow */
  unsigned idle_timeout;      /* seconds without traffic before giving up; 0 = never */
  bool idle_is_eof;           /* the idle timeout ends both directions as their
                                 EOFs would: exit 0 if nothing is buffered (nc -w) */
  unsigned half_close_timeout;  /* once one direction is done, seconds the other
                                   may stay idle before it is ended too (exit 0
                                   if nothing is left undelivered); 0 = never */
  bool remote_eof_ends_local; /* remote EOF also stops reading local (nc -l,
                                 as netcat-openbsd's listen mode does) */
  bool verbose;               /* print statistics when done */
  bool peers_report_loss;     /* a read or write that fails because its peer
                                 is gone (EPIPE, ECONNRESET) is counted, not
                                 reported: the peers say why themselves (the
                                 remote stream mode's halves) */
  const char *label;          /* prefix for messages, e.g. "connection 3"; may be NULL */
  struct nbd_config nbd;      /* --nbd: parse, check and count NBD */
};

struct relay;

/* Called once, from the main loop (never from inside relay_new), with the
 * relay's exit code (exit-codes.h).  The callee may free the relay. */
typedef void (*relay_done_fn) (struct relay *relay, int exit_code, void *data);

/* Takes ownership of both endpoints. */
struct relay *relay_new (struct endpoint *local, struct endpoint *remote,
                         const struct relay_config *config,
                         relay_done_fn done, void *data);
void relay_free (struct relay *relay);

/* Stop reading both ends; deliver what is buffered, then half-close both
 * destinations as at end of stream.  done follows once that is over (for
 * SIGTERM: let live relays finish what they hold). */
void relay_drain (struct relay *relay);

/* SIGUSR1: each direction's statistics so far, as --verbose prints at the
 * end. */
void relay_print_stats (const struct relay *relay);

/* --stats=json: the counts that relay_print_stats prints, as an object
 * (ferry(1), STATISTICS): "seconds", "up" and "down", and with --nbd
 * "nbd".  The caller owns it. */
StatsValue *relay_stats_json (const struct relay *relay);

/* Add @one's (relay_stats_json's) byte and wait counts, up and down, to
 * @total's (a forwarder's or -l -k's sum over its connections). */
void relay_stats_json_add (StatsValue *total, StatsValue *one);

/* Give up now: one line "LABEL: WHY (N bytes buffered for X, M for Y not
 * delivered)", then done with @exit_code.  Nothing if already finished. */
void relay_abandon (struct relay *relay, const char *why, int exit_code);

/* Bytes delivered so far, up and down (--progress
 * reads them; the pumps keep them anyway). */
void relay_get_bytes (const struct relay *relay, guint64 *up, guint64 *down);

#endif
