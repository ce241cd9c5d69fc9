/* ferry: the blocking set-up of an ssh session (see ssh-setup.h): libssh's
 * options, the host-key policy, the authentication sequence and the
 * terminal prompts it needs. */
#include <config.h>

#include "ssh-setup.h"

#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "message.h"
#include "signal-watch.h"
#include "tty-prompt.h"

/* A blocking wait re-polls libssh at least this often. */
#define WAIT_SLICE_MS 200

int
ferry_ssh_wait (ssh_session session, int (*step) (void *data), void *data, int again,
                int timeout_ms)
{
  return ferry_ssh_wait_many (&session, 1, step, data, again, timeout_ms);
}

int
ferry_ssh_wait_many (ssh_session *sessions, size_t n, int (*step) (void *data), void *data,
                     int again, int timeout_ms)
{
  gint64 deadline = timeout_ms < 0 ? -1 : g_get_monotonic_time () + timeout_ms * G_GINT64_CONSTANT (1000);
  g_autofree struct pollfd *fds = g_new (struct pollfd, n);
  int rc;

  /* A stop signal gives up the wait (the main loop, blocked meanwhile,
   * then delivers it): a link that stalls here would hold it for ever.
   * poll() returns at the signal, whatever SA_RESTART says. */
  while ((rc = step (data)) == again && !signal_watch_stop_pending ()) {
    gint64 now = g_get_monotonic_time ();
    gint64 slice_end = now + WAIT_SLICE_MS * G_GINT64_CONSTANT (1000);
    if (deadline >= 0 && now >= deadline)
      break;
    for (size_t i = 0; i < n; i++)
      fds[i] = (struct pollfd) {
        .fd = ssh_get_fd (sessions[i]),
        .events = POLLIN | (ssh_get_poll_flags (sessions[i]) & SSH_WRITE_PENDING ? POLLOUT : 0),
      };
    signal_watch_poll_many (fds, n, deadline >= 0 ? MIN (deadline, slice_end) : slice_end);
  }
  return rc;
}

int
ferry_ssh_passphrase_prompt (const char *prompt, char *buf, size_t len, int echo,
                             int verify, void *data)
{
  struct ferry_ssh_prompts *prompts = data;

  (void) verify;
  if (!prompts->allowed || !tty_prompt (prompt, buf, len, echo))
    return -1;
  prompts->used = true;
  return 0;
}

bool
ferry_ssh_configure (ssh_session s, const struct address *a,
                     const struct connect_options *opts, char **name, GError **error)
{
  const struct address_ssh *ssh = &a->ssh;
  /* libssh finds ~/.ssh through getpwuid(); glib honours $HOME first. */
  g_autofree char *ssh_dir = g_build_filename (g_get_home_dir (), ".ssh", NULL);
  int strict = 1, nodelay = 1;
  long timeout = opts->timeout;

  /* libssh refuses some names (a host with a space, ...) without saying
   * why: the address is what is wrong. */
  if (ssh_options_set (s, SSH_OPTIONS_HOST, ssh->host) < 0)
    return ferry_set_error (error, FERRY_EXIT_USAGE, "invalid address '%s': libssh refuses "
                            "the host name '%s' (expected a DNS name or an IP address)",
                            a->text, ssh->host);
  if (ssh_options_set (s, SSH_OPTIONS_SSH_DIR, ssh_dir) < 0 ||
      ssh_options_parse_config (s, NULL) < 0 ||
      (ssh->port && ssh_options_set (s, SSH_OPTIONS_PORT_STR, ssh->port) < 0) ||
      (ssh->keyfile && ssh_options_set (s, SSH_OPTIONS_IDENTITY, ssh->keyfile) < 0) ||
      (ssh->known_hosts && ssh_options_set (s, SSH_OPTIONS_KNOWNHOSTS, ssh->known_hosts) < 0) ||
      /* A config file's "StrictHostKeyChecking no" would make libssh
       * accept unknown hosts: only known_hosts_verify= relaxes that. */
      ssh_options_set (s, SSH_OPTIONS_STRICTHOSTKEYCHECK, &strict) < 0 ||
      ssh_options_set (s, SSH_OPTIONS_NODELAY, &nodelay) < 0 ||
      (timeout > 0 && ssh_options_set (s, SSH_OPTIONS_TIMEOUT, &timeout) < 0)) {
    ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s': %s", a->text,
                     ssh_get_error (s));
    return false;
  }
  /* After the config file: the address's user wins over its User. */
  if (ssh->user && ssh_options_set (s, SSH_OPTIONS_USER, ssh->user) < 0)
    return ferry_set_error (error, FERRY_EXIT_USAGE, "invalid address '%s': libssh refuses "
                            "the user name '%s'", a->text, ssh->user);

  char *user = NULL, *host = NULL;
  unsigned port = 22;
  ssh_options_get (s, SSH_OPTIONS_USER, &user);
  ssh_options_get (s, SSH_OPTIONS_HOST, &host);
  ssh_options_get_port (s, &port);
  *name = g_strdup_printf ("%s@%s:%u", user ? user : "?", host ? host : ssh->host, port);
  ssh_string_free_char (user);
  ssh_string_free_char (host);
  return true;
}

