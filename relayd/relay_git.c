/*
 * relay_git.c: relayd's git smart HTTP (GRASP-01) on the relay port:
 *
 *   GET  /<npub>/<id>.git/info/refs?service=git-upload-pack|git-receive-pack
 *   POST /<npub>/<id>.git/git-upload-pack
 *   POST /<npub>/<id>.git/git-receive-pack
 *   GET  /<npub>/<id>.git          a small page about the repository
 *
 * Each request runs Debian's git as a child of relayd ("git upload-pack"
 * or "git receive-pack" with --stateless-rpc) and never blocks the loop:
 * the request body (de-chunked, gzip inflated) streams to the child's
 * stdin and its stdout streams back through pipes adopted into the
 * libwebsockets loop, each side pausing the other when RELAY_GIT_PIPE_BUF
 * bytes wait.  A push is authorised (relay_pushgate.c, relay_pushauth.c) from
 * its ref updates before any git process runs; a refused push is answered
 * HTTP 200 with "ERR authorisation failed: <reason>", the receive-pack
 * result clients show.  git receive-pack then runs with deletions and
 * non-fast-forward updates denied unless the decision allowed one, and
 * never deletes the branch HEAD names; the body it is fed stops at the
 * push's byte limits (max_push_bytes, max_repo_bytes, GRASP-06's quota),
 * past which git is stopped and the client gets "ERR <limit>: <why>".
 * After its first bytes a body is read from the socket by relayd itself
 * (take_body(), relay_git_body.c): lws 4.1 cuts a body without a length
 * at 100 MiB.  A body
 * that ends early is logged, counted by cause (enum git_early) and
 * answered with an ERR line; after a refusal the rest is read and dropped
 * (bounded) so that the answer reaches a client still sending.
 * One address has at most max_git_requests_per_ip requests in progress
 * (relay_addr.c); more are answered HTTP 429.  After a successful push the
 * response ends only once the git data it brought has released what it
 * satisfies.  Git responses carry no length and close the connection
 * when done.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "event.h"
#include "log.h"
#include "nip19.h"
#include "purg.h"
#include "relay_git.h"
#include "relayd.h"

void
relay_git_want_write(struct relay_gitreq *gr)
{
	if (gr->gr_wsi == NULL)
		return;
	if (gr->gr_taken && !gr->gr_given_back) {
		/*
		 * lws 4.1 serves no POLLOUT of a connection whose reading
		 * is paused (it spins on it): the answer waits until the
		 * body is in, or given up, and lws reads again.
		 */
		if (!gr->gr_in_done && !gr->gr_drain_over &&
		    gr->gr_psock != NULL)
			return;
		gr->gr_given_back = 1;
		lws_rx_flow_control(gr->gr_wsi, 1);
	}
	lws_callback_on_writable(gr->gr_wsi);
}

static size_t
out_pending(const struct relay_gitreq *gr)
{
	return gr->gr_out.b_len - gr->gr_outoff;
}

static size_t
in_pending(const struct relay_gitreq *gr)
{
	return gr->gr_in.b_len - gr->gr_inoff;
}

/*
 * Pauses (allow 0) or resumes reading the request body from the client,
 * wherever it is read from.
 */
static void
rx_flow(struct relay_gitreq *gr, int allow)
{
	if (gr->gr_psock != NULL)
		lws_rx_flow_control(gr->gr_psock->gp_wsi, allow);
	else if (gr->gr_wsi != NULL)
		lws_rx_flow_control(gr->gr_wsi, allow);
}

void
relay_git_early_end(struct relay_gitreq *gr, enum git_early cause,
    const char *fmt, ...)
{
	static const char *const name[GIT_EARLY_COUNT] = { "client gone",
		"limit", "request too large", "timeout", "malformed body",
		"git exited", "body cut" };
	char			 why[256];
	va_list			 ap;

	if (gr->gr_early)
		return;
	gr->gr_early = 1;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	relayd->stats.git_early[cause]++;
	log_warnx(
	    "git %s for %s ended early (%s): %s; %llu body bytes read, %llu after decoding",
	    svc_name[gr->gr_svc], gr->gr_d, name[cause], why,
	    (unsigned long long)gr->gr_raw, (unsigned long long)gr->gr_inbytes);
}

/*
 * Drops the consumed front of a buffer once it is large, so that a long
 * transfer keeps about RELAY_GIT_PIPE_BUF in memory, not all it moved.
 */
static void
compact(struct buf *b, size_t *off)
{
	if (*off == b->b_len) {
		buf_reset(b);
		*off = 0;
	} else if (*off >= RELAY_GIT_PIPE_BUF / 2) {
		memmove(b->b_data, b->b_data + *off, b->b_len - *off);
		b->b_len -= *off;
		b->b_data[b->b_len] = '\0';
		*off = 0;
	}
}

/* Appends one pkt-line (RFC-less, git's protocol-common format). */
static void pkt_line(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
pkt_line(struct buf *b, const char *fmt, ...)
{
	char	line[GIT_PKT_MAX];
	va_list ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 4, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 5)
		n = (int)sizeof(line) - 5;
	buf_printf(b, "%04x", n + 4);
	buf_add(b, line, (size_t)n);
}

/* Closes our end of a pipe (lws owns the descriptor). */
static void
pipe_drop(struct gitpipe *gp)
{
	if (gp == NULL)
		return;
	gp->gp_req = NULL;
	if (gp->gp_wsi != NULL)
		lws_set_timeout(gp->gp_wsi, PENDING_TIMEOUT_USER_OK,
		    LWS_TO_KILL_ASYNC);
}

/* The /prs/ requests running, so that none loses its repository. */
static LIST_HEAD(, relay_gitreq) prs_reqs = LIST_HEAD_INITIALIZER(prs_reqs);

/*
 * The pushes authorised and not yet ended: each one's bytes so far are
 * reserved against the repository's max_repo_bytes and the signer's
 * GRASP-06 quota of the others, which computed their room from the disk
 * without them; once one lands, its bytes are charged to those still
 * running (gr_landed_*), the disk they measured being older.
 */
static LIST_HEAD(, relay_gitreq) pushes = LIST_HEAD_INITIALIZER(pushes);

static int
same_signer(const struct relay_gitreq *a, const struct relay_gitreq *b)
{
	return a->gr_prs && b->gr_prs &&
	    memcmp(a->gr_owner, b->gr_owner, sizeof(a->gr_owner)) == 0;
}

/* A push ends (landed: git took it) and leaves the list. */
static void
push_leave(struct relay_gitreq *gr, int landed)
{
	struct relay_gitreq *o;

	if (!gr->gr_inflight)
		return;
	LIST_REMOVE(gr, gr_push_entry);
	gr->gr_inflight = 0;
	if (!landed)
		return;
	LIST_FOREACH(o, &pushes, gr_push_entry) {
		if (strcmp(o->gr_repo, gr->gr_repo) == 0 &&
		    (o->gr_unclaimed || !gr->gr_unclaimed))
			o->gr_landed_repo += gr->gr_inbytes;
		if (same_signer(o, gr))
			o->gr_landed_signer += gr->gr_inbytes;
	}
}

/*
 * GRASP-06 git-first pushes: a /prs/ refs/nostr/<id> that no PR event of
 * the path's signer claims yet is charged to the address that pushed it
 * (grasp06_unclaimed_bytes_per_ip) and to all unclaimed data
 * (grasp06_unclaimed_bytes), not to the signer; a PR event claims it
 * (relay_git_unclaimed_claim()), else it goes when a placeholder would
 * (relay_git_unclaimed_sweep()).  Kept in memory: after a restart what
 * is on disk counts as the signer's again.
 */
struct unclaimed {
	LIST_ENTRY(unclaimed) u_entry;
	uint8_t		      u_signer[PUBKEY_LEN];
	char		     *u_d;
	char		      u_ref[RELAY_REF_NOSTR_LEN + 65];
	char		      u_oid[GIT_OID_HEX + 1];
	char		      u_peer[64];
	int	 u_prs; /* a /prs/ repository, else a placeholder */
	uint64_t u_bytes;
	int64_t	 u_expires; /* ms */
};

