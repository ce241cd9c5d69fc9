/* ferry: the qemu-nbd that serves an image path in one of qemu's formats
 * (image-format.h), started as libnbd's
 * nbd_connect_systemd_socket_activation starts a '[ CMD ]' server (a
 * listening socket as its fd 3, LISTEN_FDS=1 and LISTEN_PID), but:
 *  - in a process group of its own, so that a stop sent to ferry's group
 *    (a shell's job control, timeout(1)) reaches ferry alone, which ends
 *    the copy with its one line and then the server; had qemu-nbd taken
 *    it too, it would have cut the copy off in the middle of a command;
 *  - with its stderr (and stdout) in a pipe: a qemu-nbd that does not
 *    serve has its words as ferry's one line; once it serves they are
 *    details (-v), such as its complaints about a client gone at a stop.
 *    It never touches the terminal, so its own group cannot stop it;
 *  - ended by SIGTERM when the process that started it dies, even by
 *    SIGKILL (PR_SET_PDEATHSIG);
 *  - its socket, in a directory of mode 0700, is removed as soon as ferry
 *    has connected to it, before qemu-nbd runs.
 * A user's '[ CMD ]' stays with libnbd's (nbd-ops.c): it may prompt on the
 * terminal, or read stdin. */
#ifndef FERRY_IMAGE_SERVER_H
#define FERRY_IMAGE_SERVER_H

#include <glib.h>
#include <sys/types.h>

struct image_server {
  pid_t pid;                  /* qemu-nbd; 0: none */
  int err;                    /* the read end of its stderr's pipe, or -1 */
  GSource *err_watch;         /* reads @err once it serves */
  char *name;                 /* the image's, for messages */
};

/* Start @argv (argv[0] found in PATH) and connect to it: the connected
 * socket, or -1 with *@error (exit 3). */
int image_server_start (struct image_server *s, char *const *argv, const char *name,
                        GError **error);
/* It did not serve: its words, lines joined, read until it has closed its
 * stderr or for 5 s at most; NULL if it said nothing. */
char *image_server_reason (struct image_server *s);
/* It serves: what it writes from now on is a detail. */
void image_server_serving (struct image_server *s);
/* End it (SIGTERM, then SIGKILL after 5 s) and reap it. */
void image_server_stop (struct image_server *s);

#endif