bool
ferry_ssh_verify_host_key (ssh_session s, const char *name, const struct address *a,
                           GError **error)
{
  ssh_key key = NULL;
  unsigned char *hash = NULL;
  size_t hash_len = 0;
  char *fingerprint = NULL, *file = NULL, *line = NULL;
  const char *type;
  enum ssh_known_hosts_e state;
  bool ok = false, other_type;

  if (ssh_get_server_publickey (s, &key) < 0 ||
      ssh_get_publickey_hash (key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hash_len) < 0) {
    ferry_set_error (error, FERRY_EXIT_SSH_HOSTKEY, "cannot get the host key of %s: %s",
                     name, ssh_get_error (s));
    goto out;
  }
  fingerprint = ssh_get_fingerprint_hash (SSH_PUBLICKEY_HASH_SHA256, hash, hash_len);
  type = ssh_key_type_to_char (ssh_key_type (key));
  ssh_options_get (s, SSH_OPTIONS_KNOWNHOSTS, &file);

  state = ssh_session_is_known_server (s);
  switch (state) {
  case SSH_KNOWN_HOSTS_OK:
    ok = true;
    break;
  case SSH_KNOWN_HOSTS_CHANGED:
  case SSH_KNOWN_HOSTS_OTHER:
    other_type = state == SSH_KNOWN_HOSTS_OTHER;
    ferry_set_error (error, FERRY_EXIT_SSH_HOSTKEY,
                     "host key of %s has CHANGED: the server offers %s %s, %s %s holds%s; "
                     "someone may be intercepting the connection (if the change is "
                     "expected, remove the old key from %s)",
                     name, type, fingerprint, other_type ? "but" : "which is not the key",
                     file, other_type ? " a key of another type for it" : "", file);
    break;
  case SSH_KNOWN_HOSTS_NOT_FOUND:
  case SSH_KNOWN_HOSTS_UNKNOWN:
    if (a->ssh.verify == SSH_VERIFY_IGNORE) {
      ferry_error ("warning: host key of %s is not known (%s %s); connecting "
                   "anyway (known_hosts_verify=ignore)", name, type, fingerprint);
      ok = true;
    } else if (a->ssh.verify == SSH_VERIFY_AUTO) {
      ok = ssh_session_update_known_hosts (s) == SSH_OK;
      if (ok)
        ferry_report ("added the host key of %s (%s %s) to %s", name, type,
                      fingerprint, file);
      else
        ferry_set_error (error, FERRY_EXIT_SSH_HOSTKEY, "cannot add the host key of %s to %s: %s",
                         name, file, ssh_get_error (s));
    } else if (ssh_session_export_known_hosts_entry (s, &line) == SSH_OK) {
      ferry_set_error (error, FERRY_EXIT_SSH_HOSTKEY,
                       "host key of %s is not known (%s %s); if that is the right key, "
                       "add this line to %s: %s", name, type, fingerprint, file,
                       g_strchomp (line));
    } else {
      ferry_set_error (error, FERRY_EXIT_SSH_HOSTKEY, "host key of %s is not known (%s %s)",
                       name, type, fingerprint);
    }
    break;
  case SSH_KNOWN_HOSTS_ERROR:
    ferry_set_error (error, FERRY_EXIT_SSH_HOSTKEY, "cannot check the host key of %s: %s",
                     name, ssh_get_error (s));
    break;
  }

out:
  ssh_string_free_char (line);
  ssh_string_free_char (file);
  ssh_string_free_char (fingerprint);
  ssh_clean_pubkey_hash (&hash);
  ssh_key_free (key);
  return ok;
}