static LIST_HEAD(, unclaimed) unclaimed = LIST_HEAD_INITIALIZER(unclaimed);

static void
unclaimed_free(struct unclaimed *u)
{
	LIST_REMOVE(u, u_entry);
	free(u->u_d);
	free(u);
}

/* Unclaimed /prs/ bytes from peer (NULL: any) or of signer (NULL: any). */
static uint64_t
unclaimed_sum(const char *peer, const uint8_t *signer)
{
	struct unclaimed *u;
	uint64_t	  sum = 0;

	LIST_FOREACH(u, &unclaimed, u_entry)
		if (u->u_prs &&
		    (peer == NULL || strcmp(u->u_peer, peer) == 0) &&
		    (signer == NULL ||
			memcmp(u->u_signer, signer, PUBKEY_LEN) == 0))
			sum += u->u_bytes;
	return sum;
}

/* Bytes of the unclaimed placeholders of repository (owner, d). */
static uint64_t
unclaimed_repo(const uint8_t owner[PUBKEY_LEN], const char *d)
{
	struct unclaimed *u;
	uint64_t	  sum = 0;

	LIST_FOREACH(u, &unclaimed, u_entry)
		if (!u->u_prs && memcmp(u->u_signer, owner, PUBKEY_LEN) == 0 &&
		    strcmp(u->u_d, d) == 0)
			sum += u->u_bytes;
	return sum;
}

/* A git-first /prs/ push landed: its unclaimed refs are remembered. */
static void
unclaimed_add(struct relay_gitreq *gr)
{
	struct unclaimed *u;
	size_t		  i, n = 0;

	for (i = 0; i < gr->gr_ncmds && i < 64; i++)
		n += (gr->gr_unclaimed >> i) & 1;
	for (i = 0; i < gr->gr_ncmds && i < 64; i++) {
		if (!((gr->gr_unclaimed >> i) & 1))
			continue;
		if ((u = calloc(1, sizeof(*u))) == NULL ||
		    (u->u_d = strdup(gr->gr_d)) == NULL)
			fatal("unclaimed_add");
		memcpy(u->u_signer, gr->gr_owner, PUBKEY_LEN);
		snprintf(u->u_ref, sizeof(u->u_ref), "%s",
		    gr->gr_cmds[i].pc_ref);
		snprintf(u->u_oid, sizeof(u->u_oid), "%s",
		    gr->gr_cmds[i].pc_new);
		snprintf(u->u_peer, sizeof(u->u_peer), "%s", gr->gr_peer);
		u->u_prs = gr->gr_prs;
		u->u_bytes = gr->gr_inbytes / n;
		u->u_expires = relay_now_ms() +
		    (int64_t)(relay_purg_delay(PURG_EXPIRY_S) * 1000);
		LIST_INSERT_HEAD(&unclaimed, u, u_entry);
	}
}

void
relay_git_unclaimed_claim(const uint8_t signer[PUBKEY_LEN], const char *d,
    const char *ref, int prs)
{
	struct unclaimed *u, *next;

	for (u = LIST_FIRST(&unclaimed); u != NULL; u = next) {
		next = LIST_NEXT(u, u_entry);
		if (u->u_prs == prs &&
		    memcmp(u->u_signer, signer, PUBKEY_LEN) == 0 &&
		    strcmp(u->u_d, d) == 0 && strcmp(u->u_ref, ref) == 0)
			unclaimed_free(u);
	}
}

void
relay_git_unclaimed_sweep(void)
{
	struct unclaimed *u, *next;
	char		  repo[PATH_MAX];
	int64_t		  now = relay_now_ms();

	for (u = LIST_FIRST(&unclaimed); u != NULL; u = next) {
		next = LIST_NEXT(u, u_entry);
		if (u->u_expires > now)
			continue;
		if (!u->u_prs) {
			/* The placeholder's own expiry removes it. */
			unclaimed_free(u);
			continue;
		}
		/* Never under a push: the next sweep. */
		if (relay_repo_prs_path(u->u_signer, u->u_d, repo,
			sizeof(repo)) == 0 &&
		    relay_git_pushing(repo))
			continue;
		log_info("/prs/ %s in %s: no PR event claimed it; removing it",
		    u->u_ref, u->u_d);
		relay_repo_prs_drop_ref(u->u_signer, u->u_d, u->u_ref,
		    u->u_oid);
		unclaimed_free(u);
	}
}

int
relay_git_pushing(const char *repo)
{
	struct relay_gitreq *o;

	LIST_FOREACH(o, &pushes, gr_push_entry)
		if (strcmp(o->gr_repo, repo) == 0)
			return 1;
	return 0;
}

/*
 * Removes the quarantines killed pushes left in the request's repository,
 * or leaves that to the last push still running there: git names them
 * only by a random suffix, and a running one's is in use.
 */
static void
drop_incoming(struct relay_gitreq *gr)
{
	struct relay_gitreq *o;

	LIST_FOREACH(o, &pushes, gr_push_entry)
		if (o != gr && strcmp(o->gr_repo, gr->gr_repo) == 0) {
			o->gr_drop_incoming = 1;
			return;
		}
	relay_repo_drop_incoming(gr->gr_repo);
}

/*
 * 1 if the push's bytes with those reserved by the other pushes in flight
 * (and landed since it was authorised) pass the repository's or the
 * signer's room; gr_limit and gr_why then say which.
 */
int
relay_git_over_shared(struct relay_gitreq *gr)
{
	struct relay_gitreq *o;
	uint64_t	     repo = gr->gr_landed_repo;
	uint64_t	     signer = gr->gr_landed_signer;
	uint64_t	     peer = 0, all = 0;

	LIST_FOREACH(o, &pushes, gr_push_entry) {
		if (o == gr)
			continue;
		if (strcmp(o->gr_repo, gr->gr_repo) == 0 &&
		    (gr->gr_unclaimed || !o->gr_unclaimed))
			repo += o->gr_inbytes;
		if (same_signer(o, gr) && !o->gr_unclaimed)
			signer += o->gr_inbytes;
		if (gr->gr_unclaimed && o->gr_unclaimed && gr->gr_prs &&
		    o->gr_prs) {
			all += o->gr_inbytes;
			if (strcmp(o->gr_peer, gr->gr_peer) == 0)
				peer += o->gr_inbytes;
		}
	}
	if (gr->gr_unclaimed && gr->gr_inbytes + peer > gr->gr_room_peer) {
		gr->gr_limit = PUSH_LIMIT_GRASP06;
		snprintf(gr->gr_why, sizeof(gr->gr_why),
		    "pushes from your address that no PR event claims yet would pass %d bytes here; publish the PR event first",
		    relayd->cfg.grasp06_unclaimed_bytes_per_ip);
		return 1;
	}
	if (gr->gr_unclaimed && gr->gr_inbytes + all > gr->gr_room_unclaimed) {
		gr->gr_limit = PUSH_LIMIT_GRASP06;
		snprintf(gr->gr_why, sizeof(gr->gr_why),
		    "pushes that no PR event claims yet would pass %d bytes here; publish the PR event first",
		    relayd->cfg.grasp06_unclaimed_bytes);
		return 1;
	}
	if (gr->gr_room_repo != UINT64_MAX &&
	    gr->gr_inbytes + repo > gr->gr_room_repo) {
		gr->gr_limit = PUSH_LIMIT_REPO;
		snprintf(gr->gr_why, sizeof(gr->gr_why),
		    "the repository would pass %d bytes with the pushes in progress",
		    relayd->cfg.max_repo_bytes);
		return 1;
	}
	if (gr->gr_room_signer != UINT64_MAX &&
	    gr->gr_inbytes + signer > gr->gr_room_signer) {
		gr->gr_limit = PUSH_LIMIT_GRASP06;
		snprintf(gr->gr_why, sizeof(gr->gr_why),
		    "the signer's repositories here would pass %d bytes with the pushes in progress",
		    relayd->cfg.grasp06_max_bytes_per_signer);
		return 1;
	}
	return 0;
}

