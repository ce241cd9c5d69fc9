/* Unit test of --stats=json's values (src/common/stats-value.h): what they
 * write, that a member set again keeps its place, that what they write
 * reads back the same, and that malformed or trailing text is refused. */
#include <config.h>

#include <glib.h>
#include <math.h>
#include <string.h>

#include "stats-value.h"

static void
assert_json (const StatsValue *v, const char *want)
{
  g_autofree char *got = stats_value_to_json (v);

  g_assert_cmpstr (got, ==, want);
}

static void
test_write (void)
{
  g_autoptr (StatsValue) o = stats_object_new ();
  StatsValue *up = stats_object_new ();
  StatsValue *names = stats_array_new ();

  stats_object_set_string (o, "type", "relay");
  stats_object_set_int (o, "bytes", G_GINT64_CONSTANT (9007199254740993));
  stats_object_set_int (o, "neg", -3);
  stats_object_set_bool (o, "tls", false);
  stats_object_set_double (o, "avg", 2.5);
  stats_object_set_double (o, "nan", NAN);
  stats_object_set_int (up, "bytes", 1);
  stats_object_set (o, "up", up);
  stats_array_add_string (names, "a\"b\\c\n\x01/é");
  stats_object_set (o, "names", names);
  stats_object_set (o, "empty", stats_array_new ());
  assert_json (o, "{\"type\":\"relay\",\"bytes\":9007199254740993,\"neg\":-3,\"tls\":false,"
                  "\"avg\":2.5,\"nan\":null,\"up\":{\"bytes\":1},"
                  "\"names\":[\"a\\\"b\\\\c\\u000a\\u0001/é\"],\"empty\":[]}");
}

/* Setting a name again replaces its value where it stands. */
static void
test_replace_in_place (void)
{
  g_autoptr (StatsValue) o = stats_object_new ();

  stats_object_set_int (o, "a", 1);
  stats_object_set_int (o, "b", 2);
  stats_object_set_string (o, "a", "x");
  assert_json (o, "{\"a\":\"x\",\"b\":2}");
  g_assert_cmpint (stats_object_get_int (o, "b", -1), ==, 2);
  g_assert_cmpint (stats_object_get_int (o, "a", -1), ==, -1);
  g_assert_cmpint (stats_object_get_int (o, "c", -7), ==, -7);
  g_assert_null (stats_object_get (o, "c"));
}

static void
test_copy_members (void)
{
  g_autoptr (StatsValue) to = stats_object_new ();
  g_autoptr (StatsValue) from = stats_object_new ();
  StatsValue *inner = stats_object_new ();

  stats_object_set_int (inner, "n", 5);
  stats_object_set (from, "inner", inner);
  stats_object_set_int (from, "x", 1);
  stats_object_set_int (to, "x", 0);
  stats_object_set_int (to, "y", 2);
  stats_object_copy_members (to, from);
  /* A deep copy: changing @from's afterwards changes nothing in @to. */
  stats_object_set_int (inner, "n", 6);
  assert_json (to, "{\"x\":1,\"y\":2,\"inner\":{\"n\":5}}");
}

static void
test_round_trip (void)
{
  const char *text = "{\"a\":[1,-2,3.25,true,false,null,\"s\"],\"b\":{\"c\":{}},"
                     "\"u\":\"\\u00e9\\ud83d\\ude00\\t\"}";
  g_autoptr (StatsValue) v = stats_value_parse (text, strlen (text));
  g_autofree char *again = NULL;

  g_assert_nonnull (v);
  g_assert_true (stats_value_is_object (v));
  again = stats_value_to_json (v);
  g_assert_cmpstr (again, ==, "{\"a\":[1,-2,3.25,true,false,null,\"s\"],\"b\":{\"c\":{}},"
                              "\"u\":\"é😀\\u0009\"}");
}

static void
test_white_space (void)
{
  const char *text = " \n{ \"a\" : 1 ,\t\"b\":[ ] }\r\n";
  g_autoptr (StatsValue) v = stats_value_parse (text, strlen (text));

  g_assert_nonnull (v);
  assert_json (v, "{\"a\":1,\"b\":[]}");
}

static void
test_refused (void)
{
  static const char *const bad[] = {
    "", " ", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "[1,]", "[1 2]", "{a:1}",
    "01", "1.", "-", "1e", "\"x", "\"\\x\"", "\"\\u12\"", "\"a\x01\"", "tru", "nul",
    "{} {}", "{}x", "\"\xff\"", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
  };

  for (size_t k = 0; k < G_N_ELEMENTS (bad); k++) {
    g_autoptr (StatsValue) v = stats_value_parse (bad[k], strlen (bad[k]));
    if (v)
      g_error ("parsed: '%s'", bad[k]);
  }
  /* A NUL inside the text is not white space. */
  g_autoptr (StatsValue) nul = stats_value_parse ("{}\0", 3);
  g_assert_null (nul);
}

/* An integer past gint64 reads as a double; a lone surrogate as U+FFFD. */
static void
test_edges (void)
{
  const char *text = "[99999999999999999999,\"\\ud800x\"]";
  g_autoptr (StatsValue) v = stats_value_parse (text, strlen (text));

  g_assert_nonnull (v);
  assert_json (v, "[1e+20,\"\xef\xbf\xbdx\"]");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stats-value/write", test_write);
  g_test_add_func ("/stats-value/replace-in-place", test_replace_in_place);
  g_test_add_func ("/stats-value/copy-members", test_copy_members);
  g_test_add_func ("/stats-value/round-trip", test_round_trip);
  g_test_add_func ("/stats-value/white-space", test_white_space);
  g_test_add_func ("/stats-value/refused", test_refused);
  g_test_add_func ("/stats-value/edges", test_edges);
  return g_test_run ();
}
