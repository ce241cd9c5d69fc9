/* ferry: image paths in the stream mode (image-format.c).  A SOURCE, DEST
 * or IMAGE that is neither a URI nor '[ CMD ]' is a path: a raw image
 * (a regular file or a block device), which the module reads and writes
 * itself, or an image in one of qemu's formats (qcow2, vmdk, ...), which
 * qemu-nbd serves to it, started with socket activation as '[ CMD ]' is.
 * A SOURCE's format is found from its header unless it was named; a DEST's
 * is never probed (qemu's rule: a guest could have written any header
 * into a raw image), so it is raw unless named. */
#ifndef FERRY_IMAGE_FORMAT_H
#define FERRY_IMAGE_FORMAT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* True when @name is an image path rather than an NBD URI or '['. */
bool image_is_path (const char *name);

/* The format of the image at @path from its first bytes: "qcow2", "vmdk",
 * ..., or "raw" for anything else.  NULL, with *@error (exit 3) naming it
 * @name, if it cannot be opened or read. */
const char *image_format_probe (const char *path, const char *name, GError **error);

/* The virtual size of the image at @path in @format ("raw": a regular
 * file's size or a block device's; "qcow2": its header's), or false with
 * *@error. */
bool image_virtual_size (const char *path, const char *format, uint64_t *size,
                         GError **error);

/* Whether the file @other is the image at @path in @format, or one of its
 * backing files (qemu-img info --backing-chain; false if qemu-img cannot
 * tell). */
bool image_chain_holds (const char *path, const char *format, const struct stat *other);

/* What image_resolve is asked. */
struct image_request {
  const char *path;           /* as given */
  bool writing;               /* a DEST */
  const char *format;         /* a SOURCE's NULL or "auto": found from its
                                 header; a DEST's NULL: raw */
  const char *source_name;    /* a DEST (or a digest's IMAGE) that is a
                                 directory takes this after it; NULL: none */
  uint64_t create_size;       /* a DEST in a qemu format that does not exist
                                 is created this large (qemu-img create);
                                 0: it must exist, unless @create_empty */
  bool create_empty;          /* 0 is the size (the stream's header says so) */
  const char *name;           /* for messages (--image-name: a remote
                                 half's HOST:PATH as typed); NULL: @path */
};

/* An image path resolved. */
struct image_resolved {
  char *path;                 /* the path to open: as given, or a directory
                                 DEST joined with the source's name */
  char *name;                 /* what messages call it: the request's name
                                 or path, joined as @path is */
  char **command;             /* a path in a qemu format: qemu-nbd serving
                                 it; NULL: a raw image, opened as it is */
  bool created;               /* qemu-img created it: it reads as zeros */
};

/* Resolve @request's image: its path, and qemu-nbd for a qemu format, or
 * fail in one line, exit 3, naming the path, or qemu-nbd or qemu-img and
 * the Debian package when they are not installed.  Free @out with
 * image_resolved_clear. */
bool image_resolve (const struct image_request *request, struct image_resolved *out,
                    GError **error);
void image_resolved_clear (struct image_resolved *r);

#endif
