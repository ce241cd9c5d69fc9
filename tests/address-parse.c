/* ferry: unit test of the address parser's ssh:// forms, and of HOST PORT
 * given as two arguments. */
#include <config.h>

#include <string.h>

#include <glib.h>

#include "address.h"
#include "error.h"

static struct address *
parse_ok (const char *text)
{
  g_autoptr (GError) error = NULL;
  struct address *a = address_parse (text, &error);

  g_assert_no_error (error);
  g_assert_nonnull (a);
  return a;
}

static void
parse_bad (const char *text, const char *reason)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (FerryAddress) a = address_parse (text, &error);
  g_autofree char *expected = g_strdup_printf ("invalid address '%s': %s", text, reason);

  g_assert_null (a);
  g_assert_error (error, FERRY_ERROR, FERRY_EXIT_USAGE);
  g_assert_cmpstr (error->message, ==, expected);
}

static void
test_streamlocal (void)
{
  g_autoptr (FerryAddress) a = parse_ok ("ssh://alice@example.org:2222/var/run/x.sock");
  g_autoptr (FerryAddress) b = parse_ok ("ssh://host/run/my%20dir/s.sock?proxy=exec");
  g_autoptr (FerryAddress) c = parse_ok ("ssh://[::1]:22/s");
  g_autoptr (FerryAddress) d = parse_ok ("ssh://[fe80::1]/s");
  g_autofree char *target = address_ssh_target (b);

  g_assert_cmpint (a->kind, ==, ADDRESS_SSH);
  g_assert_cmpstr (a->ssh.user, ==, "alice");
  g_assert_cmpstr (a->ssh.host, ==, "example.org");
  g_assert_cmpstr (a->ssh.port, ==, "2222");
  g_assert_cmpstr (a->ssh.path, ==, "/var/run/x.sock");
  g_assert_null (a->ssh.tcp_host);
  g_assert_cmpint (a->ssh.proxy, ==, SSH_PROXY_AUTO);
  g_assert_cmpint (a->ssh.verify, ==, SSH_VERIFY_NORMAL);

  g_assert_null (b->ssh.user);
  g_assert_null (b->ssh.port);
  g_assert_cmpstr (b->ssh.path, ==, "/run/my dir/s.sock");
  g_assert_cmpint (b->ssh.proxy, ==, SSH_PROXY_EXEC);
  g_assert_cmpstr (target, ==, "unix:/run/my dir/s.sock");

  g_assert_cmpstr (c->ssh.host, ==, "::1");
  g_assert_cmpstr (c->ssh.port, ==, "22");
  g_assert_cmpstr (d->ssh.host, ==, "fe80::1");
  g_assert_null (d->ssh.port);
}

static void
test_tcpip (void)
{
  g_autoptr (FerryAddress) a =
    parse_ok ("ssh://h?tcp=db.internal:5432&keyfile=/k%20ey&known_hosts=/kh"
              "&known_hosts_verify=ignore&proxy=direct");
  g_autoptr (FerryAddress) b = parse_ok ("ssh://h?tcp=[::1]:10809&known_hosts_verify=auto");
  g_autofree char *ta = address_ssh_target (a);
  g_autofree char *tb = address_ssh_target (b);

  g_assert_null (a->ssh.path);
  g_assert_cmpstr (a->ssh.tcp_host, ==, "db.internal");
  g_assert_cmpstr (a->ssh.tcp_port, ==, "5432");
  g_assert_cmpstr (a->ssh.keyfile, ==, "/k ey");
  g_assert_cmpstr (a->ssh.known_hosts, ==, "/kh");
  g_assert_cmpint (a->ssh.verify, ==, SSH_VERIFY_IGNORE);
  g_assert_cmpint (a->ssh.proxy, ==, SSH_PROXY_DIRECT);
  g_assert_cmpstr (ta, ==, "tcp:db.internal:5432");
  g_assert_cmpint (b->ssh.verify, ==, SSH_VERIFY_AUTO);
  g_assert_cmpstr (tb, ==, "tcp:[::1]:10809");
}

/* A repeated tcp= replaces the first (found leaking by fuzz/address-fuzz.c:
 * LeakSanitizer fails this test without the fix). */
static void
test_tcpip_repeated (void)
{
  g_autoptr (FerryAddress) a = parse_ok ("ssh://h?tcp=a:1&tcp=b:2");

  g_assert_cmpstr (a->ssh.tcp_host, ==, "b");
  g_assert_cmpstr (a->ssh.tcp_port, ==, "2");
  parse_bad ("ssh://h?tcp=a:1&tcp=b", "expected HOST:PORT");
}

