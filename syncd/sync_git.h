/*
 * sync_git.h: what the two halves of syncd's git-data hunt (reference
 * brief 3.15) share.  sync_git.c runs the hunt, the state machine of
 * each repository identifier with held events; sync_gitsrc.c is its git
 * source, the git children that check the repository and fetch from
 * the clone URLs.  Private to those two files.
 */
#ifndef GRASPD_SYNC_GIT_H
#define GRASPD_SYNC_GIT_H

#include <sys/types.h>
#include <sys/queue.h>

#include <netdb.h>
#include <stdint.h>

#include "buf.h"
#include "pktline.h"
#include "relayurl.h"
#include "syncd.h"

struct config;
struct event;
struct git_ev;
struct git_notice;

enum hunt_step {
	HS_IDLE,       /* waiting for gh_next_ms */
	HS_CHECK,      /* git cat-file runs */
	HS_FETCH_WAIT, /* the next fetch waits for a domain or a slot */
	HS_FETCH,      /* git fetch runs */
	HS_RESOLVE,    /* the current URL's host is being looked up */
};

struct git_want {
	char gw_oid[GIT_OID_HEX + 1];
	int  gw_have;
	int  gw_skip; /* not to be asked at the current URL again */
};

struct git_url {
	char	       *gu_url; /* what git is given */
	char		gu_key[RELAYURL_MAX + 1];
	struct relayurl gu_ru;
};

/* The fetches one domain (host) runs and started lately. */
struct git_domain {
	int	gd_running;
	int64_t gd_starts[SYNC_GIT_DOMAIN_RATE]; /* ms, a ring */
	size_t	gd_next;
};

/* The hunt for one repository identifier. */
struct git_hunt {
	char *gh_d;
	LIST_HEAD(, git_ev) gh_events;
	size_t		   gh_nevents;
	uint64_t	   gh_seen;
	int		   gh_gone;	/* no held event: drop */
	int		   gh_abort;	/* came back: end the attempt */
	int		   gh_attempts; /* since the last new event */
	int		   gh_renewed;	/* new event during an attempt */
	int64_t		   gh_next_ms;
	enum hunt_step	   gh_step;
	size_t		   gh_needed;  /* objects, last attempt */
	size_t		   gh_missing; /* at the last check */
	size_t		   gh_nurls_last;
	char		   gh_error[200];
	int		   gh_notified;
	char		  *gh_source;	   /* relay a held event came from */
	int64_t		   gh_source_till; /* ms: SYNC_GIT_DELAY_SYNCED */
	int		   gh_has_owner;
	uint8_t		   gh_owner[PUBKEY_LEN];
	/* The attempt in progress. */
	char		  *gh_repo;
	struct git_want	  *gh_wants;
	size_t		   gh_nwants;
	struct git_url	  *gh_urls;
	size_t		   gh_nurls;
	size_t		   gh_url;     /* the URL being tried */
	int		   gh_vetted;  /* its address is pinned */
	uint64_t	   gh_resolve; /* its lookup (resolve.h), or 0 */
	char		   gh_pin[RELAYURL_MAX + NI_MAXHOST + 64];
	int		   gh_single;  /* one object per fetch */
	int		   gh_fetched; /* a fetch brought objects */
	int		   gh_final;   /* the check ends the attempt */
	size_t		  *gh_batch;
	size_t		   gh_nbatch;
	/* The child (common/child.c's table reaps it). */
	struct sync_git	  *gh_sg;     /* for its callback */
	pid_t		   gh_pid;    /* 0: none */
	int		   gh_killed; /* by its deadline or gh_gone */
	int		   gh_out;    /* memfd: a check's output */
	int		   gh_err;    /* pipe: a fetch's errors */
	struct buf	   gh_errtail;
	struct git_domain *gh_domain;
};

