/* ferry: the file kind of export (export-ops.h): a regular file or a
 * block device, read and written by ferry itself with no NBD server, as
 * nbdcopy's file backend (libnbd's copy/file-ops.c).
 *
 * The commands run on a small pool of worker threads: pread, pwrite,
 * fallocate or BLKZEROOUT, fdatasync, and SEEK_DATA/SEEK_HOLE for the
 * map.  A worker puts each command it ran on a queue and wakes the main
 * loop through an eventfd; there its callbacks run, as libnbd's would.
 *
 * Written data goes behind: each write's writeback starts at once, and
 * once WRITE_BEHIND more bytes have been written it is waited for and its
 * pages dropped from the cache, as nbdcopy does.  A copy then recycles a
 * few MiB of page cache instead of dirtying the whole image, so the final
 * fdatasync has little left to do and the cache keeps what it held. */
#include <config.h>

#include <glib-unix.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "export-ops.h"
#include "gsource-release.h"
#include "nbd-export.h"

/* Enough to keep a disk's queue busy; the in-flight bounds do the rest. */
#define WORKERS 4
/* A regular file's buffered writes take its inode's lock one at a time:
 * more writers only spin on it (a dense 1 GiB stream into ext4: 1.8 s
 * with 4, of which 16% in rwsem_spin_on_owner). */
#define FILE_WRITERS 1
/* Zeros written where the file cannot be zeroed otherwise, at a time. */
#define ZERO_CHUNK (1024 * 1024)
/* The longest extent that one base:allocation entry holds here. */
#define MAX_ENTRY (1u << 31)
/* Bytes written whose writeback may still run (a dense 2 GiB copy into
 * ext4 on this VM: 1.2 s with 8 MiB behind, 3.8-5.9 s with all of it
 * left to the final fdatasync). */
#define WRITE_BEHIND (8 * 1024 * 1024)
/* The ranges that write-behind tracks: enough for WRITE_BEHIND in
 * 64 KiB writes. */
#define BEHIND_SLOTS 128

/* The written ranges whose pages are still in the cache, oldest first. */
struct write_behind {
  GMutex lock;
  uint64_t offset[BEHIND_SLOTS], count[BEHIND_SLOTS];
  unsigned first, n;          /* the ring's oldest slot and its length */
  uint64_t bytes;             /* the sum of the ranges' counts */
};

/* The file kind's state (struct nbd_export's kind). */
struct file_kind {
  int fd;
  bool block_device;          /* else a regular file */
  GThreadPool *pool;          /* WORKERS threads (FILE_WRITERS for a regular
                                 DEST), running struct file_task */
  GAsyncQueue *completed;     /* struct file_task that a worker ran */
  int wake;                   /* an eventfd, written after a push that found
                                 @wake_pending clear */
  bool wake_pending;          /* (atomic) @wake was written, and on_wake has
                                 not taken the queue since */
  GSource *wake_source;       /* watches @wake on the main loop: the callbacks */
  int closing;                /* (atomic) the export closes: the tasks still
                                 queued are dropped unrun */
  struct write_behind behind; /* the writes whose pages are still cached */
  uint64_t untouched_from;    /* a regular file's: from here on it has been
                                 past its end since it was opened, and never
                                 written, so it reads as zeros (a new DEST
                                 from 0); on the main loop only */
};

enum file_op { FILE_PREAD, FILE_PWRITE, FILE_ZERO, FILE_FLUSH, FILE_MAP };

/* One command, from the ops through a worker back to the main loop. */
struct file_task {
  enum file_op op;
  struct file_kind *f;
  uint8_t *buf;               /* FILE_PREAD's, FILE_PWRITE's (the caller's) */
  uint64_t offset, count;
  bool allocate;              /* FILE_ZERO: not as a hole (--allocated) */
  GArray *entries;            /* FILE_MAP: uint32_t pairs, length and flags */
  nbd_extent_callback extent; /* FILE_MAP */
  nbd_completion_callback done;
  int error;                  /* the errno, 0 on success */
};

