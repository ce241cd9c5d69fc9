/* ferry: the blocking set-up of a new ssh session, before it joins the main
 * loop (ssh-session.c): libssh's options, the host key, authentication and
 * the terminal prompts it may need.  Each step is bounded by the connect
 * timeout.  Errors name the host and the reason. */
#ifndef FERRY_SSH_SETUP_H
#define FERRY_SSH_SETUP_H

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>
#include <libssh/libssh.h>

#include "address.h"
#include "socket-options.h"

/* libssh's options for @address in OpenSSH's precedence: the host first,
 * then ~/.ssh/config and /etc/ssh/ssh_config (parsed here, so that libssh
 * does not parse them again later), then what ferry's command line says,
 * which wins.  *@name becomes "USER@HOST:PORT", for messages.  Error:
 * FERRY_EXIT_CONNECT. */
bool ferry_ssh_configure (ssh_session session, const struct address *address,
                          const struct connect_options *options, char **name,
                          GError **error);

/* Check the connected server's key against known_hosts, with @address's
 * known_hosts_verify= policy (normal: only known keys; auto: add an unknown
 * key; ignore: warn and go on).  A changed key always fails.  Error:
 * FERRY_EXIT_SSH_HOSTKEY, with the line to add for an unknown key. */
bool ferry_ssh_verify_host_key (ssh_session session, const char *name,
                                const struct address *address, GError **error);

/* Whether a login may ask at the terminal (--ask-password), and whether
 * it did: a key's passphrase, a password or keyboard-interactive answers
 * typed there. */
struct ferry_ssh_prompts {
  bool allowed;
  bool used;
};

/* The agent, then identity files (keyfile= first, then ~/.ssh/id_*); then,
 * only with @prompts->allowed and a terminal, keyboard-interactive and
 * password (@prompts->used becomes true if one of them logged in).
 * Errors: FERRY_EXIT_SSH_AUTH (the server's methods and what was tried), or
 * FERRY_EXIT_CONNECT when the server fails or does not answer.  @name
 * ("USER@HOST:PORT") is for the prompt and messages; every wait is
 * ferry_ssh_wait's, for at most @timeout_ms. */
bool ferry_ssh_authenticate (ssh_session session, const char *name, int timeout_ms,
                             const struct address *address, struct ferry_ssh_prompts *prompts,
                             GError **error);

/* Repeat @step while it returns @again, waiting for @session's fd in
 * between, for at most @timeout_ms (-1: no limit).  Returns @step's last
 * result, or @again on timeout or once a stop signal is pending
 * (signal_watch_stop_pending).  Blocks: only for short exchanges (the
 * handshake, logging in, opening a channel) before a relay starts. */
int ferry_ssh_wait (ssh_session session, int (*step) (void *data), void *data, int again,
                    int timeout_ms);
/* The same, waking for any of @n sessions (@step drives them all). */
int ferry_ssh_wait_many (ssh_session *sessions, size_t n, int (*step) (void *data), void *data,
                         int again, int timeout_ms);

/* libssh's auth_function callback: a key passphrase, asked for on the
 * controlling terminal (never stdio, which carries data), only when the
 * struct ferry_ssh_prompts at @data allows it (and then noted there). */
int ferry_ssh_passphrase_prompt (const char *prompt, char *buf, size_t len, int echo,
                                 int verify, void *data);

#endif