/* A /prs/ request ends: its repository goes if no ref was left in it. */
static void
prs_end(struct relay_gitreq *gr)
{
	struct relay_gitreq *o;

	LIST_REMOVE(gr, gr_prs_entry);
	if (!gr->gr_created)
		return;
	LIST_FOREACH(o, &prs_reqs, gr_prs_entry)
		if (strcmp(o->gr_repo, gr->gr_repo) == 0) {
			/* The last one to end prunes. */
			o->gr_created = 1;
			return;
		}
	relay_repo_prs_prune(gr->gr_repo);
}

static void
gitreq_free(struct relay_gitreq *gr)
{
	size_t i;

	lws_sul_cancel(&gr->gr_sul);
	lws_sul_cancel(&gr->gr_pin_sul);
	lws_sul_cancel(&gr->gr_drain_sul);
	lws_sul_cancel(&gr->gr_to_sul);
	if (!gr->gr_advertise && !gr->gr_in_done && !gr->gr_done)
		relay_git_early_end(gr, GIT_EARLY_CLIENT,
		    "the connection closed before the body ended");
	if (gr->gr_pid > 0 && !gr->gr_exited)
		child_abandon(gr->gr_pid);
	pipe_drop(gr->gr_pin);
	pipe_drop(gr->gr_pout);
	pipe_drop(gr->gr_psock);
	if (gr->gr_wait != NULL)
		gr->gr_wait->gw_req = NULL;
	if (gr->gr_zinit)
		inflateEnd(&gr->gr_z);
	for (i = 0; i < gr->gr_ncmds; i++)
		free(gr->gr_cmds[i].pc_ref);
	free(gr->gr_cmds);
	buf_free(&gr->gr_in);
	buf_free(&gr->gr_out);
	relay_addr_git_end(gr->gr_addr);
	push_leave(gr, 0);
	/* git killed mid-pack leaves its quarantine behind. */
	if (gr->gr_over || gr->gr_drop_incoming)
		drop_incoming(gr);
	if (gr->gr_prs)
		prs_end(gr);
	free(gr->gr_d);
	free(gr);
}

void
relay_git_close(struct relay_conn *c)
{
	if (c->rc_git == NULL)
		return;
	gitreq_free(c->rc_git);
	c->rc_git = NULL;
}

static void
conn_timeout(lws_sorted_usec_list_t *sul)
{
	struct relay_gitreq *gr =
	    lws_container_of(sul, struct relay_gitreq, gr_sul);

	log_warnx("git request for %s took too long; closing it", gr->gr_d);
	if (!gr->gr_advertise && !gr->gr_in_done)
		relay_git_early_end(gr, GIT_EARLY_TIMEOUT,
		    "the request passed its %d s deadline",
		    RELAY_GIT_TIMEOUT_S + GIT_CONN_GRACE_S);
	if (gr->gr_svc == SVC_RECEIVE && !gr->gr_advertise &&
	    !gr->gr_hdr_sent && gr->gr_wsi != NULL) {
		/* The client may still read: tell it why, briefly. */
		relay_git_refuse_push(gr, "timeout", "the push took too long");
		gr->gr_drain_over = 1;
		gr->gr_done = 1;
		relay_git_want_write(gr);
		lws_set_timeout(gr->gr_wsi, PENDING_TIMEOUT_USER_OK,
		    GIT_CONN_GRACE_S);
		return;
	}
	if (gr->gr_pid > 0 && !gr->gr_exited) {
		child_abandon(gr->gr_pid);
		gr->gr_exited = 1;
	}
	if (gr->gr_wsi != NULL)
		lws_set_timeout(gr->gr_wsi, PENDING_TIMEOUT_USER_OK,
		    LWS_TO_KILL_ASYNC);
}

/* The headers of the response; the body streams after them. */
static int
send_headers(struct relay_gitreq *gr, struct lws *wsi)
{
	unsigned char  hbuf[LWS_PRE + 1024], *start = hbuf + LWS_PRE;
	unsigned char *p = start, *end = hbuf + sizeof(hbuf) - 1;

	if (lws_add_http_common_headers(wsi, gr->gr_code, gr->gr_type,
		gr->gr_head ? 0 : LWS_ILLEGAL_HTTP_CONTENT_LEN, &p, end) ||
	    relay_http_add_cors(wsi, &p, end) ||
	    lws_add_http_header_by_name(wsi,
		(const unsigned char *)"cache-control:",
		(const unsigned char *)"no-cache", 8, &p, end) ||
	    lws_add_http_header_by_name(wsi, (const unsigned char *)"expires:",
		(const unsigned char *)"Fri, 01 Jan 1980 00:00:00 GMT", 29, &p,
		end) ||
	    lws_add_http_header_by_name(wsi, (const unsigned char *)"pragma:",
		(const unsigned char *)"no-cache", 8, &p, end) ||
	    lws_add_http_header_by_name(wsi, (const unsigned char *)"server:",
		(const unsigned char *)"graspd", 6, &p, end) ||
	    lws_finalize_write_http_header(wsi, start, &p, end))
		return -1;
	gr->gr_hdr_sent = 1;
	return 0;
}