/* All of @count bytes, retrying short transfers. */
static int
transfer (int fd, bool write, uint8_t *buf, uint64_t count, uint64_t offset)
{
  while (count > 0) {
    ssize_t n = write ? pwrite (fd, buf, count, offset) : pread (fd, buf, count, offset);
    if (n == -1 && errno == EINTR)
      continue;
    if (n == -1)
      return errno;
    /* A read at the end: the file shrank (nbd_export_strerror). */
    if (n == 0)
      return write ? ENOSPC : ENODATA;
    buf += n;
    count -= n;
    offset += n;
  }
  return 0;
}

static int
write_zeros (int fd, uint64_t count, uint64_t offset)
{
  g_autofree uint8_t *zeros = g_malloc0 (MIN (count, ZERO_CHUNK));

  for (uint64_t n; count > 0; count -= n, offset += n) {
    int error;
    n = MIN (count, ZERO_CHUNK);
    error = transfer (fd, true, zeros, n, offset);
    if (error)
      return error;
  }
  return 0;
}

/* Wait for the writeback of [@offset, @offset + @count) and drop its
 * pages.  Advice only: a file system without it copies as before. */
static void
drop_written (int fd, uint64_t offset, uint64_t count)
{
  if (sync_file_range (fd, offset, count, SYNC_FILE_RANGE_WAIT_BEFORE |
                       SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) == 0)
    posix_fadvise (fd, offset, count, POSIX_FADV_DONTNEED);
}

/* [@offset, @offset + @count) was written: start its writeback, and
 * drop the oldest ranges once more than WRITE_BEHIND is behind. */
static void
write_behind (struct file_kind *f, uint64_t offset, uint64_t count)
{
  struct write_behind *w = &f->behind;
  unsigned slot;

  if (sync_file_range (f->fd, offset, count, SYNC_FILE_RANGE_WRITE) == -1)
    return;
  g_mutex_lock (&w->lock);
  while (w->n > 0 && (w->n == BEHIND_SLOTS || w->bytes + count > WRITE_BEHIND)) {
    uint64_t old_offset = w->offset[w->first], old_count = w->count[w->first];
    w->first = (w->first + 1) % BEHIND_SLOTS;
    w->n--;
    w->bytes -= old_count;
    /* Another writer may add meanwhile: the ring is consistent. */
    g_mutex_unlock (&w->lock);
    drop_written (f->fd, old_offset, old_count);
    g_mutex_lock (&w->lock);
  }
  slot = (w->first + w->n) % BEHIND_SLOTS;
  w->offset[slot] = offset;
  w->count[slot] = count;
  w->n++;
  w->bytes += count;
  g_mutex_unlock (&w->lock);
}

/* This way of zeroing is not there: try the next. */
static bool
unsupported (int error)
{
  return error == EOPNOTSUPP || error == ENOSYS || error == ENOTTY || error == EINVAL;
}

/* A block device: BLKZEROOUT.  A regular file: a hole unless @allocate,
 * else allocated zeros.  Else (or misaligned) written zeros. */
static int
zero_range (struct file_kind *f, uint64_t count, uint64_t offset, bool allocate)
{
  if (f->block_device) {
    uint64_t range[2] = { offset, count };
    if (ioctl (f->fd, BLKZEROOUT, range) == 0)
      return 0;
    if (!unsupported (errno))
      return errno;
  } else {
    if (!allocate &&
        fallocate (f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, count) == 0)
      return 0;
    if (!allocate && !unsupported (errno))
      return errno;
    if (fallocate (f->fd, FALLOC_FL_ZERO_RANGE, offset, count) == 0)
      return 0;
    if (!unsupported (errno))
      return errno;
  }
  return write_zeros (f->fd, count, offset);
}

