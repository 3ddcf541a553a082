/*
 * filter.h: NIP-01 subscription filters, as relayd reads them from a REQ
 * and as the store (store.c) turns them into SQL.
 *
 * filter_parse() is strict in the way STRFRY is: exact 64-character
 * lowercase hex for ids, authors, #e and #p; unknown members and
 * multi-letter tag filters are refused rather than ignored, so that a
 * client never silently gets more than it asked for.  Lists are sorted and
 * deduplicated at parse time so that filter_match() can binary-search them.
 */
#ifndef GRASPD_FILTER_H
#define GRASPD_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"

struct json;

/* Ours: values per list (ids, authors, kinds, each #x), a memory bound. */
#define FILTER_MAX_VALUES 1000

/*
 * One "#x" condition: the event must have a tag named x whose first value
 * is one of ft_v[] (sorted by length, then bytes; no duplicates; each
 * NUL-terminated but compared by length).
 */
struct filter_tag {
	char	     ft_name; /* a-z or A-Z */
	size_t	     ft_n;
	struct estr *ft_v; /* owned, as is each ->s */
};

struct filter {
	uint8_t (*f_ids)[EVENT_ID_LEN]; /* sorted, unique */
	size_t f_nids;
	int    f_has_ids;
	uint8_t (*f_authors)[PUBKEY_LEN]; /* sorted, unique */
	size_t		   f_nauthors;
	int		   f_has_authors;
	uint32_t	  *f_kinds; /* sorted, unique */
	size_t		   f_nkinds;
	int		   f_has_kinds;
	struct filter_tag *f_tags; /* sorted by name, one per name */
	size_t		   f_ntags;
	int64_t		   f_since;
	int		   f_has_since;
	int64_t		   f_until;
	int		   f_has_until;
	int64_t		   f_limit;
	int		   f_has_limit;
	/* A present but empty list: the filter matches nothing (STRFRY). */
	int		   f_empty;
};

/*
 * Reads one NIP-01 filter object into *out (which need not be initialised).
 * The filter owns copies of everything it keeps; obj may be freed
 * afterwards.  Returns 0 on success.  On failure returns -1, leaves *out
 * empty (filter_free() is still safe) and writes the client-facing reason
 * into err: "unsupported: ..." for unknown or multi-letter tag members,
 * "invalid: ..." for everything else.  Never exits.
 */
int filter_parse(const struct json *obj, struct filter *out, char *err,
    size_t errlen);

/* Releases what a parsed filter owns and empties it.  NULL is fine. */
void filter_free(struct filter *);
/*
 * filter_free() on each of the n filters of v, then frees v, an array
 * the caller owned.  v may be NULL when n is 0.  Never exits.
 */
void filters_free(struct filter *v, size_t n);

/*
 * 1 if ev matches f under NIP-01 (OR within a list, AND across members,
 * tag conditions against the first value of each tag, since <= created_at
 * <= until), else 0.  Ignores limit and NIP-40 expiration; the caller
 * decides about those.
 */
int filter_match(const struct filter *f, const struct event *ev);

/*
 * 1 if any filter of f[0..n) matches ev, else 0.
 */
int filter_match_any(const struct filter *f, size_t n, const struct event *ev);

#endif
