/* ferry: libvirt URIs ("qemu:///system", "qemu:///session?socket=...")
 * resolved to the daemon's UNIX socket, the way libvirt 9.x's client and
 * virt-ssh-helper resolve them (libvirt's remote_sockets.c):
 *
 *  - "DRIVER:///PATH" or "DRIVER+unix:///PATH": a local daemon; any other
 *    transport, or a server name, is rejected.
 *  - ?socket=PATH wins over everything ("@NAME" is abstract).
 *  - System mode: /var/run/libvirt/virtDRIVERd-sock when it exists (modular
 *    daemons), else /var/run/libvirt/libvirt-sock (libvirtd); "-sock-ro"
 *    instead of "-sock" when read-only.  ?mode=direct or ?mode=legacy
 *    forces one; ?mode=auto is the default.
 *  - Session mode (path /session, or a "test+" scheme) when not root: the
 *    same names without "-ro" under $XDG_RUNTIME_DIR/libvirt, else
 *    $XDG_CACHE_HOME/libvirt, else ~/.cache/libvirt.  As root a session URI
 *    means the system sockets.
 *
 * ferry never starts a daemon: libvirt autostarts a session daemon when its
 * socket is missing, but a relay that spawns daemons on a remote host is a
 * surprise, so a missing socket is the usual "cannot connect" error. */
#ifndef FERRY_VIRT_URI_H
#define FERRY_VIRT_URI_H

#include <stdbool.h>

#include <glib.h>

/* Does @text look like a libvirt URI ("SCHEME://...")? */
bool virt_uri_matches (const char *text);

/* The socket @uri names: a path, or "@NAME" for an abstract socket.
 * Returns NULL with a FERRY_EXIT_USAGE error in libvirt's words:
 * "unexpected URI transport 'URI'", "cannot parse URI transport 'URI': ...",
 * "unknown remote mode 'MODE'". */
char *virt_uri_socket (const char *uri, bool readonly, GError **error);

#endif
