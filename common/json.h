/*
 * json.h: a strict JSON reader for network input (RFC 8259).
 *
 * Strings are decoded with their length, so a "\u0000" inside an event's
 * content survives (cJSON would cut the string there and the event id
 * would no longer verify).  Invalid UTF-8, lone surrogates, raw control
 * characters, trailing garbage and nesting deeper than JSON_MAX_DEPTH are
 * refused.  A parsed document lives in one arena freed by json_free().
 */
#ifndef GRASPD_JSON_H
#define GRASPD_JSON_H

#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 32

enum json_type {
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

struct json {
	enum json_type type;
	int	       is_int; /* number had no fraction or exponent
					   and fits int64 */
	int64_t	       i;      /* value when is_int */
	double	       d;      /* value of any number */
	char	      *s;      /* string value, NUL-terminated */
	size_t	       len;    /* its length in bytes (may hold NULs) */
	char	      *key;    /* member name inside an object */
	size_t	       keylen;
	struct json   *child; /* first element or member */
	struct json   *next;  /* next sibling */
	size_t	       n;     /* number of elements or members */
};

struct json_doc;

/*
 * Parses buf[0..len).  On success returns the root value and stores the
 * arena in *docp (free it with json_free).  On failure returns NULL,
 * writes a short reason into err and leaves *docp NULL.
 */
struct json *json_parse(const char *buf, size_t len, struct json_doc **docp,
    char *err, size_t errlen);
void	     json_free(struct json_doc *);

/* First member named key of an object, or NULL. */
struct json *json_get(const struct json *obj, const char *key);
/* Element i of an array, or NULL. */
struct json *json_at(const struct json *arr, size_t i);

struct buf;
/*
 * Appends the JSON text of v to b: NIP-01 canonical string escaping,
 * integers as written, other numbers with %.17g.  Cannot fail (buf
 * allocation failure is fatal).
 */
void   json_write(struct buf *b, const struct json *v);
/*
 * Appends the members of object o except the one named skip (may be
 * NULL), comma-separated, without braces, as json_write() would.
 * Returns how many it wrote.
 */
size_t json_write_members(struct buf *b, const struct json *o,
    const char *skip);

#endif
