/*
 * relay_git.h: what relayd's git smart HTTP files share (relay_git.c:
 * routing, the request, the git child and its pipes, the push decision
 * and quotas; relay_git_body.c: the request body, de-chunked and
 * inflated, fed to git), and nothing else includes.
 */
#ifndef GRASPD_RELAY_GIT_H
#define GRASPD_RELAY_GIT_H

#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

#include "relayd.h"

/* Bytes moved per write to the client, per read from a pipe. */
#define GIT_IO_CHUNK	 (64 * 1024)
/* Ours: beyond the child's own deadline, the connection's. */
#define GIT_CONN_GRACE_S 30

/* The services' names, as git asks for them, by enum git_svc. */
static const char *const svc_name[] = { "git-upload-pack", "git-receive-pack" };

enum git_svc {
	SVC_UPLOAD = 0,
	SVC_RECEIVE = 1,
	SVC_NONE = 2,
};


/* Chunked transfer coding of a request body (RFC 9112 7.1). */
enum dc_state {
	DC_SIZE,
	DC_EXT,
	DC_SIZE_LF,
	DC_DATA,
	DC_DATA_CR,
	DC_DATA_LF,
	DC_TRAILER,
	DC_TRAILER_LF,
	DC_DONE,
};

struct dechunk {
	enum dc_state dc_state;
	uint64_t      dc_left;
	int	      dc_digits;
	int	      dc_linelen; /* bytes of the trailer line */
};

/* What a gitpipe reads or writes. */
enum gp_kind {
	GP_IN,	 /* the child's stdin */
	GP_OUT,	 /* the child's stdout */
	GP_SOCK, /* the client's socket (a dup), for the request body */
};

/* One descriptor of a request, adopted into the loop. */
struct gitpipe {
	struct relay_gitreq *gp_req; /* NULL once the request ended */
	struct lws	    *gp_wsi;
	int		     gp_fd;
	enum gp_kind	     gp_kind;
	int		     gp_paused;
};

/* Outlives the request: a release may end after the client left. */
struct gitwait {
	struct relay_gitreq *gw_req;
};

struct relay_gitreq {
	struct relay_conn	*gr_conn;
	struct lws		*gr_wsi;
	enum git_svc		 gr_svc;
	int			 gr_advertise; /* info/refs */
	int			 gr_head;      /* a HEAD request */
	uint8_t			 gr_owner[PUBKEY_LEN];
	char			*gr_d;
	char			 gr_repo[PATH_MAX];
	char			 gr_proto[160]; /* GIT_PROTOCOL=... or "" */
	int			 gr_prs;      /* GRASP-06 /prs/<npub>/<d>.git */
	int			 gr_created;  /* a /prs/ push made the repo */
	struct relay_addr	*gr_addr;     /* its place in the per-IP cap */
	uint64_t		 gr_quota;    /* a push's most body bytes */
	enum push_limit		 gr_limit;    /* which limit that is */
	int			 gr_over;     /* the quota stopped git */
	char			 gr_why[160]; /* what the quota says */
	LIST_ENTRY(relay_gitreq) gr_prs_entry; /* when gr_prs */
	/* Shared limits, against the pushes in flight (pushes). */
	uint64_t		 gr_room_repo;	    /* max_repo_bytes left */
	uint64_t		 gr_room_signer;    /* GRASP-06 signer quota */
	uint64_t		 gr_room_peer;	    /* unclaimed, per address */
	uint64_t		 gr_room_unclaimed; /* unclaimed, all */
	uint64_t		 gr_unclaimed;	    /* po_unclaimed */
	char			 gr_peer[64];	    /* the client's address */
	uint64_t		 gr_landed_repo;    /* landed since decided */
	uint64_t		 gr_landed_signer;
	int			 gr_inflight;
	int			 gr_drop_incoming; /* at its end */
	LIST_ENTRY(relay_gitreq) gr_push_entry;	   /* when gr_inflight */