static int step_none (void *s) { return ssh_userauth_none (s, NULL); }
static int step_publickey (void *s) { return ssh_userauth_publickey_auto (s, NULL, NULL); }
static int step_kbdint (void *s) { return ssh_userauth_kbdint (s, NULL, NULL); }

/* keyfile=: its key, signed for at once. */
struct sign_step {
  ssh_session session;
  ssh_key key;
};

static int
step_sign (void *data)
{
  struct sign_step *p = data;

  return ssh_userauth_publickey (p->session, NULL, p->key);
}

/* keyfile='s key, if it opens without a passphrase, offered with its
 * signature: one round trip, where asking whether the server takes the
 * key first (as ssh_userauth_publickey_auto does) costs two.  Anything
 * but a success leaves the rest to the usual order. */
static int
auth_keyfile (ssh_session s, const char *keyfile, int timeout_ms)
{
  struct sign_step step = { s, NULL };
  int rc;

  if (keyfile == NULL ||
      ssh_pki_import_privkey_file (keyfile, NULL, NULL, NULL, &step.key) != SSH_OK)
    return SSH_AUTH_DENIED;
  rc = ferry_ssh_wait (s, step_sign, &step, SSH_AUTH_AGAIN, timeout_ms);
  ssh_key_free (step.key);
  return rc;
}

struct password_step {
  ssh_session session;
  const char *password;
};

static int
step_password (void *data)
{
  struct password_step *p = data;

  return ssh_userauth_password (p->session, NULL, p->password);
}

/* Keyboard-interactive: every prompt goes to the terminal. */
static int
auth_kbdint (ssh_session s, int timeout_ms)
{
  int rc;

  while ((rc = ferry_ssh_wait (s, step_kbdint, s, SSH_AUTH_AGAIN, timeout_ms)) == SSH_AUTH_INFO) {
    int n = ssh_userauth_kbdint_getnprompts (s);
    for (int i = 0; i < n; i++) {
      char echo = 0, answer[1024];
      const char *prompt = ssh_userauth_kbdint_getprompt (s, (unsigned) i, &echo);
      if (!tty_prompt (prompt, answer, sizeof answer, echo))
        return SSH_AUTH_DENIED;
      ssh_userauth_kbdint_setanswer (s, (unsigned) i, answer);
      explicit_bzero (answer, sizeof answer);
    }
  }
  return rc;
}

static int
auth_password (ssh_session s, const char *name, int timeout_ms)
{
  char password[1024];
  g_autofree char *prompt = g_strdup_printf ("%s's password: ", name);
  struct password_step step = { s, password };
  int rc;

  if (!tty_prompt (prompt, password, sizeof password, false))
    return SSH_AUTH_DENIED;
  rc = ferry_ssh_wait (s, step_password, &step, SSH_AUTH_AGAIN, timeout_ms);
  explicit_bzero (password, sizeof password);
  return rc;
}

