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
#include "message.h"

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
image_format_probe (const char *path, const char *name, GError **error)
{
  uint8_t header[PROBE_BYTES] = { 0 };
  /* O_NONBLOCK: a FIFO opens at once rather than waiting for a writer
   * (regular files and block devices ignore it). */
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  ssize_t n;

  /* Neither a file, a device nor a directory (a FIFO, a socket): no header
   * to probe; the raw image's open refuses it, in its own words. */
  if (fd >= 0 && fstat (fd, &st) == 0 && !S_ISREG (st.st_mode) && !S_ISBLK (st.st_mode) &&
      !S_ISDIR (st.st_mode)) {
    close (fd);
    return "raw";
  }
  n = fd < 0 ? -1 : pread (fd, header, sizeof header, 0);
  /* A directory opens, and its read fails: "cannot open" either way. */
  if (n < 0)
    ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot open %s: %s", name, g_strerror (errno));
  if (fd >= 0)
    close (fd);
  if (n < 0)
    return NULL;
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
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
    ferry_set_error (error, FERRY_EXIT_USAGE, "cannot tell the size of %s (%s)", path, format);
  if (fd >= 0)
    close (fd);
  return ok;
}

/* @absolute: see image_resolve. */
static char **
qemu_nbd_command (const char *absolute, const char *format, bool writing)
{
  GPtrArray *argv = g_ptr_array_new ();

  g_ptr_array_add (argv, g_strdup ("qemu-nbd"));
  g_ptr_array_add (argv, g_strdup_printf ("--format=%s", format));
  g_ptr_array_add (argv, g_strdup (writing ? "--discard=unmap" : "--read-only"));
  g_ptr_array_add (argv, g_strdup (absolute));
  g_ptr_array_add (argv, NULL);
  return (char **) g_ptr_array_free (argv, FALSE);
}

/* @program's path, or NULL with *@error: "@what needs @program, which is
 * not installed on HOST (Debian package qemu-utils)". */
static char *
find_qemu_program (const char *program, const char *what, GError **error)
{
  char *found = g_find_program_in_path (program);

  if (found == NULL)
    ferry_set_error (error, FERRY_EXIT_CONNECT, "%s needs %s, which is not installed on %s "
                     "(Debian package qemu-utils)", what, program, g_get_host_name ());
  return found;
}

/* Run qemu-img with @args (after its name) to @verb @name ("create",
 * "creating"): its failure is one line, "cannot @verb @name: " and
 * qemu-img's message, whose lines it joins. */
static bool
run_qemu_img (const char *const *args, const char *verb, const char *doing, const char *name,
              GError **error)
{
  g_autofree char *what = g_strdup_printf ("%s %s", doing, name);
  g_autofree char *qemu_img = find_qemu_program ("qemu-img", what, error);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autofree char *err = NULL, *reason = NULL;
  g_autoptr (GError) failed = NULL;
  int status;

  if (qemu_img == NULL)
    return false;
  g_ptr_array_add (argv, qemu_img);
  for (; *args; args++)
    g_ptr_array_add (argv, (char *) *args);
  g_ptr_array_add (argv, NULL);
  if (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                    NULL, &err, &status, &failed) &&
      g_spawn_check_wait_status (status, &failed))
    return true;
  /* qemu-img's own words; else how it could not run, or how it ended. */
  reason = ferry_program_words (err ? err : "", "qemu-img");
  return ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot %s %s: %s", verb, name,
                          *reason ? reason : failed->message);
}

/* @absolute: see image_resolve; @name: for messages. */
static bool
create_image (const char *absolute, const char *name, const char *format, uint64_t size,
              GError **error)
{
  g_autofree char *size_arg = g_strdup_printf ("%" G_GUINT64_FORMAT, size);
  const char *args[] = { "create", "-q", "-f", format, absolute, size_arg, NULL };

  return run_qemu_img (args, "create", "creating", name, error);
}