int
relay_git_writeable(struct relay_conn *c, struct lws *wsi)
{
	static unsigned char chunk[LWS_PRE + GIT_IO_CHUNK];
	struct relay_gitreq *gr = c->rc_git;
	size_t		     n;
	int		     last;

	if (gr == NULL)
		return 0;
	if (gr->gr_closing)
		return -1;
	/* A refusal waits for the rest of the body (bounded): a client
	 * still sending would see a reset, not the answer. */
	if (gr->gr_discard && !gr->gr_in_done && !gr->gr_drain_over &&
	    !gr->gr_advertise)
		return 0;
	if (!gr->gr_hdr_sent) {
		if (gr->gr_code == 0) {
			/* Nothing from the child yet: status unknown. */
			if (out_pending(gr) == 0 &&
			    !(gr->gr_out_eof && gr->gr_exited))
				return 0;
			if (out_pending(gr) == 0 && gr->gr_status != 0) {
				relay_git_finish_error(gr,
				    HTTP_STATUS_INTERNAL_SERVER_ERROR,
				    "git failed\n");
			} else
				gr->gr_code = HTTP_STATUS_OK;
		}
		if (send_headers(gr, wsi) == -1)
			return -1;
		if (gr->gr_head)
			gr->gr_closing = 1;
		relay_git_want_write(gr);
		return 0;
	}
	n = out_pending(gr);
	if (n > GIT_IO_CHUNK)
		n = GIT_IO_CHUNK;
	last = gr->gr_done ||
	    (gr->gr_out_eof && gr->gr_exited && gr->gr_wait == NULL);
	last = last && n == out_pending(gr);
	if (n > 0 || last) {
		if (n > 0)
			memcpy(chunk + LWS_PRE,
			    gr->gr_out.b_data + gr->gr_outoff, n);
		if (lws_write(wsi, chunk + LWS_PRE, n,
			last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != (int)n)
			return -1;
		gr->gr_outoff += n;
		compact(&gr->gr_out, &gr->gr_outoff);
	}
	if (last) {
		/* No length was sent: the end of the body is the close,
		 * once lws has sent what it may have buffered. */
		gr->gr_closing = 1;
		relay_git_want_write(gr);
		return 0;
	}
	if (gr->gr_pout != NULL && gr->gr_pout->gp_paused &&
	    out_pending(gr) < RELAY_GIT_PIPE_BUF / 2) {
		gr->gr_pout->gp_paused = 0;
		lws_rx_flow_control(gr->gr_pout->gp_wsi, 1);
	}
	if (out_pending(gr) > 0)
		relay_git_want_write(gr);
	return 0;
}

/* Kills git if it runs and drops its pipes. */
static void
stop_child(struct relay_gitreq *gr)
{
	push_leave(gr, 0);
	if (gr->gr_pid > 0 && !gr->gr_exited) {
		child_abandon(gr->gr_pid);
		gr->gr_exited = 1;
		gr->gr_status = 255;
	}
	pipe_drop(gr->gr_pin);
	gr->gr_pin = NULL;
	pipe_drop(gr->gr_pout);
	gr->gr_pout = NULL;
}

static void
drain_timeout(lws_sorted_usec_list_t *sul)
{
	struct relay_gitreq *gr =
	    lws_container_of(sul, struct relay_gitreq, gr_drain_sul);

	if (gr->gr_in_done)
		return;
	log_info(
	    "git %s for %s: stopped waiting for the rest of a refused body after %d s (%llu bytes dropped)",
	    svc_name[gr->gr_svc], gr->gr_d, RELAY_GIT_DRAIN_S,
	    (unsigned long long)gr->gr_drained);
	gr->gr_drain_over = 1;
	relay_git_want_write(gr);
}

/*
 * The rest of the request body is dropped: it is still read, up to
 * RELAY_GIT_DRAIN_BYTES more bytes and RELAY_GIT_DRAIN_S seconds, so that
 * the answer reaches a client that is still sending.
 */
static void
drain_start(struct relay_gitreq *gr)
{
	int first = !gr->gr_discard;

	gr->gr_discard = 1;
	buf_reset(&gr->gr_in);
	gr->gr_inoff = 0;
	if (gr->gr_in_done || gr->gr_advertise)
		return;
	if (gr->gr_rx_paused) {
		gr->gr_rx_paused = 0;
		rx_flow(gr, 1);
	}
	if (first)
		lws_sul_schedule(relayd->ctx, 0, &gr->gr_drain_sul,
		    drain_timeout,
		    (lws_usec_t)RELAY_GIT_DRAIN_S * LWS_US_PER_SEC);
}

/* Ends the request with an error response (before any header). */
void
relay_git_finish_error(struct relay_gitreq *gr, unsigned code, const char *text)
{
	if (gr->gr_hdr_sent) {
		gr->gr_done = 1;
		relay_git_want_write(gr);
		return;
	}
	gr->gr_code = code;
	gr->gr_type = "text/plain";
	buf_reset(&gr->gr_out);
	gr->gr_outoff = 0;
	buf_adds(&gr->gr_out, text);
	gr->gr_done = 1;
	drain_start(gr);
	stop_child(gr);
	relay_git_want_write(gr);
}

/* The child's stdout is readable. */
static int
pipe_read(struct relay_gitreq *gr, struct gitpipe *gp)
{
	char	buf[GIT_IO_CHUNK];
	size_t	room;
	ssize_t n;

	if (out_pending(gr) >= RELAY_GIT_PIPE_BUF) {
		gp->gp_paused = 1;
		lws_rx_flow_control(gp->gp_wsi, 0);
		return 0;
	}
	room = RELAY_GIT_PIPE_BUF - out_pending(gr);
	if (room > sizeof(buf))
		room = sizeof(buf);
	n = read(gp->gp_fd, buf, room);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		gr->gr_out_eof = 1;
		relay_git_want_write(gr);
		return -1;
	}
	gr->gr_outbytes += (uint64_t)n;
	if (gr->gr_outbytes > RELAY_GIT_MAX_RESPONSE) {
		log_warnx("git response for %s is too large; stopping it",
		    gr->gr_d);
		relay_git_finish_error(gr, HTTP_STATUS_INTERNAL_SERVER_ERROR,
		    "response too large\n");
		return -1;
	}
	buf_add(&gr->gr_out, buf, (size_t)n);
	relay_git_want_write(gr);
	return 0;
}

static void
pin_rearm(lws_sorted_usec_list_t *sul)
{
	struct relay_gitreq *gr =
	    lws_container_of(sul, struct relay_gitreq, gr_pin_sul);

	if (gr->gr_pin != NULL)
		lws_callback_on_writable(gr->gr_pin->gp_wsi);
}

/* Reads what the child left in its stdout pipe, ignoring the budget. */
static void
pipe_drain(struct relay_gitreq *gr, struct gitpipe *gp)
{
	char	buf[GIT_IO_CHUNK];
	ssize_t n;

	while ((n = read(gp->gp_fd, buf, sizeof(buf))) > 0 ||
	    (n < 0 && errno == EINTR)) {
		if (n <= 0)
			continue;
		gr->gr_outbytes += (uint64_t)n;
		buf_add(&gr->gr_out, buf, (size_t)n);
	}
}

/* The child's stdin can take more. */
static int
pipe_write(struct relay_gitreq *gr, struct gitpipe *gp)
{
	ssize_t n;

	while (in_pending(gr) > 0) {
		n = write(gp->gp_fd, gr->gr_in.b_data + gr->gr_inoff,
		    in_pending(gr));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			/* The child stopped reading: drop the rest; its own
			 * answer goes once the body is in. */
			relay_git_early_end(gr, GIT_EARLY_GIT,
			    "git stopped reading its input (%s)",
			    n < 0 ? strerror(errno) : "closed");
			drain_start(gr);
			return -1;
		}
		gr->gr_inoff += (size_t)n;
	}
	compact(&gr->gr_in, &gr->gr_inoff);
	if (gr->gr_rx_paused && in_pending(gr) < RELAY_GIT_PIPE_BUF / 2) {
		gr->gr_rx_paused = 0;
		rx_flow(gr, 1);
	}
	if (in_pending(gr) > 0) {
		/*
		 * lws 4.1 clears POLLOUT of a raw file after its writeable
		 * callback returns, so asking here would be undone: ask
		 * again from a timer, right after.
		 */
		lws_sul_schedule(relayd->ctx, 0, &gr->gr_pin_sul, pin_rearm, 1);
		return 0;
	}
	/* All written: end of input closes the child's stdin. */
	return gr->gr_in_done ? -1 : 0;
}

/*
 * The client's socket is readable (the body is ours to read, take_body()):
 * the bytes go where lws would have handed them.
 */
static int
sock_read(struct relay_gitreq *gr, struct gitpipe *gp)
{
	unsigned char buf[GIT_IO_CHUNK];
	ssize_t	      n;

	if (gr->gr_in_done) {
		gr->gr_psock = NULL;
		gp->gp_req = NULL;
		return -1;
	}
	if (gr->gr_rx_paused) {
		lws_rx_flow_control(gp->gp_wsi, 0);
		return 0;
	}
	n = read(gp->gp_fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		/* Nobody is left to answer. */
		relay_git_early_end(gr, GIT_EARLY_CLIENT,
		    "the client closed the connection mid-body (%s)",
		    n < 0 ? strerror(errno) : "end of stream");
		gr->gr_psock = NULL;
		gp->gp_req = NULL;
		stop_child(gr);
		if (gr->gr_wsi != NULL)
			lws_set_timeout(gr->gr_wsi, PENDING_TIMEOUT_USER_OK,
			    LWS_TO_KILL_ASYNC);
		return -1;
	}
	relay_git_body_raw(gr, buf, (size_t)n);
	if (gr->gr_in_done || gr->gr_drain_over) {
		/* The rest, if any, is not ours to read. */
		gr->gr_psock = NULL;
		gp->gp_req = NULL;
		return -1;
	}
	return 0;
}

int
relay_git_pipe_callback(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len)
{
	struct gitpipe	    *gp;
	struct relay_gitreq *gr;

	(void)user;
	(void)in;
	(void)len;
	if (reason == LWS_CALLBACK_EVENT_WAIT_CANCELLED) {
		child_reap();
		return 0;
	}
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
	case LWS_CALLBACK_RAW_WRITEABLE_FILE:
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		break;
	default:
		return 0;
	}
	gp = lws_get_opaque_user_data(wsi);
	if (gp == NULL)
		return reason == LWS_CALLBACK_RAW_CLOSE_FILE ? 0 : -1;
	gr = gp->gp_req;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		if (gr == NULL)
			return -1;
		return gp->gp_kind == GP_OUT ? pipe_read(gr, gp) :
		    gp->gp_kind == GP_SOCK   ? sock_read(gr, gp) :
					       0;
	case LWS_CALLBACK_RAW_WRITEABLE_FILE:
		if (gr == NULL)
			return -1;
		return gp->gp_kind == GP_IN ? pipe_write(gr, gp) : 0;
	default:
		/* Closed: by us, or the child ended its side. */
		if (gr != NULL && gp->gp_kind == GP_SOCK)
			gr->gr_psock = NULL;
		else if (gr != NULL) {
			if (gp->gp_kind == GP_OUT) {
				/*
				 * lws closes on POLLHUP even while reading is
				 * paused, with the pipe's last bytes unread:
				 * take them now (at most a pipe's capacity).
				 */
				pipe_drain(gr, gp);
				gr->gr_pout = NULL;
				gr->gr_out_eof = 1;
			} else
				gr->gr_pin = NULL;
			relay_git_want_write(gr);
		}
		lws_set_opaque_user_data(wsi, NULL);
		free(gp);
		return 0;
	}
}

