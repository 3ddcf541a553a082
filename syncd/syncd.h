/*
 * syncd.h: private header of syncd, graspd's GRASP-02 sync role.
 *
 * syncd.c     main and the role hooks (role.h): view, metrics
 * sync_inv.c  the inventories sync will work from: accepted repository
 *             announcements and the roots that name them
 *
 * What exists so far is the inventory, rebuilt from the database at start
 * and followed on the accepted feed.  Fetching from remote relays (the
 * GRASP-02 layers, root-author inboxes, fallback relays) is not written
 * yet; nothing here pretends to do it.
 */
#ifndef GRASPD_SYNCD_H
#define GRASPD_SYNCD_H

#include <stddef.h>
#include <stdint.h>

#include "policy.h"	/* the NIP-34 kind numbers */

struct event;

/* A set of byte strings (open addressing). */
struct strset {
	struct strset_ent {
		char	*se_s;		/* NULL: empty slot */
		size_t	 se_len;
	}		*ss_v;
	size_t		 ss_cap;	/* a power of two, or 0 */
	size_t		 ss_n;
};

/* Adds a copy of s; 1 if it was new, 0 if already there. */
int	strset_add(struct strset *, const char *s, size_t len);
/* 1 if s is in the set, else 0. */
int	strset_has(const struct strset *, const char *s, size_t len);
/* Frees the set and empties it. */
void	strset_free(struct strset *);

struct sync_inv {
	struct strset	si_repos;	/* "30617:<pubkey hex>:<d>" */
	struct strset	si_roots;	/* root event ids, hex */
	uint64_t	si_announcements;	/* 30617 events seen */
	uint64_t	si_roots_by_kind[3];	/* 1617, 1618, 1621 */
	uint64_t	si_unlinked;	/* root kinds naming no known repo */
};

/* Index of a root kind in si_roots_by_kind, or -1. */
int	sync_root_kind_index(uint32_t kind);
/* Takes one stored event into the inventory (any kind; others ignored). */
void	sync_inv_add(struct sync_inv *, const struct event *);
void	sync_inv_free(struct sync_inv *);

#endif
