/*
 * relay_purg.h: what the purgatory's files share (relay_purg.c,
 * relay_purg_align.c, relay_purg_prs.c, relay_purg_sweep.c); relayd.h has
 * what the rest of relayd calls.
 */
#ifndef GRASPD_RELAY_PURG_H
#define GRASPD_RELAY_PURG_H

#include <stddef.h>
#include <stdint.h>

#include "relayd.h"

/* Stored events matching one filter, collected. */
struct evlist {
	struct event **v;
	size_t	       n;
};


/* Git work that waits for the commit. */
struct later_job {
	enum {
		LJ_ALIGN,
		LJ_SET,
		LJ_DELETE,
		LJ_REMOVE
	} lj_kind;
	uint8_t	      lj_owner[PUBKEY_LEN];
	uint8_t	      lj_src[PUBKEY_LEN];
	char	     *lj_d;
	char	     *lj_ref;
	char	      lj_oid[GIT_OID_HEX + 1];
	struct event *lj_state;
};

/* The safe identifier of a 30617 or 30618 into d, or -1 (relay_purg.c). */
int  relay_purg_identifier(const struct event *ev, char *d, size_t dlen);
/* The stored states (kind 30618) with identifier d (relay_purg.c). */
int  relay_purg_stored_states(const char *d, struct evlist *out);
void relay_purg_evlist_free(struct evlist *l);
/*
 * Git work of kind (LJ_*) on owner's repository d, run after the commit
 * (relay_purg_align.c); relay_purg_job_ref() for a ref set to or deleted
 * at oid, from src's repository (NULL: the owner's).
 */
struct later_job *relay_purg_job(int kind, const uint8_t owner[PUBKEY_LEN],
    const char *d);
void		  relay_purg_job_ref(int kind, const uint8_t owner[PUBKEY_LEN],
		 const char *d, const char *ref, const char *oid, const uint8_t *src);
/*
 * GRASP-06, the event after the push: the /prs/ ref of PR ev is mirrored
 * when it is the event's commit c (1: the push is here, and its copy
 * releases the event), and deleted when it is not (0)
 * (relay_purg_prs.c).
 */
int relay_purg_prs_event_arrived(const struct event *ev, const char *d,
    const char *c);

#endif