static void
add_extent (GArray *entries, uint64_t length, bool hole)
{
  while (length > 0) {
    uint32_t entry[2] = { MIN (length, MAX_ENTRY),
                          hole ? LIBNBD_STATE_HOLE | LIBNBD_STATE_ZERO : 0 };
    g_array_append_vals (entries, entry, 2);
    length -= entry[0];
  }
}

/* The map of [@offset, @offset + @count) of a regular file, from
 * SEEK_DATA and SEEK_HOLE, as base:allocation's entries. */
static int
map_range (struct file_kind *f, uint64_t offset, uint64_t count, GArray *entries)
{
  uint64_t end = offset + count;
  struct stat st;

  while (offset < end) {
    off_t data = lseek (f->fd, offset, SEEK_DATA), hole;
    uint64_t next;

    /* ENXIO: only a hole after @offset, to the end of the file, or no
     * file there any more: it shrank (nbd_export_strerror). */
    if (data == -1 && errno != ENXIO)
      return errno;
    if (data == -1 && fstat (f->fd, &st) == -1)
      return errno;
    if (data == -1 && (uint64_t) st.st_size < end)
      return ENODATA;
    next = data == -1 ? end : MIN ((uint64_t) data, end);
    if (next > offset) {
      add_extent (entries, next - offset, true);
      offset = next;
      continue;
    }
    hole = lseek (f->fd, offset, SEEK_HOLE);
    if (hole == -1)
      return errno;
    /* Not past @offset: the file changed between the two seeks. */
    next = (uint64_t) hole > offset ? MIN ((uint64_t) hole, end) : end;
    add_extent (entries, next - offset, false);
    offset = next;
  }
  return 0;
}

static void
run_task (gpointer data, gpointer user_data)
{
  struct file_task *t = data;
  struct file_kind *f = t->f;
  uint64_t one = 1;

  if (__atomic_load_n (&f->closing, __ATOMIC_ACQUIRE)) {
    t->error = ECANCELED;
  } else {
    switch (t->op) {
    case FILE_PREAD:
      t->error = transfer (f->fd, false, t->buf, t->count, t->offset);
      break;
    case FILE_PWRITE:
      t->error = transfer (f->fd, true, t->buf, t->count, t->offset);
      if (!t->error)
        write_behind (f, t->offset, t->count);
      break;
    case FILE_ZERO:
      t->error = zero_range (f, t->count, t->offset, t->allocate);
      break;
    case FILE_FLUSH:
      t->error = fdatasync (f->fd) == -1 ? errno : 0;
      break;
    case FILE_MAP:
      t->error = map_range (f, t->offset, t->count, t->entries);
      break;
    }
  }
  g_async_queue_push (f->completed, t);
  if (__atomic_exchange_n (&f->wake_pending, true, __ATOMIC_SEQ_CST))
    return;
  /* Fails only if the counter would overflow: the main loop wakes anyway. */
  if (write (f->wake, &one, sizeof one) == -1)
    return;
}

static void
task_free (struct file_task *t)
{
  if (t->extent.free)
    t->extent.free (t->extent.user_data);
  if (t->done.free)
    t->done.free (t->done.user_data);
  if (t->entries)
    g_array_unref (t->entries);
  g_free (t);
}

/* On the main loop: the callbacks of the commands that the workers ran. */
static gboolean
on_wake (gint fd, GIOCondition condition, gpointer data)
{
  struct file_kind *f = data;
  struct file_task *t;
  uint64_t count;

  if (read (fd, &count, sizeof count) == -1 && errno != EAGAIN)
    return G_SOURCE_CONTINUE;
  /* Before the queue is taken: a task pushed from now on writes @wake. */
  __atomic_store_n (&f->wake_pending, false, __ATOMIC_SEQ_CST);
  while ((t = g_async_queue_try_pop (f->completed))) {
    if (t->op == FILE_MAP && !t->error)
      t->extent.callback (t->extent.user_data, LIBNBD_CONTEXT_BASE_ALLOCATION, t->offset,
                          (uint32_t *) t->entries->data, t->entries->len, &t->error);
    t->done.callback (t->done.user_data, &t->error);
    task_free (t);
  }
  return G_SOURCE_CONTINUE;
}

