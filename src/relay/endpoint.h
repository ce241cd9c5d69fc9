/* ferry: one end of a relay, behind an ops table.
 *
 * The relay never asks which kind of endpoint it holds: it reads, writes,
 * half-closes and states which readiness it wants through @ops.  The
 * endpoint calls @ready back when it may be able to make progress. */
#ifndef FERRY_ENDPOINT_H
#define FERRY_ENDPOINT_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <glib.h>

struct endpoint;

/* @readable / @writable are only ever true for a direction the relay asked
 * for with set_interest, so an unrequested HUP or ERR cannot spin.  Both
 * are false once, when the endpoint finds its peer gone (peer_gone) while
 * the relay wanted nothing, or when an ssh session processed input. */
typedef void (*endpoint_ready_fn) (void *data, struct endpoint *ep,
                                   bool readable, bool writable);

struct endpoint_ops {
  /* Like readv(2): bytes read, 0 at end of stream, or -1 with errno set
   * (EAGAIN when nothing is ready; ENOBUFS when it holds more than @iov
   * can take: offer more after a drain, which an empty buffer of the size
   * the relay gave it always is). */
  ssize_t (*readv) (struct endpoint *ep, const struct iovec *iov, int iovcnt);
  /* Like writev(2): bytes written, or -1 with errno set. */
  ssize_t (*writev) (struct endpoint *ep, const struct iovec *iov, int iovcnt);
  /* Tell the peer no more bytes will come (shutdown(SHUT_WR), or closing
   * a write-only fd).  Returns 0 or -1 with errno set. */
  int (*shutdown_write) (struct endpoint *ep);
  /* Ask for @ready callbacks for these directions.  Cheap to call with an
   * unchanged pair: only a change touches the main loop. */
  void (*set_interest) (struct endpoint *ep, bool want_read, bool want_write);
  /* Release every resource (watches, fds) and the endpoint itself. */
  void (*free) (struct endpoint *ep);
  /* Optional (NULL for most kinds): once the stream has ended, the exit
   * code the peer asks for (a remote command's non-zero status,
   * already reported on stderr), or 0. */
  int (*exit_code) (struct endpoint *ep);
  /* Optional: a non-blocking fd that splice(2) may read from (!@write) or
   * write to (@write) in place of readv/writev, or -1.  Endpoints that
   * must see the bytes (framing, encryption) leave this NULL. */
  int (*splice_fd) (struct endpoint *ep, bool write);
  /* Optional: whether the peer has closed both directions, so nothing
   * written now can be read (a UNIX socket's HUP, a reset TCP connection,
   * a closed ssh channel), as opposed to an EOF that only ends what it
   * sends.  NULL: never known. */
  bool (*peer_gone) (struct endpoint *ep);
  /* Optional: bytes already written may still be on their way, and would
   * be lost if the endpoint were freed now (an ssh channel whose EOF the
   * server has not yet answered with its close: sshd drops what it still
   * holds when the session ends).  The relay waits, and hears of the change
   * through @ready.  NULL: never. */
  bool (*delivering) (struct endpoint *ep);
  /* Optional: why reads fail now was already said on stderr (an ssh
   * session's death, reported once for all its channels), so a failed read
   * adds no line of its own.  NULL: never. */
  bool (*failure_reported) (struct endpoint *ep);
};

struct endpoint {
  const struct endpoint_ops *ops;
  char *name;                 /* for messages: "stdin", "stdout", "unix:/run/x.sock" */
  char *write_name;           /* when reads and writes go to different
                                 things (stdin/stdout): the write side's name;
                                 NULL means the same as @name */
  endpoint_ready_fn ready;    /* set by whoever drives the endpoint */
  void *ready_data;
  size_t read_buffer_min;     /* the buffer its reads fill gets at least this
                                 size (an ssh channel's receive window); 0
                                 for the configured size */
};

static inline const char *
endpoint_write_name (const struct endpoint *ep)
{
  return ep->write_name ? ep->write_name : ep->name;
}

static inline void
endpoint_free (struct endpoint *ep)
{
  if (ep)
    ep->ops->free (ep);
}

static inline int
endpoint_splice_fd (struct endpoint *ep, bool write)
{
  return ep->ops->splice_fd ? ep->ops->splice_fd (ep, write) : -1;
}

static inline bool
endpoint_peer_gone (struct endpoint *ep)
{
  return ep->ops->peer_gone ? ep->ops->peer_gone (ep) : false;
}

static inline bool
endpoint_delivering (struct endpoint *ep)
{
  return ep->ops->delivering ? ep->ops->delivering (ep) : false;
}

static inline bool
endpoint_failure_reported (struct endpoint *ep)
{
  return ep->ops->failure_reported ? ep->ops->failure_reported (ep) : false;
}

/* Shared by every endpoint kind's free(). */
void endpoint_clear_names (struct endpoint *ep);

typedef struct endpoint FerryEndpoint;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FerryEndpoint, endpoint_free)

#endif