static char *
describe_methods (int methods)
{
  static const struct { int bit; const char *name; } names[] = {
    { SSH_AUTH_METHOD_PUBLICKEY, "publickey" },
    { SSH_AUTH_METHOD_PASSWORD, "password" },
    { SSH_AUTH_METHOD_INTERACTIVE, "keyboard-interactive" },
    { SSH_AUTH_METHOD_HOSTBASED, "hostbased" },
    { SSH_AUTH_METHOD_GSSAPI_MIC, "gssapi-with-mic" },
  };
  GString *s = g_string_new (NULL);

  for (size_t i = 0; i < G_N_ELEMENTS (names); i++)
    if (methods & names[i].bit)
      g_string_append_printf (s, "%s%s", s->len ? ", " : "", names[i].name);
  if (s->len == 0)
    g_string_append (s, "none");
  return g_string_free (s, FALSE);
}

bool
ferry_ssh_authenticate (ssh_session s, const char *name, int timeout_ms,
                        const struct address *a, struct ferry_ssh_prompts *prompts,
                        GError **error)
{
  /* Keys first: a server's refusal of one lists the methods it accepts,
   * which saves the round trip of asking ("none").  Only when no key was
   * offered (none found) is the list still unknown. */
  int rc = auth_keyfile (s, a->ssh.keyfile, timeout_ms);
  int methods;

  if (rc == SSH_AUTH_SUCCESS)
    return true;
  if (rc != SSH_AUTH_ERROR && rc != SSH_AUTH_AGAIN)
    rc = ferry_ssh_wait (s, step_publickey, s, SSH_AUTH_AGAIN, timeout_ms);
  if (rc == SSH_AUTH_SUCCESS)
    return true;
  if (rc != SSH_AUTH_ERROR && rc != SSH_AUTH_AGAIN && ssh_userauth_list (s, NULL) == 0)
    rc = ferry_ssh_wait (s, step_none, s, SSH_AUTH_AGAIN, timeout_ms);
  if (rc == SSH_AUTH_SUCCESS)
    return true;
  methods = ssh_userauth_list (s, NULL);
  if (rc != SSH_AUTH_SUCCESS && rc != SSH_AUTH_ERROR && rc != SSH_AUTH_AGAIN &&
      prompts->allowed) {
    if (methods & SSH_AUTH_METHOD_INTERACTIVE)
      rc = auth_kbdint (s, timeout_ms);
    if (rc != SSH_AUTH_SUCCESS && rc != SSH_AUTH_ERROR && rc != SSH_AUTH_AGAIN &&
        (methods & SSH_AUTH_METHOD_PASSWORD))
      rc = auth_password (s, name, timeout_ms);
    prompts->used |= rc == SSH_AUTH_SUCCESS;
  }
  if (rc == SSH_AUTH_SUCCESS)
    return true;
  if (rc == SSH_AUTH_ERROR || rc == SSH_AUTH_AGAIN) {
    ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s': authentication %s: %s",
                     a->text, rc == SSH_AUTH_AGAIN ? "timed out" : "failed",
                     rc == SSH_AUTH_AGAIN ? "no answer from the server" : ssh_get_error (s));
    return false;
  }
  g_autofree char *accepted = describe_methods (ssh_userauth_list (s, NULL));
  ferry_set_error (error, FERRY_EXIT_SSH_AUTH,
                   "ssh authentication to %s failed: the server accepts %s; ferry tried "
                   "%s%s", name, accepted,
                   a->ssh.keyfile ? "keyfile=, the ssh agent, then ~/.ssh/id_*"
                                  : "the ssh agent and ~/.ssh/id_*",
                   prompts->allowed ? ", then password and keyboard-interactive on the terminal"
                                : " (password and keyboard-interactive only with --ask-password)");
  return false;
}