struct gitpipe *
relay_git_adopt_pipe(struct relay_gitreq *gr, int fd, enum gp_kind kind)
{
	lws_sock_file_fd_type u;
	struct gitpipe	     *gp;
	struct lws	     *wsi;

	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1) {
		close(fd);
		return NULL;
	}
	u.filefd = fd;
	wsi = lws_adopt_descriptor_vhost(relayd->vhost, LWS_ADOPT_RAW_FILE_DESC,
	    u, "gitpipe", NULL);
	if (wsi == NULL) {
		close(fd);
		return NULL;
	}
	if ((gp = calloc(1, sizeof(*gp))) == NULL)
		fatal("relay_git_adopt_pipe");
	gp->gp_req = gr;
	gp->gp_wsi = wsi;
	gp->gp_fd = fd;
	gp->gp_kind = kind;
	lws_set_opaque_user_data(wsi, gp);
	return gp;
}

static void
release_done(void *arg)
{
	struct gitwait	    *gw = arg;
	struct relay_gitreq *gr = gw->gw_req;

	if (gr != NULL) {
		gr->gr_wait = NULL;
		relay_git_want_write(gr);
	}
	free(gw);
}

static void
child_done(pid_t pid, int status, int killed, void *arg)
{
	struct relay_gitreq *gr = arg;
	struct gitwait	    *gw;
	int		     op;

	(void)pid;
	gr->gr_exited = 1;
	gr->gr_status = status;
	op = gr->gr_svc == SVC_RECEIVE ? 1 : gr->gr_advertise ? 2 : 0;
	relayd->stats.git_requests[op][status == 0]++;
	relay_hist_observe(&relayd->stats.git_duration[op],
	    relay_now_ms() - gr->gr_t0);
	if (status != 0)
		log_info("git %s for %s ended with status %d",
		    svc_name[gr->gr_svc], gr->gr_d, status);
	/* A push may have filled the disk (or failed because it did). */
	if (gr->gr_svc == SVC_RECEIVE && !gr->gr_advertise) {
		relay_disk_recheck();
		push_leave(gr, status == 0);
	}
	/* A /prs/ push leaves no placeholder; what it satisfies is
	 * mirrored into the PR's repositories, which releases it. */
	if (gr->gr_svc == SVC_RECEIVE && !gr->gr_advertise && status == 0 &&
	    gr->gr_unclaimed)
		unclaimed_add(gr);
	if (gr->gr_svc == SVC_RECEIVE && !gr->gr_advertise && status == 0 &&
	    gr->gr_prs)
		relay_purg_prs_pushed(gr->gr_owner, gr->gr_d, gr->gr_cmds,
		    gr->gr_ncmds);
	if (gr->gr_svc == SVC_RECEIVE && !gr->gr_advertise && status == 0 &&
	    !gr->gr_prs) {
		/* New git data: release what it satisfies, then answer. */
		if ((gw = calloc(1, sizeof(*gw))) == NULL)
			fatal("child_done");
		gw->gw_req = gr;
		gr->gr_wait = gw;
		relay_purg_pushed(gr->gr_owner, gr->gr_d, gr->gr_cmds,
		    gr->gr_ncmds, release_done, gw);
		if (gr->gr_ncmds > 0) /* not git's empty probe */
			relay_job_pushed(gr->gr_owner, gr->gr_d);
	}
	relay_git_want_write(gr);
}

/* Starts git for the request.  0, or -1 after answering an error. */
static int
start_child(struct relay_gitreq *gr)
{
	char	   *argv[16];
	const char *env[2] = { NULL, NULL };
	int	    in[2] = { -1, -1 }, out[2] = { -1, -1 }, n = 0;

	if (child_count() >= RELAY_GIT_MAX_CHILDREN) {
		relay_git_finish_error(gr, HTTP_STATUS_SERVICE_UNAVAILABLE,
		    "too many git operations; try again\n");
		return -1;
	}
	if ((!gr->gr_advertise && pipe2(in, O_CLOEXEC) == -1) ||
	    pipe2(out, O_CLOEXEC) == -1) {
		log_warn("pipe");
		if (in[0] != -1) {
			close(in[0]);
			close(in[1]);
		}
		relay_git_finish_error(gr, HTTP_STATUS_INTERNAL_SERVER_ERROR,
		    "cannot run git\n");
		return -1;
	}
	argv[n++] = "git";
	if (gr->gr_svc == SVC_UPLOAD) {
		argv[n++] = "-c";
		argv[n++] = "uploadpack.allowReachableSHA1InWant=true";
		argv[n++] = "-c";
		argv[n++] = "uploadpack.allowTipSHA1InWant=true";
		argv[n++] = "-c";
		argv[n++] = "uploadpack.allowFilter=true";
		argv[n++] = "upload-pack";
	} else {
		/* A second wall behind the push decision: git refuses on
		 * its own what the decision did not need to let through. */
		argv[n++] = "-c";
		argv[n++] = gr->gr_may_delete ? "receive.denyDeletes=false" :
						"receive.denyDeletes=true";
		argv[n++] = "-c";
		argv[n++] = gr->gr_may_rewrite ?
		    "receive.denyNonFastForwards=false" :
		    "receive.denyNonFastForwards=true";
		argv[n++] = "-c";
		argv[n++] = "receive.denyDeleteCurrent=refuse";
		argv[n++] = "receive-pack";
	}
	argv[n++] = "--stateless-rpc";
	if (gr->gr_advertise)
		argv[n++] = "--advertise-refs";
	argv[n++] = gr->gr_repo;
	argv[n] = NULL;
	if (gr->gr_proto[0] != '\0')
		env[0] = gr->gr_proto;
	gr->gr_pid = relay_child_spawn(argv, in[0], out[1], env,
	    RELAY_GIT_TIMEOUT_S, child_done, gr);
	if (in[0] != -1)
		close(in[0]);
	close(out[1]);
	if (gr->gr_pid == -1) {
		if (in[1] != -1)
			close(in[1]);
		close(out[0]);
		relay_git_finish_error(gr, HTTP_STATUS_INTERNAL_SERVER_ERROR,
		    "cannot run git\n");
		return -1;
	}
	if ((gr->gr_pout = relay_git_adopt_pipe(gr, out[0], GP_OUT)) == NULL ||
	    (in[1] != -1 &&
		(gr->gr_pin = relay_git_adopt_pipe(gr, in[1], GP_IN)) ==
		    NULL)) {
		if (gr->gr_pout == NULL && in[1] != -1)
			close(in[1]);
		relay_git_finish_error(gr, HTTP_STATUS_INTERNAL_SERVER_ERROR,
		    "cannot run git\n");
		return -1;
	}
	gr->gr_type = gr->gr_svc == SVC_UPLOAD ?
	    (gr->gr_advertise ? "application/x-git-upload-pack-advertisement" :
				"application/x-git-upload-pack-result") :
	    (gr->gr_advertise ? "application/x-git-receive-pack-advertisement" :
				"application/x-git-receive-pack-result");
	if (gr->gr_advertise) {
		/* Smart HTTP: "# service=..." and a flush precede it. */
		pkt_line(&gr->gr_out, "# service=%s\n", svc_name[gr->gr_svc]);
		buf_adds(&gr->gr_out, "0000");
	}
	relay_git_pump_in(gr);
	return 0;
}