	/* The request body. */
	int		       gr_chunked;
	struct dechunk	       gr_dc;
	int		       gr_gzip;
	int		       gr_zinit;
	int		       gr_zend; /* the gzip stream ended */
	z_stream	       gr_z;
	uint64_t	       gr_inbytes; /* after inflating */
	struct buf	       gr_in;	   /* waiting for the child */
	size_t		       gr_inoff;
	int		       gr_in_done;
	int		       gr_discard; /* the rest is dropped */
	int		       gr_rx_paused;
	int		       gr_has_clen;   /* a Content-Length came */
	uint64_t	       gr_clen;	      /* its value */
	uint64_t	       gr_raw;	      /* body bytes as sent */
	uint64_t	       gr_drained;    /* dropped after a refusal */
	int		       gr_drain_over; /* stop waiting for the rest */
	int		       gr_early;      /* an early end was recorded */
	struct gitpipe	      *gr_psock;      /* we read the body ourselves */
	int		       gr_taken;      /* ...since take_body() */
	int		       gr_given_back; /* lws reads the socket again */
	lws_sorted_usec_list_t gr_drain_sul;  /* drain's time bound */
	lws_sorted_usec_list_t gr_to_sul;     /* drops lws's body timeout */

	/* A push: its ref updates, the decision. */
	struct relay_push_cmd *gr_cmds;
	size_t		       gr_ncmds;
	size_t		       gr_cmdoff; /* parsed so far */
	int		       gr_decided;
	int		       gr_sideband;    /* the client asked for it */
	int		       gr_may_delete;  /* git's walls down, as the */
	int		       gr_may_rewrite; /* push decision says */

	/* The child. */
	pid_t		gr_pid;
	int64_t		gr_t0; /* request arrival, ms */
	int		gr_exited;
	int		gr_status;
	struct gitpipe *gr_pin, *gr_pout;
	struct gitwait *gr_wait; /* a release in progress */

	/* The response. */
	unsigned	       gr_code; /* 0 until decided */
	const char	      *gr_type;
	int		       gr_hdr_sent;
	struct buf	       gr_out;
	size_t		       gr_outoff;
	int		       gr_out_eof;
	uint64_t	       gr_outbytes;
	int		       gr_done;	   /* no more output will come */
	int		       gr_closing; /* all written: close */
	lws_sorted_usec_list_t gr_sul;	   /* the request's deadline */
	lws_sorted_usec_list_t gr_pin_sul; /* re-arms stdin POLLOUT */
};

/* Adopts the child's descriptor fd into the loop as gr's pipe of kind. */
struct gitpipe *relay_git_adopt_pipe(struct relay_gitreq *gr, int fd,
    enum gp_kind kind);
/* Authorises a push once its commands are in; starts git or refuses. */
void		relay_git_decide_push(struct relay_gitreq *gr);
/* Ends the request with an error response (before any header). */
void		relay_git_finish_error(struct relay_gitreq *gr, unsigned code,
	       const char *text);
/*
 * 1 if the push's bytes with those reserved by the other pushes in flight
 * (and landed since it was authorised) pass the repository's or the
 * signer's room; gr_limit and gr_why then say which.
 */
int		relay_git_over_shared(struct relay_gitreq *gr);
/* Moves buffered request bytes toward the child. */
void		relay_git_pump_in(struct relay_gitreq *gr);
/* Refuses a push over gr_quota with "ERR <limit>: <why>". */
void		relay_git_refuse_over(struct relay_gitreq *gr);
/*
 * Refuses a push with "ERR <what>: <reason>", git stopped if it runs.  The
 * answer follows the rest of the body, read and dropped, so that the
 * client sees it; if git's answer has begun, the connection just ends.
 */
void		relay_git_refuse_push(struct relay_gitreq *gr, const char *what,
	       const char *reason);
/* Asks for a writeable callback on gr's connection when it can take one
 * (lws serves no POLLOUT while the connection's reading is paused). */
void		relay_git_want_write(struct relay_gitreq *gr);
/* The whole request body is in. */
void		relay_git_body_end(struct relay_gitreq *gr);
/*
 * Body bytes as the client sent them (chunked framing, gzip), from lws or
 * from the socket: decodes them on toward git, or counts them while a
 * refusal drains the rest.  Ends the body at its last byte.
 */
void relay_git_body_raw(struct relay_gitreq *gr, const unsigned char *p,
    size_t n);
/*
 * Records that the request's body will not reach git whole: logs why with
 * the bytes seen, and counts the cause.  Once per request.
 */
void relay_git_early_end(struct relay_gitreq *, enum git_early, const char *,
    ...) __attribute__((format(printf, 3, 4)));

#endif