bool
image_chain_holds (const char *path, const char *format, const struct stat *other)
{
  g_autofree char *qemu_img = g_find_program_in_path ("qemu-img"), *out = NULL;
  const char *argv[] = { qemu_img, "info", "--backing-chain", "--force-share", "-f", format,
                         path, NULL };
  g_auto (GStrv) lines = NULL;
  int status;

  if (qemu_img == NULL ||
      !g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out,
                     NULL, &status, NULL) || !g_spawn_check_wait_status (status, NULL))
    return false;
  /* Each image of the chain starts with "image: " and its name as qemu
   * opened it, unescaped (the JSON output escapes all but ASCII). */
  lines = g_strsplit (out, "\n", -1);
  for (char **line = lines; *line; line++) {
    struct stat st;
    if (g_str_has_prefix (*line, "image: ") && stat (*line + strlen ("image: "), &st) == 0 &&
        st.st_dev == other->st_dev && st.st_ino == other->st_ino)
      return true;
  }
  return false;
}

/* qemu-nbd's own failure to open the image (a backing file missing, a
 * lock that another process holds) would be its lines on stderr and then
 * a lost connection: qemu-img opens the image, and its whole backing
 * chain, first, and says why in ferry's one line. */
static bool
check_image_opens (const char *absolute, const char *name, const char *format, GError **error)
{
  const char *args[] = { "info", "--backing-chain", "-f", format, absolute, NULL };

  return run_qemu_img (args, "open", "opening", name, error);
}

bool
image_resolve (const struct image_request *q, struct image_resolved *out, GError **error)
{
  const char *format = q->format;
  g_autofree char *what = NULL, *qemu_nbd = NULL, *absolute = NULL;

  bool into_directory = q->source_name && g_file_test (q->path, G_FILE_TEST_IS_DIR);
  const char *name = q->name ? q->name : q->path;

  out->command = NULL;
  out->created = false;
  out->path = into_directory ? g_build_filename (q->path, q->source_name, NULL)
                             : g_strdup (q->path);
  /* HOST: alone is HOST's home directory: no '/' after it. */
  out->name = !into_directory ? g_strdup (name)
            : g_str_has_suffix (name, ":") ? g_strconcat (name, q->source_name, NULL)
            : g_build_filename (name, q->source_name, NULL);
  /* DEST/ is a directory, as for cp: never the file DEST, which qemu,
   * canonicalizing the name, would write. */
  if (q->writing && g_str_has_suffix (q->path, "/") && !g_file_test (q->path, G_FILE_TEST_IS_DIR))
    return ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot open %s: %s", out->name,
                            g_strerror (ENOTDIR));
  if (q->writing && format == NULL)
    format = "raw";
  else if (format == NULL || strcmp (format, "auto") == 0)
    format = image_format_probe (out->path, out->name, error);
  if (format == NULL)
    return false;
  if (strcmp (format, "raw") == 0)
    return true;
  what = g_strdup_printf ("%s is %s: serving it", out->name, format);
  if ((qemu_nbd = find_qemu_program ("qemu-nbd", what, error)) == NULL)
    return false;
  /* Absolute for qemu-img and qemu-nbd, so that qemu never takes a
   * "json:" or "nbd:" prefix of a relative name for a protocol. */
  absolute = g_canonicalize_filename (out->path, NULL);
  if (!g_file_test (out->path, G_FILE_TEST_EXISTS)) {
    if (!q->writing || (q->create_size == 0 && !q->create_empty))
      return ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot open %s: %s", out->name,
                              g_strerror (ENOENT));
    if (!create_image (absolute, out->name, format, q->create_size, error))
      return false;
    out->created = true;
  } else if (!check_image_opens (absolute, out->name, format, error)) {
    return false;
  }
  out->command = qemu_nbd_command (absolute, format, q->writing);
  return true;
}

void
image_resolved_clear (struct image_resolved *r)
{
  g_clear_pointer (&r->path, g_free);
  g_clear_pointer (&r->name, g_free);
  g_clear_pointer (&r->command, g_strfreev);
}