/* Moves buffered request bytes toward the child. */
void
relay_git_pump_in(struct relay_gitreq *gr)
{
	if (gr->gr_pin == NULL)
		return;
	if (in_pending(gr) > 0 || gr->gr_in_done)
		lws_callback_on_writable(gr->gr_pin->gp_wsi);
	if (in_pending(gr) >= RELAY_GIT_PIPE_BUF && !gr->gr_rx_paused) {
		gr->gr_rx_paused = 1;
		rx_flow(gr, 0);
	}
}

/*
 * Parses the command section of a receive-pack request from the start of
 * the body (common/pktline.c), up to a flush.  Returns 1 when complete
 * (commands stored), 0 when more bytes are needed, -1 when malformed
 * (reason in err).
 */
static int
parse_commands(struct relay_gitreq *gr, char *err, size_t errlen)
{
	struct pkt_update     u;
	struct relay_push_cmd pc;

	/* Resumes where the last call stopped: a slow client costs no
	 * re-parsing. */
	for (;;) {
		switch (pkt_command(gr->gr_in.b_data, gr->gr_in.b_len,
		    &gr->gr_cmdoff, &u, &gr->gr_sideband, err, errlen)) {
		case PKT_ERROR:
			return -1;
		case PKT_MORE:
			return 0;
		case PKT_FLUSH:
			return 1;
		case PKT_SHALLOW:
			continue;
		case PKT_UPDATE:
			break;
		}
		memset(&pc, 0, sizeof(pc));
		memcpy(pc.pc_old, u.pu_old, sizeof(pc.pc_old));
		memcpy(pc.pc_new, u.pu_new, sizeof(pc.pc_new));
		if ((pc.pc_ref = strndup(u.pu_ref, u.pu_reflen)) == NULL)
			fatal("parse_commands");
		if ((gr->gr_cmds = reallocarray(gr->gr_cmds, gr->gr_ncmds + 1,
			 sizeof(*gr->gr_cmds))) == NULL)
			fatal("parse_commands");
		gr->gr_cmds[gr->gr_ncmds++] = pc;
	}
}

/*
 * Refuses a push with "ERR <what>: <reason>", git stopped if it runs.  The
 * answer follows the rest of the body, read and dropped, so that the
 * client sees it; if git's answer has begun, the connection just ends.
 */
void
relay_git_refuse_push(struct relay_gitreq *gr, const char *what,
    const char *reason)
{
	if (gr->gr_hdr_sent) {
		relay_git_finish_error(gr, HTTP_STATUS_OK, "");
		return;
	}
	stop_child(gr);
	drain_start(gr);
	buf_reset(&gr->gr_out);
	gr->gr_outoff = 0;
	gr->gr_code = HTTP_STATUS_OK;
	gr->gr_type = "application/x-git-receive-pack-result";
	if (gr->gr_sideband) {
		struct buf inner = BUF_INIT;

		/* The client reads its report through side-band channel 1:
		 * the ERR line goes inside it. */
		pkt_line(&inner, "ERR %s: %s\n", what, reason);
		buf_adds(&inner, "0000");
		pkt_line(&gr->gr_out, "\001%s", inner.b_data);
		buf_adds(&gr->gr_out, "0000");
		buf_free(&inner);
	} else
		pkt_line(&gr->gr_out, "ERR %s: %s\n", what, reason);
	/* Written once the body is in (relay_git_writeable()). */
	gr->gr_done = 1;
	relay_git_want_write(gr);
}

/*
 * GRASP-06's quota of a /prs/ push, in request bytes: its refs' share
 * (grasp06_max_bytes_per_ref each) and what the signer's repositories
 * leave of grasp06_max_bytes_per_signer.  Sets gr_quota and gr_why;
 * 0 when nothing is left.
 */
static uint64_t
prs_quota(struct relay_gitreq *gr)
{
	uint64_t per_ref, refs = 0, used, signer;
	size_t	 i;

	for (i = 0; i < gr->gr_ncmds; i++)
		if (strcmp(gr->gr_cmds[i].pc_new, RELAY_NULL_OID) != 0)
			refs++;
	per_ref = refs * (uint64_t)relayd->cfg.grasp06_max_bytes_per_ref;
	signer = (uint64_t)relayd->cfg.grasp06_max_bytes_per_signer;
	used = relay_repo_prs_usage(gr->gr_owner);
	/* What no PR event claims yet is the pushing addresses'. */
	if (used != UINT64_MAX)
		used -= unclaimed_sum(NULL, gr->gr_owner) < used ?
		    unclaimed_sum(NULL, gr->gr_owner) :
		    used;
	if (gr->gr_unclaimed) {
		uint64_t ip =
		    (uint64_t)relayd->cfg.grasp06_unclaimed_bytes_per_ip;
		uint64_t all = (uint64_t)relayd->cfg.grasp06_unclaimed_bytes;
		uint64_t p = unclaimed_sum(gr->gr_peer, NULL);
		uint64_t a = unclaimed_sum(NULL, NULL);

		gr->gr_room_peer = p >= ip ? 0 : ip - p;
		gr->gr_room_unclaimed = a >= all ? 0 : all - a;
		gr->gr_room_signer = UINT64_MAX;
		gr->gr_quota = per_ref;
		snprintf(gr->gr_why, sizeof(gr->gr_why),
		    "the push is larger than %llu bytes (%d per ref)",
		    (unsigned long long)per_ref,
		    relayd->cfg.grasp06_max_bytes_per_ref);
		return gr->gr_quota;
	}
	gr->gr_room_signer = used >= signer ? 0 : signer - used;
	if (used >= signer)
		gr->gr_quota = 0;
	else
		gr->gr_quota =
		    signer - used < per_ref ? signer - used : per_ref;
	if (gr->gr_quota == per_ref)
		snprintf(gr->gr_why, sizeof(gr->gr_why),
		    "the push is larger than %llu bytes (%d per ref)",
		    (unsigned long long)per_ref,
		    relayd->cfg.grasp06_max_bytes_per_ref);
	else
		snprintf(gr->gr_why, sizeof(gr->gr_why),
		    "the signer's repositories here would pass %d bytes (%llu used)",
		    relayd->cfg.grasp06_max_bytes_per_signer,
		    (unsigned long long)used);
	return gr->gr_quota;
}

/*
 * The byte limits of a push: relay_repo_push_room()'s and, for /prs/,
 * GRASP-06's quota.  The tightest goes to gr_quota (UINT64_MAX: none),
 * gr_limit and gr_why; returns gr_quota.
 */
static uint64_t
push_quota(struct relay_gitreq *gr)
{
	enum push_limit which;
	char		why[sizeof(gr->gr_why)];
	uint64_t	room, extra;

	gr->gr_quota = UINT64_MAX;
	gr->gr_room_signer = UINT64_MAX;
	gr->gr_room_peer = UINT64_MAX;
	gr->gr_room_unclaimed = UINT64_MAX;
	if (gr->gr_prs) {
		prs_quota(gr);
		gr->gr_limit = PUSH_LIMIT_GRASP06;
	}
	room = relay_repo_push_room(gr->gr_repo, &which, why, sizeof(why),
	    &gr->gr_room_repo);
	/* Placeholders no PR event claims yet are not the owner's. */
	if (!gr->gr_prs && !gr->gr_unclaimed &&
	    gr->gr_room_repo != UINT64_MAX &&
	    (extra = unclaimed_repo(gr->gr_owner, gr->gr_d)) > 0) {
		gr->gr_room_repo += extra;
		room = gr->gr_room_repo;
		which = PUSH_LIMIT_REPO;
		snprintf(why, sizeof(why), "the repository would pass %d bytes",
		    relayd->cfg.max_repo_bytes);
		if (relayd->cfg.max_push_bytes > 0 &&
		    (uint64_t)relayd->cfg.max_push_bytes <= room) {
			room = (uint64_t)relayd->cfg.max_push_bytes;
			which = PUSH_LIMIT_PUSH;
			snprintf(why, sizeof(why),
			    "a push may send at most %d bytes here",
			    relayd->cfg.max_push_bytes);
		}
	}
	if (room < gr->gr_quota) {
		gr->gr_quota = room;
		gr->gr_limit = which;
		snprintf(gr->gr_why, sizeof(gr->gr_why), "%s", why);
	}
	return gr->gr_quota;
}

