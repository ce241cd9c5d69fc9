/* ferry: the "virt-ssh-helper" personality, libvirt's command line
 * ([-r] URI) and messages, ferry's relay.  Unlike libvirt 9.0's helper it
 * honours ?socket= and ?mode=, delivers every byte at end of stream, and
 * exits 0 only after a clean end (1 otherwise). */
#include <config.h>

#include "compat.h"

#include <stdio.h>

#include "error.h"
#include "message.h"
#include "run.h"
#include "virt-uri.h"

int
compat_virt_ssh_helper_main (int argc, char **argv)
{
  struct ferry_options options;
  gboolean readonly = FALSE, version = FALSE;
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) context = NULL;
  g_autofree char *path = NULL;
  GOptionEntry entries[] = {
    { "readonly", 'r', 0, G_OPTION_ARG_NONE, &readonly, "Connect read-only", NULL },
    { "version", 'V', 0, G_OPTION_ARG_NONE, &version, "Display version information", NULL },
    { NULL },
  };

  g_set_prgname ("virt-ssh-helper");
  context = g_option_context_new ("URI - libvirt socket proxy");
  g_option_context_set_summary (context,
                                "ferry as virt-ssh-helper: relays stdin/stdout to the "
                                "socket of the libvirt\ndaemon that URI names, e.g. "
                                "qemu:///system.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error)) {
    ferry_error ("option parsing failed: %s", error->message);
    return 1;
  }
  if (version) {
    printf ("virt-ssh-helper (ferry) %s\n", PACKAGE_VERSION);
    return 0;
  }
  if (argc != 2) {
    g_autofree char *help = g_option_context_get_help (context, TRUE, NULL);
    fputs (help, stderr);
    return 1;
  }
  /* Only a libvirt URI, never another ferry address form. */
  path = virt_uri_socket (argv[1], readonly, &error);
  if (path == NULL) {
    ferry_error ("%s", error->message);
    return 1;
  }

  ferry_options_init (&options);
  options.address = argv[1];
  options.readonly = readonly;
  return compat_exit_code (ferry_run (&options));
}
