/* ferry: image paths in the stream mode (image-format.h). */
#include <config.h>

#include "image-format.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

/* qemu's own probes, for the formats that qemu-nbd serves.  LUKS is not
 * here: without its secret it is copied as the raw bytes it is. */
static const struct magic {
  const char *format;
  size_t offset;
  const char *bytes;
  size_t length;
} magics[] = {
  { "qcow2", 0, "QFI\xfb", 4 },
  { "qed", 0, "QED\0", 4 },
  { "vmdk", 0, "KDMV", 4 },
  { "vmdk", 0, "# Disk DescriptorFile", 21 },
  { "vpc", 0, "conectix", 8 },
  { "vhdx", 0, "vhdxfile", 8 },
  { "vdi", 64, "\x7f\x10\xda\xbe", 4 },
};

#define PROBE_BYTES 512

bool
image_is_path (const char *name)
{
  return name && strcmp (name, "[") != 0 && strstr (name, "://") == NULL;
}

const char *
image_format_probe (const char *path, GError **error)
{
  uint8_t header[PROBE_BYTES] = { 0 };
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  ssize_t n;

  if (fd < 0) {
    ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot open %s: %s", path, g_strerror (errno));
    return NULL;
  }
  n = pread (fd, header, sizeof header, 0);
  if (n < 0) {
    ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot read %s: %s", path, g_strerror (errno));
    close (fd);
    return NULL;
  }
  close (fd);
  for (size_t i = 0; i < G_N_ELEMENTS (magics); i++) {
    const struct magic *m = &magics[i];
    if ((size_t) n >= m->offset + m->length &&
        memcmp (header + m->offset, m->bytes, m->length) == 0)
      return m->format;
  }
  return "raw";
}

bool
image_virtual_size (const char *path, const char *format, uint64_t *size, GError **error)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  uint64_t be_size;
  bool ok = false;

  if (fd < 0 || fstat (fd, &st) < 0)
    ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot open %s: %s", path, g_strerror (errno));
  else if (strcmp (format, "qcow2") == 0 && pread (fd, &be_size, 8, 24) == 8)
    *size = GUINT64_FROM_BE (be_size), ok = true;
  else if (strcmp (format, "raw") == 0 && S_ISBLK (st.st_mode))
    ok = ioctl (fd, BLKGETSIZE64, size) == 0 ||
         ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot get the size of %s: %s", path,
                          g_strerror (errno));
  else if (strcmp (format, "raw") == 0)
    *size = st.st_size, ok = true;
  else
    ferry_set_error (error, FERRY_EXIT_USAGE, "cannot tell the size of %s (%s) to create a "
                     "destination of its size: create it first (qemu-img create)", path, format);
  if (fd >= 0)
    close (fd);
  return ok;
}

static char **
qemu_nbd_command (const char *path, const char *format, bool writing)
{
  GPtrArray *argv = g_ptr_array_new ();

  g_ptr_array_add (argv, g_strdup ("qemu-nbd"));
  g_ptr_array_add (argv, g_strdup_printf ("--format=%s", format));
  g_ptr_array_add (argv, g_strdup (writing ? "--discard=unmap" : "--read-only"));
  /* Absolute, so that qemu never takes a "json:" or "nbd:" prefix of a
   * relative name for a protocol. */
  g_ptr_array_add (argv, g_canonicalize_filename (path, NULL));
  g_ptr_array_add (argv, NULL);
  return (char **) g_ptr_array_free (argv, FALSE);
}

bool
image_resolve (const char *path, bool writing, const char *format, const char *source_name,
                struct image_resolved *out, GError **error)
{
  out->command = NULL;
  out->path = writing && source_name && g_file_test (path, G_FILE_TEST_IS_DIR)
    ? g_build_filename (path, source_name, NULL) : g_strdup (path);
  if (writing && format == NULL)
    format = "raw";
  else if (format == NULL || strcmp (format, "auto") == 0)
    format = image_format_probe (out->path, error);
  if (format == NULL)
    return false;
  if (strcmp (format, "raw") == 0)
    return true;
  if (!g_file_test (out->path, G_FILE_TEST_EXISTS))
    return ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot open %s: %s", out->path,
                            g_strerror (ENOENT));
  g_autofree char *qemu_nbd = g_find_program_in_path ("qemu-nbd");
  if (qemu_nbd == NULL)
    return ferry_set_error (error, FERRY_EXIT_CONNECT, "%s is %s: serving it needs qemu-nbd, "
                            "which is not installed on %s (Debian package qemu-utils)",
                            out->path, format, g_get_host_name ());
  out->command = qemu_nbd_command (out->path, format, writing);
  return true;
}

void
image_resolved_clear (struct image_resolved *r)
{
  g_clear_pointer (&r->path, g_free);
  g_clear_pointer (&r->command, g_strfreev);
}