/* Refuses a push over gr_quota with "ERR <limit>: <why>". */
void
relay_git_refuse_over(struct relay_gitreq *gr)
{
	static const char *const what[PUSH_LIMIT_COUNT] = { "push too large",
		"repository too large", "quota exceeded" };

	log_info("push to %s%s %s: %s", gr->gr_prs ? "/prs/ " : "", gr->gr_d,
	    gr->gr_over ? "stopped" : "refused", gr->gr_why);
	relayd->stats.git_push_over[gr->gr_limit]++;
	relay_git_early_end(gr, GIT_EARLY_LIMIT, "%s: %s", what[gr->gr_limit],
	    gr->gr_why);
	relay_git_refuse_push(gr, what[gr->gr_limit], gr->gr_why);
}

/* Authorises a push once its commands are in; starts git or refuses. */
void
relay_git_decide_push(struct relay_gitreq *gr)
{
	struct pushauth_out po;
	char		    err[256];
	int		    r;

	if (gr->gr_decided)
		return;
	r = parse_commands(gr, err, sizeof(err));
	if (r == 0 && !gr->gr_in_done) {
		if (gr->gr_in.b_len > RELAY_GIT_MAX_COMMANDS)
			relay_git_finish_error(gr,
			    HTTP_STATUS_REQ_ENTITY_TOO_LARGE,
			    "too many ref updates\n");
		return;
	}
	gr->gr_decided = 1;
	if (r != 1) {
		if (r == 0)
			snprintf(err, sizeof(err), "the request ended early");
		log_info("push to %s: malformed request: %s", gr->gr_d, err);
		relay_git_finish_error(gr, HTTP_STATUS_BAD_REQUEST,
		    "malformed "
		    "receive-pack request\n");
		return;
	}
	if (relay_disk_low()) {
		relay_disk_refused(1);
		log_info("push to %s refused: low on disk space", gr->gr_d);
		relay_git_refuse_push(gr, "error", RELAY_DISK_PUSH_MSG);
		return;
	}
	r = relay_purg_authorise_push(gr->gr_owner, gr->gr_d, gr->gr_prs,
	    gr->gr_cmds, gr->gr_ncmds, &po);
	if (r == -1) {
		relay_git_finish_error(gr, HTTP_STATUS_INTERNAL_SERVER_ERROR,
		    "cannot authorise the push\n");
		return;
	}
	relayd->stats.git_push_auth[r]++;
	if (r == 0) {
		log_info("push to %s refused: %s", gr->gr_d, po.po_reason);
		relay_git_refuse_push(gr, "authorisation failed", po.po_reason);
		return;
	}
	gr->gr_may_delete = !po.po_deny_deletes;
	gr->gr_unclaimed = po.po_unclaimed;
	gr->gr_may_rewrite = !po.po_deny_nonff;
	if (push_quota(gr) == 0 || gr->gr_inbytes > gr->gr_quota ||
	    relay_git_over_shared(gr)) {
		relay_git_refuse_over(gr);
		return;
	}
	if (gr->gr_prs && strcmp(gr->gr_repo, relay_repo_prs_empty()) == 0) {
		/* The first push to a /prs/ path creates its repository. */
		if (relay_repo_prs_create(gr->gr_owner, gr->gr_d) == -1 ||
		    relay_repo_prs_path(gr->gr_owner, gr->gr_d, gr->gr_repo,
			sizeof(gr->gr_repo)) == -1) {
			relay_git_finish_error(gr,
			    HTTP_STATUS_INTERNAL_SERVER_ERROR,
			    "cannot create the repository\n");
			return;
		}
		gr->gr_created = 1;
	}
	LIST_INSERT_HEAD(&pushes, gr, gr_push_entry);
	gr->gr_inflight = 1;
	start_child(gr);
}

static int
simple(struct relay_conn *c, struct lws *wsi, unsigned code, const char *text)
{
	char *body = strdup(text);

	if (body == NULL)
		fatal("simple");
	return relay_http_respond(c, wsi, code, "text/plain", body,
	    strlen(body));
}

/*
 * Starts git service which for the repository rt names (advertise: the
 * info/refs advertisement), once the method and the repository are
 * right: the per-address limit, the request's state, its headers, the
 * child for an upload-pack or an advertisement.
 */
