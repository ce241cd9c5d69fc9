/* ferry: the server of a '[ CMD ARGS... ]' export, or of an image path's
 * qemu-nbd (image-format.h), started as libnbd's
 * nbd_connect_systemd_socket_activation starts one (a listening socket as
 * its fd 3, LISTEN_FDS=1 and LISTEN_PID), with three differences:
 *  - the socket has an abstract address: nothing is written to /tmp;
 *  - the server has a process group of its own, so that a terminal's ^C
 *    reaches ferry alone, which stops the copy, flushes, and then ends
 *    the server (a server that took the ^C itself would cut the copy off
 *    in the middle of a command);
 *  - the stderr of ferry's own qemu-nbd goes into a pipe: if it does not
 *    serve, its words are ferry's one line; afterwards they are details
 *    (-v), such as its complaints about a client gone at a stop. */
#ifndef FERRY_SERVER_COMMAND_H
#define FERRY_SERVER_COMMAND_H

#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

struct server_command {
  pid_t pid;                  /* the server; 0: none */
  int err;                    /* the read end of its stderr's pipe, or -1
                                 (its stderr is ferry's) */
  GSource *err_watch;         /* reads @err once the server serves */
  char *name;                 /* the export's, for the details */
  char *program;              /* the basename of its argv[0]: the prefix
                                 of its messages */
};

/* Start @argv, its stderr captured if @capture, and connect to it: the
 * connected socket, or -1 with *@error (exit 3). */
int server_command_start (struct server_command *s, char *const *argv, bool capture,
                          const char *name, GError **error);
/* The server did not serve: its captured words, lines joined, once it
 * has ended (waiting for that 5 s at most); NULL if nothing was captured. */
char *server_command_reason (struct server_command *s);
/* It serves: what it writes to stderr from now on is a detail. */
void server_command_serving (struct server_command *s);
/* End it (SIGTERM, which qemu-nbd and nbdkit take as a clean stop) and
 * reap it. */
void server_command_stop (struct server_command *s);

#endif
