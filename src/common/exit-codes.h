/* ferry: documented exit codes, shared by every personality.
 * Keep in sync with ferry.1 (EXIT STATUS). */
#ifndef FERRY_EXIT_CODES_H
#define FERRY_EXIT_CODES_H

enum ferry_exit {
  FERRY_EXIT_OK = 0,          /* every byte delivered both ways */
  FERRY_EXIT_FAILURE = 1,     /* generic failure (the compat personalities use only
                                 0 and 1, and nc's refusal) */
  FERRY_EXIT_USAGE = 2,       /* bad command line or malformed address */
  FERRY_EXIT_NC_UNSUPPORTED = 2,  /* nc: an option of netcat-openbsd ferry's nc
                                     does not have */
  FERRY_EXIT_CONNECT = 3,     /* cannot connect to or listen on an address */
  FERRY_EXIT_IO = 4,          /* bytes could not be delivered during the relay */
  FERRY_EXIT_TIMEOUT = 5,     /* --idle-timeout expired */
  FERRY_EXIT_PROTOCOL = 6,    /* --nbd: the peer violated the NBD protocol */
  FERRY_EXIT_SSH_HOSTKEY = 7, /* ssh: the server's host key is unknown, changed or of another type */
  FERRY_EXIT_SSH_AUTH = 8,    /* ssh: the server accepted none of our credentials */
  /* NBD stream mode (--nbd-send, --nbd-receive, --nbd-digest) */
  FERRY_EXIT_NBD = 20,        /* an NBD command failed, or the server went away */
  FERRY_EXIT_STREAM = 21,     /* the stream is damaged or truncated */
  FERRY_EXIT_DIGEST = 22,     /* the data received does not match the stream's digest */
  FERRY_EXIT_TOO_SMALL = 23,  /* the destination export is smaller than the stream's */
  /* The remote stream mode (--remote-nbd-send, --remote-nbd-receive): the
   * remote half failed.  3 and 20 to 23 are the local half's. */
  FERRY_EXIT_REMOTE = 24,     /* the remote ferry could not run, or failed otherwise */
  FERRY_EXIT_LINK_LOST = 25,  /* the ssh session died mid-copy (reset, keepalives
                                 unanswered, its sshd killed) */
  FERRY_EXIT_REMOTE_NBD = 30, /* the remote half's 3 or 20: its export failed */
  /* 31 to 33: the remote half's 21 to 23 */
  FERRY_EXIT_REMOTE_STREAM = 31,
  FERRY_EXIT_REMOTE_DIGEST = 32,
  FERRY_EXIT_REMOTE_TOO_SMALL = 33,
  /* 128 + the signal's number, after SIGHUP, SIGINT, SIGQUIT or SIGTERM,
   * when a relay did not deliver everything (run.c) */
  FERRY_EXIT_SIGHUP = 129,
  FERRY_EXIT_SIGINT = 130,
  FERRY_EXIT_SIGQUIT = 131,
  FERRY_EXIT_SIGTERM = 143,
};

#endif