static struct file_task *
task_new (enum file_op op, uint64_t count, uint64_t offset, nbd_completion_callback done)
{
  struct file_task *t = g_new0 (struct file_task, 1);

  t->op = op;
  t->count = count;
  t->offset = offset;
  t->done = done;
  return t;
}

static bool
submit (struct nbd_export *e, struct file_task *t, int *error)
{
  struct file_kind *f = e->kind;

  t->f = f;
  /* An exclusive pool's threads are all there: a push does not fail. */
  if (!g_thread_pool_push (f->pool, t, NULL)) {
    *error = EAGAIN;
    g_free (t);
    return false;
  }
  return true;
}

static bool
file_pread (struct nbd_export *e, struct nbd_conn *c, void *buf, uint64_t count,
            uint64_t offset, nbd_completion_callback done, int *error)
{
  struct file_task *t = task_new (FILE_PREAD, count, offset, done);

  t->buf = buf;
  return submit (e, t, error);
}

static bool
file_pwrite (struct nbd_export *e, struct nbd_conn *c, const void *buf, uint64_t count,
             uint64_t offset, nbd_completion_callback done, int *error)
{
  struct file_kind *f = e->kind;
  struct file_task *t = task_new (FILE_PWRITE, count, offset, done);

  /* Only what lies past every write stays untouched. */
  if (offset + count > f->untouched_from)
    f->untouched_from = offset + count;

  /* Only read from: transfer writes from it. */
  t->buf = (uint8_t *) buf;
  return submit (e, t, error);
}

static bool
file_zero (struct nbd_export *e, struct nbd_conn *c, uint64_t count, uint64_t offset,
           bool allocate, nbd_completion_callback done, int *error)
{
  struct file_kind *f = e->kind;
  struct file_task *t;

  /* A hole already (a new DEST's): done at once, as an NBD command may be,
   * with no punch and no trip through a worker. */
  if (!allocate && offset >= f->untouched_from) {
    int none = 0;
    done.callback (done.user_data, &none);
    if (done.free)
      done.free (done.user_data);
    return true;
  }
  t = task_new (FILE_ZERO, count, offset, done);

  t->allocate = allocate;
  return submit (e, t, error);
}

static bool
file_flush (struct nbd_export *e, struct nbd_conn *c, nbd_completion_callback done,
            int *error)
{
  return submit (e, task_new (FILE_FLUSH, 0, 0, done), error);
}

static bool
file_block_status (struct nbd_export *e, struct nbd_conn *c, uint64_t count, uint64_t offset,
                   nbd_extent_callback extent, nbd_completion_callback done, int *error)
{
  struct file_task *t = task_new (FILE_MAP, count, offset, done);

  t->extent = extent;
  t->entries = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  return submit (e, t, error);
}

static bool
file_resize (struct nbd_export *e, uint64_t size, GError **error)
{
  struct file_kind *f = e->kind;

  if (size < f->untouched_from)
    f->untouched_from = size;
  if (ftruncate (f->fd, size) == -1) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_NBD, "%s: cannot truncate it to %"
                 PRIu64 " bytes: %s", e->name, size, g_strerror (errno));
    return false;
  }
  e->size = size;
  return true;
}

/* @fd's size, if it is a regular file or a block device. */
static bool
file_size (struct nbd_export *e, int fd, const struct stat *st, uint64_t *size,
           GError **error)
{
  if (S_ISREG (st->st_mode)) {
    *size = st->st_size;
    return true;
  }
  if (S_ISBLK (st->st_mode) && ioctl (fd, BLKGETSIZE64, size) == 0)
    return true;
  g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot open %s: %s", e->name,
               S_ISBLK (st->st_mode) ? g_strerror (errno)
               : S_ISDIR (st->st_mode) ? g_strerror (EISDIR)
               : "not a regular file or a block device");
  return false;
}