static int
git_begin(struct relay_conn *c, struct lws *wsi, int method,
    const struct git_route *rt, enum git_svc which, int advertise)
{
	struct relay_gitreq *gr;
	struct relay_addr   *ga;
	char		     hdr[128], path[PATH_MAX];
	const uint8_t	    *owner = rt->rt_owner;
	const char	    *d = rt->rt_d;
	int		     prs = rt->rt_prs;

	if (!advertise && method != LWSHUMETH_POST)
		return simple(c, wsi, HTTP_STATUS_METHOD_NOT_ALLOWED,
		    "method not allowed\n");
	if (!prs && !relay_repo_exists(owner, d))
		return simple(c, wsi, HTTP_STATUS_NOT_FOUND,
		    "repository not found\n");
	if (prs && relay_repo_prs_path(owner, d, path, sizeof(path)) == -1)
		return simple(c, wsi, HTTP_STATUS_NOT_FOUND,
		    "no such repository\n");

	if (!relay_addr_git_begin(wsi, &ga))
		return relay_http_too_many(c, wsi, RELAY_GIT_RETRY_AFTER_S,
		    "rate-limited: too many git requests from your address at once; try again shortly\n");
	if ((gr = calloc(1, sizeof(*gr))) == NULL ||
	    (gr->gr_d = strdup(d)) == NULL)
		fatal("git_begin");
	gr->gr_addr = ga;
	gr->gr_conn = c;
	gr->gr_wsi = wsi;
	gr->gr_svc = which;
	gr->gr_advertise = advertise;
	gr->gr_head = method == LWSHUMETH_HEAD;
	gr->gr_pid = -1;
	gr->gr_t0 = relay_now_ms();
	snprintf(gr->gr_peer, sizeof(gr->gr_peer), "%s", c->rc_peer);
	memcpy(gr->gr_owner, owner, PUBKEY_LEN);
	if (prs) {
		struct stat sb;

		/* Until its first push a /prs/ path reads as an empty
		 * repository; the push creates it (relay_git_decide_push()). */
		snprintf(gr->gr_repo, sizeof(gr->gr_repo), "%s",
		    stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) ?
			path :
			relay_repo_prs_empty());
		gr->gr_prs = 1;
		LIST_INSERT_HEAD(&prs_reqs, gr, gr_prs_entry);
	} else
		relay_repo_path(owner, d, gr->gr_repo, sizeof(gr->gr_repo));
	/* Protocol v2 and friends, passed on as git's http-backend does. */
	if (lws_hdr_custom_copy(wsi, hdr, sizeof(hdr), "git-protocol:", 13) >
		0 &&
	    strspn(hdr,
		"abcdefghijklmnopqrstuvwxyz"
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789=:-._") == strlen(hdr))
		snprintf(gr->gr_proto, sizeof(gr->gr_proto), "GIT_PROTOCOL=%s",
		    hdr);
	if (lws_hdr_copy(wsi, hdr, sizeof(hdr),
		WSI_TOKEN_HTTP_CONTENT_ENCODING) > 0) {
		if (strcasecmp(hdr, "gzip") == 0 ||
		    strcasecmp(hdr, "x-gzip") == 0)
			gr->gr_gzip = 1;
		else if (strcasecmp(hdr, "identity") != 0) {
			if (gr->gr_prs)
				LIST_REMOVE(gr, gr_prs_entry);
			relay_addr_git_end(gr->gr_addr);
			free(gr->gr_d);
			free(gr);
			return simple(c, wsi,
			    HTTP_STATUS_UNSUPPORTED_MEDIA_TYPE,
			    "unsupported content encoding\n");
		}
	}
	if (lws_hdr_copy(wsi, hdr, sizeof(hdr),
		WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0 &&
	    strcasecmp(hdr, "chunked") == 0)
		gr->gr_chunked = 1;
	else if (lws_hdr_copy(wsi, hdr, sizeof(hdr),
		     WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0) {
		gr->gr_has_clen = 1;
		gr->gr_clen = strtoull(hdr, NULL, 10);
	}
	c->rc_kind = CONN_HTTP;
	c->rc_git = gr;
	/* Our own deadline replaces lws's idle timeouts. */
	lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
	lws_sul_schedule(relayd->ctx, 0, &gr->gr_sul, conn_timeout,
	    (lws_usec_t)(RELAY_GIT_TIMEOUT_S + GIT_CONN_GRACE_S) *
		LWS_US_PER_SEC);
	if (advertise || which == SVC_UPLOAD)
		start_child(gr);
	if (advertise) {
		gr->gr_in_done = 1;
		return 0;
	}
	/* A POST whose body is empty: no body callbacks will come. */
	if (gr->gr_has_clen && gr->gr_clen == 0)
		relay_git_body_end(gr);
	return 0;
}

/* An answer for people or for git, as the route's client expects. */
static int
route_error(struct relay_conn *c, struct lws *wsi, const struct git_route *rt)
{
	switch (rt->rt_kind) {
	case GR_BAD_NPUB:
		return rt->rt_web ?
		    relay_html_message(c, wsi, rt->rt_status, "Bad address",
			"The first part of this address is not an npub (a Nostr public key).") :
		    simple(c, wsi, rt->rt_status,
			"invalid npub in the repository URL\n");
	case GR_NO_REPO:
		return rt->rt_web ?
		    relay_html_message(c, wsi, HTTP_STATUS_NOT_FOUND,
			"No such repository",
			"This server hosts no repository at this address. <a href=\"/\">See the ones it hosts.</a>") :
		    simple(c, wsi, HTTP_STATUS_NOT_FOUND,
			"no such repository\n");
	default:
		return simple(c, wsi, HTTP_STATUS_NOT_FOUND, "not found\n");
	}
}

int
relay_git_request(struct relay_conn *c, struct lws *wsi, int method,
    const char *uri, int urilen)
{
	struct git_route rt;
	const char	*sv;
	char		 svc[64];
	enum git_svc	 which = SVC_NONE;
	int		 i, get;

	get = method == LWSHUMETH_GET || method == LWSHUMETH_HEAD;
	switch (relay_git_route(uri, (size_t)urilen, relayd->cfg.grasp06_enable,
	    &rt)) {
	case GR_NOT_MINE:
		return RELAY_GIT_NOT_MINE;
	case GR_NOT_FOUND:
	case GR_BAD_NPUB:
	case GR_NO_REPO:
		return route_error(c, wsi, &rt);
	case GR_REPO_PAGE:
		if (!get)
			return simple(c, wsi, HTTP_STATUS_METHOD_NOT_ALLOWED,
			    "method not allowed\n");
		return relay_web_repo(c, wsi, rt.rt_npub, rt.rt_owner, rt.rt_d);
	case GR_SUB:
		if (rt.rt_prs)
			return route_error(c, wsi, &rt);
		if ((i = relay_web_git(c, wsi, get, rt.rt_npub, rt.rt_owner,
			 rt.rt_d, rt.rt_rest, rt.rt_restlen)) !=
		    RELAY_WEB_NOT_MINE)
			return i;
		if (!rt.rt_web)
			return route_error(c, wsi, &rt);
		if (!get)
			return simple(c, wsi, HTTP_STATUS_METHOD_NOT_ALLOWED,
			    "method not allowed\n");
		return relay_web_repo_sub(c, wsi, rt.rt_npub, rt.rt_owner,
		    rt.rt_d, rt.rt_rest, rt.rt_restlen);
	case GR_INFO_REFS:
		if (!get)
			return simple(c, wsi, HTTP_STATUS_METHOD_NOT_ALLOWED,
			    "method not allowed\n");
		/* The value, inside svc after "service=". */
		if ((sv = lws_get_urlarg_by_name(wsi, "service=", svc,
			 sizeof(svc))) == NULL)
			return simple(c, wsi, HTTP_STATUS_FORBIDDEN,
			    "only the smart HTTP protocol is served\n");
		for (i = 0; i < 2; i++)
			if (strcmp(sv, svc_name[i]) == 0)
				which = (enum git_svc)i;
		if (which == SVC_NONE)
			return simple(c, wsi, HTTP_STATUS_FORBIDDEN,
			    "unknown git service\n");
		return git_begin(c, wsi, method, &rt, which, 1);
	case GR_UPLOAD:
		return git_begin(c, wsi, method, &rt, SVC_UPLOAD, 0);
	case GR_RECEIVE:
		return git_begin(c, wsi, method, &rt, SVC_RECEIVE, 0);
	}
	return simple(c, wsi, HTTP_STATUS_NOT_FOUND, "not found\n");
}

void
relay_git_metrics(cJSON *arr)
{
	static const char *const op[] = { "upload-pack", "receive-pack",
		"info-refs" };
	static const char *const early_label[GIT_EARLY_COUNT] = { "client_gone",
		"limit", "request_too_large", "timeout", "malformed_body",
		"git_exited", "body_cut" };
	const struct relay_stats *st = &relayd->stats;
	struct purg_counts	  pc;
	char			  name[160];
	int			  i, ok;

#define METRIC(n, v) relay_metric(arr, (n), (double)(v))
	for (i = 0; i < 3; i++)
		for (ok = 0; ok < 2; ok++) {
			snprintf(name, sizeof(name),
			    "graspd_git_requests_total"
			    "{operation=\"%s\",status=\"%s\"}",
			    op[i], ok ? "success" : "error");
			METRIC(name, st->git_requests[i][ok]);
		}
	METRIC("graspd_git_push_authorization_total{result=\"allowed\"}",
	    st->git_push_auth[1]);
	METRIC("graspd_git_push_authorization_total{result=\"refused\"}",
	    st->git_push_auth[0]);
	METRIC("graspd_git_requests_refused_total{reason=\"per_ip\"}",
	    st->git_refused_ip);
	METRIC("graspd_git_pushes_over_limit_total{limit=\"push_bytes\"}",
	    st->git_push_over[PUSH_LIMIT_PUSH]);
	METRIC("graspd_git_pushes_over_limit_total{limit=\"repo_bytes\"}",
	    st->git_push_over[PUSH_LIMIT_REPO]);
	METRIC("graspd_git_pushes_over_limit_total{limit=\"grasp06_quota\"}",
	    st->git_push_over[PUSH_LIMIT_GRASP06]);
	for (i = 0; i < GIT_EARLY_COUNT; i++) {
		snprintf(name, sizeof(name),
		    "graspd_git_requests_ended_early_total{cause=\"%s\"}",
		    early_label[i]);
		METRIC(name, st->git_early[i]);
	}
	METRIC("graspd_git_jobs_total{status=\"success\"}", st->git_jobs[1]);
	METRIC("graspd_git_jobs_total{status=\"error\"}", st->git_jobs[0]);
	METRIC("graspd_git_processes", child_count());
	METRIC("graspd_purgatory_events_total{result=\"held\"}", st->purg_held);
	METRIC("graspd_purgatory_events_total{result=\"released\"}",
	    st->purg_released);
	METRIC("graspd_purgatory_events_total{result=\"expired\"}",
	    st->purg_expired);
	if (purg_count(relayd->purg, &pc) == 0) {
		METRIC("graspd_purgatory_held{type=\"announcement\"}",
		    pc.announcements);
		METRIC("graspd_purgatory_held{type=\"soft_expired\"}",
		    pc.soft_expired);
		METRIC("graspd_purgatory_held{type=\"state\"}", pc.states);
		METRIC("graspd_purgatory_held{type=\"pr\"}", pc.prs);
		METRIC("graspd_purgatory_held{type=\"placeholder\"}",
		    pc.placeholders);
		METRIC("graspd_purgatory_expired_ids", pc.expired);
	}
#undef METRIC
}