static void
test_malformed (void)
{
  parse_bad ("ssh://", "empty host");
  parse_bad ("ssh://@h/s", "empty or malformed user name");
  parse_bad ("ssh://h:0/s", "ssh port must be 1-65535");
  parse_bad ("ssh://h:x/s", "ssh port must be 1-65535");
  parse_bad ("ssh://[::1/s", "expected [ADDRESS] or [ADDRESS]:PORT");
  parse_bad ("ssh://h", "expected ssh://HOST/ABSOLUTE/PATH or ssh://HOST?tcp=HOST:PORT");
  parse_bad ("ssh://h/", "empty socket path");
  parse_bad ("ssh://h/s%zz", "malformed %-escape in the socket path");
  parse_bad ("ssh://h/s?tcp=a:1", "give either a socket path or tcp=HOST:PORT, not both");
  parse_bad ("ssh://h?tcp=a", "expected HOST:PORT");
  parse_bad ("ssh://h?tcp=[[v6]:1", "a host cannot contain '[' or ']'");
  parse_bad ("tcp:[[v6]:1", "a host cannot contain '[' or ']'");
  parse_bad ("tcp:a]:1", "a host cannot contain '[' or ']'");
  parse_bad ("ssh://h/s?proxy=maybe", "proxy= must be auto, direct or exec");
  parse_bad ("ssh://h/s?known_hosts_verify=no",
             "known_hosts_verify= must be normal, auto or ignore");
  parse_bad ("ssh://h/s?keyfile", "expected NAME=VALUE after '?' or '&'");
  parse_bad ("ssh://h/s?colour=red",
             "unknown parameter 'colour' (expected tcp, proxy, keyfile, "
             "known_hosts or known_hosts_verify)");
}

/* Each message names what it did not understand (issue 26): a type ferry
 * has not, the port of a name with two ':', a path without '/'; an IPv6
 * address without brackets is still told so. */
static void
test_unknown_parts (void)
{
  static const char *const expected_types = "(expected unix:, tcp:, fd:, ssh://)";
  static const struct {
    const char *text, *reason;   /* reason NULL: "unknown address type" */
  } cases[] = {
    { "tpc:host:22", NULL },
    { "TCP:host:22", NULL },
    { "ssh:host:22", NULL },
    { "unx:host:22", NULL },
    { "tcp6:host:22", NULL },
    { "udp:127.0.0.1:53", "udp: needs --compat=nc -u" },
    { "UDP:[::1]:53", "udp: needs --compat=nc -u" },
    { "host:ssh:22", "port 'ssh:22' must be 1-65535 or a service name" },
    { "h:22x", "port '22x' must be 1-65535 or a service name" },
    { "::1:80", "an IPv6 address needs brackets: [ADDRESS]:PORT" },
    { "2001:db8::1", "an IPv6 address needs brackets: [ADDRESS]:PORT" },
    { "fe80::1%eth0:22", "an IPv6 address needs brackets: [ADDRESS]:PORT" },
    { "add:beef:22", "an IPv6 address needs brackets: [ADDRESS]:PORT" },
    { "relative.sock", "a socket path needs a '/' (./relative.sock or unix:relative.sock), "
      "a TCP address a port (relative.sock:PORT)" },
  };

  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *type = g_strndup (cases[i].text, strcspn (cases[i].text, ":"));
    g_autofree char *unknown = g_strdup_printf ("unknown address type '%s' %s", type,
                                                expected_types);
    parse_bad (cases[i].text, cases[i].reason ? cases[i].reason : unknown);
  }
  /* Two parts are HOST:PORT, whatever the host's name. */
  address_free (parse_ok ("tpc:22"));
  address_free (parse_ok ("udp:53"));
}

/* HOST PORT (ssh's ProxyCommand %h %p): which pairs are taken, and the
 * address they make. */
static void
test_host_port (void)
{
  static const struct {
    const char *host, *port, *address;   /* address NULL: not a HOST PORT */
  } cases[] = {
    { "example.org", "22", "tcp:example.org:22" },
    { "127.0.0.1", "ssh", "tcp:127.0.0.1:ssh" },
    { "::1", "22", "tcp:[::1]:22" },
    { "fe80::1%eth0", "2222", "tcp:[fe80::1%eth0]:2222" },
    { "", "22", NULL },
    { "h", "0", NULL },
    { "h", "65536", NULL },
    { "h", "-1", NULL },
    { "[::1]", "22", NULL },
    { "/run/x.sock", "22", NULL },
    { "unix:x", "22", NULL },
    { "fd:3", "22", NULL },
    { "@abstract", "22", NULL },
    { "ssh://h/s", "22", NULL },
  };

  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *address = NULL;

    g_assert_cmpint (address_is_host_port (cases[i].host, cases[i].port), ==,
                     cases[i].address != NULL);
    if (cases[i].address == NULL)
      continue;
    address = address_tcp_text (cases[i].host, cases[i].port);
    g_assert_cmpstr (address, ==, cases[i].address);
    address_free (parse_ok (address));
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/address/ssh/streamlocal", test_streamlocal);
  g_test_add_func ("/address/ssh/tcpip", test_tcpip);
  g_test_add_func ("/address/ssh/tcpip-repeated", test_tcpip_repeated);
  g_test_add_func ("/address/ssh/malformed", test_malformed);
  g_test_add_func ("/address/unknown-parts", test_unknown_parts);
  g_test_add_func ("/address/host-port", test_host_port);
  return g_test_run ();
}
