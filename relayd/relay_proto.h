/*
 * relay_proto.h: the pure part of reading a NIP-01 client message in
 * relayd (relay_proto.c): the JSON array, its verb and shape, a REQ's
 * subscription id and filters, CLOSE's id, and an EVENT's or AUTH's
 * event with the checks that need neither the store nor the loop.  Each
 * function either gives the parsed request or the exact answer text
 * relayd sends.  No globals, no libwebsockets, no store: the caller
 * passes the clock and what it knows of the connection, and does the
 * I/O (relay_ws.c, relay_ingest.c).
 */
#ifndef GRASPD_RELAY_PROTO_H
#define GRASPD_RELAY_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "filter.h"
#include "json.h"
#include "nip19.h"
#include "policy.h"

/*
 * Limits, advertised in NIP-11 "limitation" (nips.md 2).  Where a number
 * is ours, the comment says why.
 */
/* Ours: 1 MiB, room for a 60 kB patch (NIP-34) many times over. */
#define RELAY_MAX_MESSAGE      (1024 * 1024)
/* STRFRY maxSubsPerConnection (nips.md 1.10). */
#define RELAY_MAX_SUBS	       200
/* Ours: filters in one REQ; GRASP-02 peers send one filter per REQ. */
#define RELAY_MAX_FILTERS      50
/* NIP-01: a subscription id is at most 64 characters. */
#define RELAY_MAX_SUBID	       64
/* STRFRY maxNumTags (nips.md 1.10). */
#define RELAY_MAX_TAGS	       2000
/* Ours: unicode characters of content (PR and issue bodies are markdown). */
#define RELAY_MAX_CONTENT      (256 * 1024)
/* STRFRY rejectEventsNewerThanSeconds (nips.md 1.10). */
#define RELAY_CREATED_AT_AHEAD 900

/* Ours: room for a NOTICE or CLOSED text of relay_proto.c. */
#define RELAY_PROTO_ANSWER 256

/* What a client message is, by its verb (NIP-01, 42, 45, 77). */
enum relay_msg_type {
	RELAY_MSG_BAD, /* not JSON, or not ["<verb>", ...] */
	RELAY_MSG_EVENT,
	RELAY_MSG_REQ,
	RELAY_MSG_CLOSE,
	RELAY_MSG_AUTH,
	RELAY_MSG_COUNT, /* NIP-45: shaped as a REQ */
	RELAY_MSG_NEG,	 /* "NEG-*": relay_neg.c reads the rest */
	RELAY_MSG_OTHER	 /* a verb relayd does not serve */
};

/* How a refused message is answered. */
enum relay_answer {
	RELAY_ANS_NONE,	  /* accepted: no answer from this layer */
	RELAY_ANS_NOTICE, /* ["NOTICE", text] */
	RELAY_ANS_CLOSED  /* ["CLOSED", subid, text] */
};

/* An accepted REQ: the id and its filters, which the caller then owns. */
struct relay_req {
	char	       rq_id[RELAY_MAX_SUBID + 1];
	struct filter *rq_filters;
	size_t	       rq_nfilters;
	const char    *rq_closed_id; /* refused with CLOSED: its id */
};

enum relay_msg_type relay_proto_message(const char *data, size_t len,
    struct json_doc **docp, const struct json **msgp, char *ans, size_t anslen);
enum relay_answer   relay_proto_req(const struct json *msg, size_t nsubs,
      int (*known)(const char *, void *), void *arg, struct relay_req *rq,
      char *ans, size_t anslen);
void		    relay_req_free(struct relay_req *);
enum relay_answer   relay_proto_close(const struct json *msg, const char **idp,
      char *ans, size_t anslen);
void relay_proto_okid(const struct json *evj, char okid[EVENT_ID_HEX_LEN + 1]);
int  relay_proto_check_event(const struct event *ev, int64_t now,
     size_t max_size, char *msg, size_t msglen);
struct event *relay_proto_event(const struct json *evj, const char *challenge,
    const struct policy *pl, int64_t now, size_t max_size,
    char okid[EVENT_ID_HEX_LEN + 1], char *msg, size_t msglen);

/*
 * Where a path on the relay port that names a repository goes
 * (relay_route.c): relay_git_route() fills rt from the percent-decoded
 * path uri (len bytes; grasp06: GRASP-06 is on) and returns its kind.
 */
enum git_route_kind {
	GR_NOT_MINE,  /* not /<npub>/<d>.git[/...]: another handler's */
	GR_NOT_FOUND, /* /prs/ with GRASP-06 off, or no repository there */
	GR_BAD_NPUB,  /* the first segment is not an npub (rt_status) */
	GR_NO_REPO,   /* the identifier is too long or not safe */
	GR_REPO_PAGE, /* /<npub>/<d>.git[/]: the repository's page */
	GR_INFO_REFS, /* .../info/refs: the advertisement */
	GR_UPLOAD,    /* .../git-upload-pack */
	GR_RECEIVE,   /* .../git-receive-pack */
	GR_SUB,	      /* another path below the repository (rt_rest) */
};

struct git_route {
	enum git_route_kind rt_kind;
	int		    rt_prs;    /* under GRASP-06's /prs/ */
	int		    rt_web;    /* a page: errors answered as pages */
	unsigned	    rt_status; /* GR_BAD_NPUB: 400, 404 under /prs/ */
	char		    rt_npub[NIP19_MAX_LEN + 1];
	uint8_t		    rt_owner[PUBKEY_LEN];
	char		    rt_d[1024]; /* the identifier, NUL-terminated */
	const char	   *rt_rest;	/* in uri, after <d>.git */
	size_t		    rt_restlen;
};

enum git_route_kind relay_git_route(const char *uri, size_t len, int grasp06,
    struct git_route *rt);

#endif
