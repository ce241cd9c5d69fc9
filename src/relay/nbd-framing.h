/* ferry: an incremental NBD stream parser, one per connection.
 *
 * The relay feeds it the bytes it has just read, in either direction, in
 * pieces of any size (one byte at a time works).  It never blocks, never
 * allocates after nbd_framing_new(), and never needs a whole message: it
 * keeps small fixed header buffers and counts the payload bytes left.
 *
 * Each call returns one step over a prefix of the bytes given:
 *   NBD_PASS    forward step.n bytes (possibly patched in place);
 *   NBD_DROP    remove step.n bytes from the stream;
 *   NBD_INSERT  put step.n bytes from step.insert into the stream here,
 *               before the remaining input (nothing is consumed).
 * Only --nbd-readonly ever drops or inserts.  A protocol violation fails
 * the call with a FERRY_EXIT_PROTOCOL error: one line naming the side
 * that broke the rules and how. */
#ifndef FERRY_NBD_FRAMING_H
#define FERRY_NBD_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>

/* Which NBD stream: the parser knows NBD's roles, not the relay's ends, and
 * its messages say "client sent ..." and "server sent ...", as proto.md
 * does.  The relay's up direction carries the client's stream and down the
 * server's (relay.h: under --nbd the local end is the NBD client), and
 * nbd-relay.c is the one place that maps one onto the other. */
enum nbd_dir {
  NBD_C2S,                    /* client -> server: options, requests */
  NBD_S2C,                    /* server -> client: greeting, replies */
};

enum nbd_action {
  NBD_PASS,
  NBD_DROP,
  NBD_INSERT,
};

struct nbd_step {
  enum nbd_action action;
  size_t n;                   /* bytes passed, dropped or inserted; 0 = nothing to do */
  const uint8_t *insert;      /* NBD_INSERT: valid until the next call */
};

/* The largest payload accepted when the server advertised no smaller one. */
#define NBD_MAX_PAYLOAD (32u * 1024 * 1024)
/* The largest option request or option reply accepted. */
#define NBD_MAX_OPTION (64u * 1024)
/* Requests that may be in flight at once on one connection. */
#define NBD_MAX_INFLIGHT 1024
/* The most bytes one NBD_INSERT step may ask for. */
#define NBD_MAX_INSERT 128

#define NBD_NAME_MAX 256
#define NBD_META_MAX 256

enum nbd_style {
  NBD_STYLE_UNKNOWN,
  NBD_STYLE_OLDSTYLE,
  NBD_STYLE_NEWSTYLE,         /* server did not offer fixed newstyle */
  NBD_STYLE_FIXED_NEWSTYLE,
};

/* What the handshake settled, for the stats summary. */
struct nbd_handshake_info {
  enum nbd_style style;
  bool negotiated;            /* the transmission phase was reached */
  bool tls;                   /* STARTTLS acknowledged: the rest is not inspected */
  bool structured;            /* NBD_OPT_STRUCTURED_REPLY acknowledged */
  bool extended;              /* NBD_OPT_EXTENDED_HEADERS acknowledged */
  bool have_export;           /* @size and @flags are known */
  uint64_t size;
  uint16_t flags;             /* transmission flags as the client received them */
  bool have_block_size;
  uint32_t min_block, pref_block, max_block;
  char export_name[NBD_NAME_MAX + 1];   /* truncated; UTF-8 from the client */
  char meta[NBD_META_MAX + 1];          /* selected meta contexts, comma-separated */
};

/* Counters for one command type.  Seconds run from the request header to
 * the final reply (the simple reply, or the chunk with NBD_REPLY_FLAG_DONE). */
struct nbd_cmd_stats {
  uint64_t ops;               /* replied requests */
  uint64_t bytes;             /* their lengths */
  uint64_t errors;            /* replies carrying an error */
  uint64_t refused;           /* answered EPERM by --nbd-readonly, never forwarded */
  uint64_t usec;              /* total request -> reply time */
  uint64_t inflight_sum;      /* requests in flight when each was sent (incl. itself) */
  unsigned inflight_max;
  uint64_t hole_bytes;        /* READ: bytes that came as NBD_REPLY_TYPE_OFFSET_HOLE */
  uint64_t busy_usec;         /* wall time with at least one in flight, until... */
  int64_t busy_since;         /* ...this moment (monotonic) when @inflight_now > 0 */
  unsigned inflight_now;      /* forwarded requests awaiting their reply */
};

/* Index 0..7 by command number; the last one counts every other command. */
#define NBD_STATS_CMDS 9

struct nbd_framing;

/* @readonly: enforce --nbd-readonly.  The only allocation the parser does. */
struct nbd_framing *nbd_framing_new (bool readonly);
void nbd_framing_free (struct nbd_framing *f);

/* Parse the start of @buf (@len bytes, may be 0 to collect pending inserts)
 * and say what to do with it.  @room is how many bytes the caller can
 * insert now; injected replies wait for a step with enough room.  A request
 * header held back by the read-only guard is always re-inserted, so callers
 * must keep NBD_MAX_INSERT bytes of room for it. */
bool nbd_framing_feed (struct nbd_framing *f, enum nbd_dir dir,
                       uint8_t *buf, size_t len, size_t room,
                       struct nbd_step *step, GError **error);

/* How many of the next bytes in @dir the parser need not see: the rest of
 * a payload it only counts (once it holds the first bytes it keeps), or
 * everything after STARTTLS.  0 when it must see the next byte. */
uint64_t nbd_framing_opaque (const struct nbd_framing *f, enum nbd_dir dir);

/* @n bytes in @dir (at most nbd_framing_opaque()) went by unseen: count
 * them as passed, as nbd_framing_feed() would have. */
void nbd_framing_skip (struct nbd_framing *f, enum nbd_dir dir, size_t n);

/* The direction ended (EOF).  Fails when that cut a message in half, or
 * when the server left before the handshake finished. */
bool nbd_framing_eof (struct nbd_framing *f, enum nbd_dir dir, GError **error);

/* The server's greeting has arrived completely. */
bool nbd_framing_greeted (const struct nbd_framing *f);

const struct nbd_handshake_info *nbd_framing_handshake (const struct nbd_framing *f);
const struct nbd_cmd_stats *nbd_framing_cmd_stats (const struct nbd_framing *f,
                                                   unsigned index);
/* "read", "write", ... or "other" for the last index. */
const char *nbd_cmd_name (unsigned index);

typedef struct nbd_framing NbdFraming;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (NbdFraming, nbd_framing_free)

#endif