struct sync_git {
	struct syncd *sg_sd;
	struct purg  *sg_purg;
	struct hmap   sg_hunts;	  /* d -> struct git_hunt */
	struct hmap   sg_events;  /* id -> struct git_ev */
	struct hmap   sg_anns;	  /* held ann id -> generation */
	struct hmap   sg_domains; /* host -> struct git_domain */
	char	      sg_self[4][RELAYURL_MAX + 1];
	const char   *sg_selfp[4];
	size_t	      sg_nself;
	unsigned      sg_urlflags;
	uint64_t      sg_gen;
	int	      sg_running; /* timers armed */
	int	      sg_sock;	  /* NN_REQ to relayd, or -1 */
	TAILQ_HEAD(, git_notice) sg_notices;
	int		       sg_notice_sent; /* the head is out */
	int64_t		       sg_notice_at;   /* ms */
	int		       sg_poll_armed;
	lws_sorted_usec_list_t sg_sul_tick;   /* the scan */
	lws_sorted_usec_list_t sg_sul_due;    /* the next hunt due */
	struct hmap	       sg_watch;      /* id -> relay key (ingested) */
	int64_t		       sg_watch_till; /* ms: scan fast until */
	int64_t		       sg_tick_at;    /* ms: the next scan */
	lws_sorted_usec_list_t sg_sul_poll;
	uint64_t	       sg_attempts;
	uint64_t	       sg_fetch_ok, sg_fetch_failed, sg_fetch_timeout;
	uint64_t	       sg_objects;
	uint64_t	       sg_refused;
	uint64_t	       sg_notice_ok, sg_notice_failed;
	uint64_t	       sg_released;
};

/* Owners with identifier d, and the clone URLs they list. */
struct git_sources {
	uint8_t (*so_owners)[PUBKEY_LEN];
	size_t so_nowners;
	char **so_urls;
	size_t so_nurls;
};

/* sync_git.c */
const struct config *sync_git_cfg(const struct sync_git *);
/* The attempt's error for `graspctl show syncd`. */
void		     sync_git_set_error(struct git_hunt *, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Ends an attempt and schedules the next one. */
void		   sync_git_finish(struct sync_git *, struct git_hunt *);
/* Queues a GIT_DATA notice for h's owner and d, unless one waits. */
void		   sync_git_notify(struct sync_git *, struct git_hunt *);
struct git_domain *sync_git_domain_get(struct sync_git *, const char *host);
int  sync_git_domain_allows(const struct git_domain *, int64_t now);
void sync_git_domain_start(struct git_domain *, int64_t now);
/* Arms the poll while a child runs, a notice or a fetch waits. */
void sync_git_arm_poll(struct sync_git *);
/*
 * A hunt's git child ended (child_done_cb, arg the hunt): the check's or
 * the fetch's result, or the end of an abandoned attempt.
 */
void sync_git_child_done(pid_t pid, int status, int killed, void *arg);

/* sync_gitsrc.c */
void		 sync_gitsrc_drain_err(struct git_hunt *);
void		 sync_gitsrc_child_close(struct sync_git *, struct git_hunt *);
/* Spawns git cat-file on the attempt's wants; 0, or -1 with the error. */
int		 sync_gitsrc_check(struct sync_git *, struct git_hunt *);
struct git_want *sync_gitsrc_want_find(struct git_hunt *, const char *oid);
void sync_gitsrc_check_done(struct sync_git *, struct git_hunt *, int status);
void sync_gitsrc_fetch_next(struct sync_git *, struct git_hunt *);
void sync_gitsrc_fetch_done(struct sync_git *, struct git_hunt *, int status);
void sync_gitsrc_sources_add(struct git_sources *, const struct event *,
    int owner);
int  sync_gitsrc_sources_stored(struct sync_git *, const char *d,
     struct git_sources *);
void sync_gitsrc_sources_free(struct git_sources *);
void sync_gitsrc_url_add(struct sync_git *, struct git_hunt *, const char *raw);
int  sync_gitsrc_repo_of(struct sync_git *, const uint8_t owner[PUBKEY_LEN],
     const char *d, char *out, size_t outlen);

#endif
