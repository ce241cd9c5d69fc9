/* ferry: the values that --stats=json writes (stats.h): integers, doubles,
 * booleans, strings, objects and arrays, written as one line of JSON, and
 * read back from a forked half's pipe.
 *
 * A small tree of its own rather than json-glib: that library brings
 * gobject, gio, libmount, libblkid and libselinux into every process,
 * 1.4 MiB of RSS for a relay that never writes a statistic. */
#ifndef FERRY_STATS_VALUE_H
#define FERRY_STATS_VALUE_H

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

typedef struct stats_value StatsValue;

StatsValue *stats_object_new (void);
StatsValue *stats_array_new (void);
void stats_value_free (StatsValue *value);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (StatsValue, stats_value_free)
bool stats_value_is_object (const StatsValue *value);
/* A deep copy. */
StatsValue *stats_value_copy (const StatsValue *value);

/* An object's members stay in the order they were first set; setting a
 * name again replaces its value in place.  stats_object_set takes @value
 * (an object or an array) over.  Strings must be UTF-8. */
void stats_object_set (StatsValue *object, const char *name, StatsValue *value);
void stats_object_set_int (StatsValue *object, const char *name, gint64 value);
void stats_object_set_double (StatsValue *object, const char *name, double value);
void stats_object_set_bool (StatsValue *object, const char *name, bool value);
void stats_object_set_string (StatsValue *object, const char *name, const char *value);
/* Member @name, or NULL. */
StatsValue *stats_object_get (const StatsValue *object, const char *name);
/* Member @name if it is an integer, else @otherwise. */
gint64 stats_object_get_int (const StatsValue *object, const char *name, gint64 otherwise);
/* Copies of every member of @from, set in @to in their order. */
void stats_object_copy_members (StatsValue *to, const StatsValue *from);

/* Appends @value, taken over. */
void stats_array_add (StatsValue *array, StatsValue *value);
void stats_array_add_string (StatsValue *array, const char *value);

/* @value as compact JSON, without a newline. */
char *stats_value_to_json (const StatsValue *value);
/* The one JSON value in @text (@len bytes; white space around it), or NULL
 * if @text is not exactly that. */
StatsValue *stats_value_parse (const char *text, size_t len);

#endif