static bool
file_open (struct nbd_export *e, const struct nbd_stream_options *options, const char *path,
           bool writing, GError **error)
{
  /* A DEST that is not there becomes a new regular file (O_EXCL: to know
   * that this open made it; a name that O_EXCL finds taken, such as a
   * symlink to a file yet to be made, is opened as before).  O_NONBLOCK: a
   * FIFO opens at once, to be refused (file_size), rather than waiting for
   * its other end; files and block devices ignore it. */
  int flags = (writing ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK;
  int fd = writing ? open (path, flags | O_CREAT | O_EXCL, 0666) : -1;
  g_autoptr (GError) pool_error = NULL;
  struct file_kind *f;
  struct stat st;
  uint64_t size;

  if (fd >= 0)
    e->created = g_strdup (path);
  else if (!writing || errno == EEXIST)
    fd = open (path, flags | (writing ? O_CREAT : 0), 0666);
  if (fd == -1 || fstat (fd, &st) == -1) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot open %s: %s", e->name,
                 g_strerror (errno));
    if (fd != -1)
      close (fd);
    return false;
  }
  e->created_dev = st.st_dev;
  e->created_ino = st.st_ino;
  if (!file_size (e, fd, &st, &size, error)) {
    close (fd);
    return false;
  }
  f = g_new0 (struct file_kind, 1);
  e->kind = f;
  f->fd = fd;
  f->block_device = S_ISBLK (st.st_mode);
  f->untouched_from = writing && !f->block_device ? size : UINT64_MAX;
  g_mutex_init (&f->behind.lock);
  f->completed = g_async_queue_new ();
  f->wake = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (f->wake == -1) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_FAILURE, "%s: cannot make an eventfd: %s",
                 e->name, g_strerror (errno));
    return false;
  }
  f->pool = g_thread_pool_new (run_task, f, writing && !f->block_device ? FILE_WRITERS
                                                                          : WORKERS,
                              TRUE, &pool_error);
  if (!f->pool) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_FAILURE, "%s: cannot start its I/O "
                 "threads: %s", e->name, pool_error->message);
    return false;
  }
  f->wake_source = g_unix_fd_source_new (f->wake, G_IO_IN);
  g_source_set_callback (f->wake_source, (GSourceFunc) (void (*) (void)) on_wake, f, NULL);
  g_source_set_name (f->wake_source, "file-export");
  gsource_attach (f->wake_source);

  e->size = size;
  e->n_conns = 1;
  e->can_zero = e->can_flush = e->can_multi_conn = true;
  /* A block device has no map: every block is read (and scanned). */
  e->has_map = !f->block_device && (!writing || options->delta) && !options->no_extents;
  e->resizable = writing && !f->block_device;
  return nbd_export_set_request_size (e, options->request_size, 0, 0, error);
}

static void
file_close (struct nbd_export *e)
{
  struct file_kind *f = e->kind;
  struct file_task *t;

  if (!f)
    return;
  if (f->pool) {
    __atomic_store_n (&f->closing, 1, __ATOMIC_RELEASE);
    /* Waits for the commands being run; the rest are dropped unrun. */
    g_thread_pool_free (f->pool, FALSE, TRUE);
  }
  while ((t = g_async_queue_try_pop (f->completed)))
    task_free (t);
  g_async_queue_unref (f->completed);
  if (f->wake_source)
    gsource_release (f->wake_source);
  if (f->wake != -1)
    close (f->wake);
  close (f->fd);
  g_mutex_clear (&f->behind.lock);
  g_free (f);
  e->kind = NULL;
}

const struct export_ops file_export_ops = {
  .open = file_open,
  .pread = file_pread,
  .pwrite = file_pwrite,
  .zero = file_zero,
  .flush = file_flush,
  .block_status = file_block_status,
  .resize = file_resize,
  .close = file_close,
};
