/*
 * relayd.h: private header of relayd, the websocket and HTTP server of
 * graspd and the only process that writes events.
 *
 * relayd.c       main, options, the libwebsockets loop, signals
 * relay_ws.c     NIP-01 messages: EVENT, REQ, CLOSE, AUTH (NIP-42);
 *                subscriptions; output
 * relay_ingest.c the event pipeline: checks, policy, batched commit, OK,
 *                fan-out
 * relay_ckpt.c   WAL checkpoints on a thread and connection of their own
 * relay_http.c   NIP-11, the landing page, /metrics, CORS, OPTIONS
 * relay_chan.c   the nanomsg channels: ingest, accepted, stats, control
 * relay_listen.c the listening sockets of NGIT_BIND_ADDRESS, accept
 * relay_addr.c   per-address limits (IPv6 by prefix, common/addrkey.c)
 * relay_wire.c   the bytes lws reads: unmasked frames, slow frames, the
 *                count of connections still sending headers
 * relay_neg.c    NIP-77 negentropy sync: NEG-OPEN, NEG-MSG, NEG-CLOSE
 * relay_inv.c    the repository inventory behind GRASP-03's identity
 *                policy (who may store kind 0 and 10002)
 * relay_repo.c   repositories on disk: create, remove, refs, objects;
 *                the git child processes
 * relay_job.c    the queue of maintenance jobs that change refs
 * relay_purg.c   the GRASP-01 purgatory: events held until their git
 *                data arrives; routing of announcements, states, PRs
 * relay_release.c release from the purgatory when git data arrives
 * relay_pushgate.c push authorisation: gathers what a push is decided on
 * relay_pushauth.c the push decision, a pure function of the ref updates
 *                and what relay_pushgate.c gathered for them
 * relay_web.c    pages for people: /, /<npub>/<d>.git, the icon
 * relay_disk.c   the disk-space floor: events and pushes refused below it
 * relay_proto.c  the pure part of a client message: shape, REQ, CLOSE,
 *                an EVENT's or AUTH's own checks (relay_proto.h)
 */
#ifndef GRASPD_RELAYD_H
#define GRASPD_RELAYD_H

#include <libwebsockets.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "child.h"
#include "config.h"
#include "filter.h"
#include "msg.h"
#include "pktline.h"
#include "policy.h"
#include "proc.h"
#include "relay_proto.h"
#include "store.h"
#include "version.h"
#include "wsserve.h"

/* RFC 6585 section 4: the answer to a client over a per-address limit. */
#define RELAY_HTTP_TOO_MANY 429

/* Ours: bytes queued to one client before it is dropped as too slow. */
#define RELAY_MAX_OUTQ	    (32 * 1024 * 1024)
/* Ours: descriptors lws may hold beyond max_connections (listening
 * sockets, the nanomsg channels, git pipes). */
#define RELAY_SPARE_FDS	    64
/* Ours: NIP-77 sessions open at once on one connection. */
#define RELAY_MAX_NEGS	    8
/*
 * Ours: items held by all NIP-77 sessions together (40 bytes each, so
 * 160 MB), beyond which a NEG-OPEN waits for others to finish.
 */
#define RELAY_NEG_MAX_HELD  4000000
/*
 * Ours: items in one NIP-77 set, half of strfry's maxSyncEvents
 * (NEG_MAX_ITEMS), so that building a set (one database query on the
 * loop) stays short; a larger set gets NEG-ERR "blocked: too many query
 * results" with this figure, as strfry does.
 */
#define RELAY_NEG_MAX_ITEMS 500000
/* Ours: a NIP-77 session without a NEG-MSG for this long is closed with
 * NEG-ERR "closed: ..." (nips.md 5.4: "closed" means state timed out) ... */
#define RELAY_NEG_IDLE	    60.0
/* ... and after this long under NGIT_TEST. */
#define RELAY_NEG_IDLE_TEST 2.0

/*
 * Ours: a REQ's stored events pause once the client's queue holds this
 * many bytes (a message is at most RELAY_MAX_MESSAGE, so the queue stays
 * under 2 MiB), and never count toward RELAY_MAX_OUTQ, which bounds what
 * live events queue up ...
 */
#define RELAY_REQ_HIGH_WATER (1024 * 1024)
/* ... and go on once its writes bring it under this. */
#define RELAY_REQ_LOW_WATER  (256 * 1024)
/*
 * Ours: bytes of stored events one connection's REQs produce in one loop
 * turn (at least one event), so that a large answer shares the loop with
 * every other connection, as strfry's paced REQ scans do.
 */
#define RELAY_REQ_TURN_BYTES (256 * 1024)

/* Ours: random bytes of a NIP-42 challenge (sent as hex). */
#define RELAY_AUTH_CHALLENGE_BYTES 16
/* Ours: keys one connection may authenticate as (NIP-42 allows several). */
#define RELAY_MAX_AUTH		   16
/*
 * Ours: the most stored events one NIP-45 COUNT reads; past it the answer
 * is this figure with "approximate": true.  A COUNT runs on the loop and
 * any client may send many: 10,000 (created_at, id) index pairs are
 * twenty times a REQ's 500-event limit in rows but carry no event JSON,
 * so a COUNT flood costs the loop the order of what a REQ flood does
 * (100,000 before, ten times that).
 */
#define RELAY_COUNT_MAX		   10000

/* Ours: a commit with this many events means load: batch for longer. */
#define RELAY_BATCH_BUSY	 8
/* Ours: how long a loaded relay gathers events for one commit (1 ms
 * beat 0, 0.5 and 3 ms in the ingest benchmark, by 10 to 20%). */
#define RELAY_BATCH_WAIT_US	 1000
/*
 * Ours: events, and bytes of their JSON, waiting for the signature
 * thread; beyond either the loop waits for the thread (back-pressure)
 * instead of queueing more.
 */
#define RELAY_VERIFY_QUEUE	 4096
#define RELAY_VERIFY_QUEUE_BYTES (32 * 1024 * 1024)
/*
 * Ours: the names of relayd's two threads (at most 15 bytes, the kernel's
 * comm), so that ps, perf and the benchmark's CPU figures tell them from
 * the loop.
 */
#define RELAY_SIG_THREAD	 "relayd-sig"
#define RELAY_CKPT_THREAD	 "relayd-ckpt"
/*
 * Ours: WAL pages (4 KiB) worth a checkpoint.  A checkpoint copies each
 * changed page once, so fewer, larger ones cost less: 10,000 gave 19.3k
 * and 18.5k ev/s in the ingest benchmark against 17.3-18.9k with 1,000.
 */
#define RELAY_CKPT_MIN_FRAMES	 10000
/*
 * Ours: WAL pages added since the last pass that make the next one worth
 * it.  Passes made after every commit copied 1.2 pages per event of the
 * 21,002 of the ingest benchmark, 19-28 us of CPU per event; passes every
 * 5,000 pages took 8-9 us.
 */
#define RELAY_CKPT_STEP_FRAMES	 5000
/*
 * Ours: the WAL size at which the loop holds its commits until the thread
 * has copied every page (relay_ckpt_hold()), so that the next commit
 * starts the WAL over.  Under a steady ingest the passes lag the writer
 * and the WAL starts over only this way: without it, it grew to 83,000
 * frames over 20,000 events in load_test, and further as long as the
 * ingest lasts.  Each hold delays the OKs of the events in flight, and
 * mostly by its last pass's sync of the database file, which writes out
 * every page the passes copied since the last hold: 65-110 ms on the
 * 200,000-event load (4 conns x 50 in flight) however large the WAL, so
 * fewer holds mean fewer late OKs.  At 8 x RELAY_CKPT_MIN_FRAMES that
 * load made 18 holds and had OK p99 101-137 ms; at 16 x, 9 holds and
 * 45.8-54.3 ms (five runs against three, 2026-12-05; 4 x had given 44.6-
 * 52.1 ms and 8 x 33.5-39.7 ms on a faster day).  The WAL file then
 * reaches about 660 MB while a burst lasts (a frame is a page and 24
 * bytes); later relayd truncates the file (RELAY_CKPT_QUIET_S).
 * Truncating it whenever the WAL starts over instead (journal_size_limit
 * of 64 MiB) took that load's OK p99 from 33.5-39.7 ms to 73 ms.
 */
#define RELAY_CKPT_MAX_FRAMES	 (16 * RELAY_CKPT_MIN_FRAMES)
/*
 * Ours: once no commit came for RELAY_CKPT_QUIET_S (NGIT_TEST shrinks it
 * 60-fold, to 5 s), a WAL file larger than RELAY_CKPT_KEEP_FRAMES is
 * copied and truncated to nothing by the checkpoint thread, so that a
 * burst's WAL does not keep its disk space.  A steady pace stays below
 * that size: there passes catch up and the WAL starts over at
 * RELAY_CKPT_MIN_FRAMES and a step or so.  Freeing 450-570 MB took
 * 190-250 ms on this machine (ext4 mounted with discard), with commits
 * held, and the REQs of those moments took up to 17-31 ms instead of 4-8
 * (the ingest benchmark's probes, when it ran 1 s after the burst, three
 * runs each way), so it waits for a quiet moment rather than for the end
 * of each burst.
 */
#define RELAY_CKPT_QUIET_S	 300
#define RELAY_CKPT_KEEP_FRAMES	 (2 * RELAY_CKPT_MIN_FRAMES)
/*
 * Ours: how often the thread tries that truncation, RELAY_TRIM_IDLE_US
 * apart, while a reader's older snapshot is in the way; the next quiet
 * period tries again.
 */
#define RELAY_CKPT_IDLE_TRIES	 30
/*
 * Ours: the last WAL pages before RELAY_CKPT_MAX_FRAMES, copied by passes
 * one after another instead of every RELAY_CKPT_STEP_FRAMES, so that a
 * hold finds little left to copy.
 */
#define RELAY_CKPT_NEAR_FRAMES	 (2 * RELAY_CKPT_STEP_FRAMES)
/*
 * Ours: how long the loop holds its commits at most.  A reader's snapshot
 * can keep frames from being copied; past this the loop commits anyway
 * and the store checkpoints in its commit at twice RELAY_CKPT_MAX_FRAMES,
 * the last resort (relayd.c).  A pass that could not copy everything is
 * tried again after RELAY_CKPT_RETRY_US.
 */
#define RELAY_CKPT_HOLD_MAX_MS	 2000
#define RELAY_CKPT_RETRY_US	 1000
/*
 * Ours: commits pause this long (a burst is over) before relayd gives
 * the memory the burst left in buffers and free lists back (malloc_trim).
 */
#define RELAY_TRIM_IDLE_US	 1000000

/*
 * GRASP-01 purgatory (reference brief 1.7), in seconds; NGIT_TEST shrinks
 * the delays 60-fold (cfg_scale_delay) and the sweep period (cfg_period).
 */
#define PURG_EXPIRY_S	     1800  /* held events, announcements' phase 1 */
#define PURG_SOFT_EXPIRY_S   86400 /* announcements' phase 2 */
#define PURG_SWEEP_S	     60
#define PURG_EXPIRED_KEEP_S  (7 * 86400) /* expired ids */
#define PURG_EXPIRED_SWEEP_S 86400

/* Git smart HTTP.  Ours unless noted. */
/* How long one request's git process may run before it is killed. */
#define RELAY_GIT_TIMEOUT_S	600
/* How long one maintenance job's git process may run (fetch, update-ref). */
#define RELAY_GIT_JOB_TIMEOUT_S 300
/* Largest request body, after inflating gzip. */
#define RELAY_GIT_MAX_REQUEST	(2ULL * 1024 * 1024 * 1024)
/* Largest response body (a clone of a big repository). */
#define RELAY_GIT_MAX_RESPONSE	(8ULL * 1024 * 1024 * 1024)
/* Bytes held between the client and a git process before reading pauses. */
#define RELAY_GIT_PIPE_BUF	(1024 * 1024)
/*
 * A refused request's body is still read (and dropped) so that the client,
 * still sending, sees the answer instead of a reset: at most this many
 * more bytes and seconds, then the answer goes and the connection closes.
 */
#define RELAY_GIT_DRAIN_BYTES	(1024ULL * 1024 * 1024)
#define RELAY_GIT_DRAIN_S	30
/* Largest command section of a receive-pack request (before the pack). */
#define RELAY_GIT_MAX_COMMANDS	(4 * 1024 * 1024)
/* How long a prune waits for the pushes in its repository to end. */
#define RELAY_PRUNE_RETRY_S	5
/* Git processes serving HTTP requests at once; more get 503. */
#define RELAY_GIT_MAX_CHILDREN	32
/*
 * The Retry-After (RFC 9110 10.2.3) of a git request refused under
 * max_git_requests_per_ip, in seconds: about one clone or push.
 */
#define RELAY_GIT_RETRY_AFTER_S 10

/* Ours: room for the status line and headers of an HTTP answer. */
#define RELAY_HTTP_HEADERS_MAX 2048
/* Ours: a body up to this size is written with its headers, in one go. */
#define RELAY_HTTP_INLINE_MAX  (16 * 1024)
/* NIP-11: the media type of the relay information document. */
#define RELAY_NIP11_TYPE       "application/nostr+json"

/* The web pages (relay_web.c).  Ours. */
/* Repositories per landing page, and the last page served. */
#define RELAY_WEB_PAGE_SIZE	  50
#define RELAY_WEB_PAGE_MAX	  1000
/* Longest search text, in bytes. */
#define RELAY_WEB_QUERY_MAX	  100
/* A page's store reads stop after this long (ms) and show what they had. */
#define RELAY_WEB_QUERY_MS	  250
/* SQLite virtual machine steps between two looks at that deadline. */
#define RELAY_WEB_PROGRESS_OPS	  1000
/*
 * Loop time (ms) that landing pages not in the cache may take in one
 * second; past it they are answered 503 until the next second.
 */
#define RELAY_WEB_BUDGET_MS	  300
/* How long a rendered landing page is served again (ms), and how many. */
#define RELAY_WEB_CACHE_MS	  5000
#define RELAY_WEB_CACHE_SLOTS	  8
/* Threads (issues, patches, PRs) read per repository for its counts. */
#define RELAY_WEB_THREADS_MAX	  5000
/* Commits of HEAD shown, and the bytes of git log output read. */
#define RELAY_WEB_COMMITS	  "15"
#define RELAY_WEB_LOG_MAX	  (64 * 1024)
/* Largest README shown, in bytes (a larger one is left out). */
#define RELAY_WEB_README_MAX	  (256 * 1024)
/* How long the git processes of one page may run, seconds. */
#define RELAY_WEB_GIT_TIMEOUT_S	  5
/* Refs, maintainers and recent threads shown on a repository page. */
#define RELAY_WEB_REFS_MAX	  200
#define RELAY_WEB_MAINTAINERS_MAX 32
#define RELAY_WEB_RECENT_THREADS  20
/* Bytes shown of a description, and of a profile name. */
#define RELAY_WEB_DESC_MAX	  300
#define RELAY_WEB_NAME_MAX	  64

/*
 * NIP-11 "version".  Its "software" is a URL of the project, and graspd
 * has no public one yet: the field is left out rather than invented.
 */
#define RELAY_VERSION GRASPD_VERSION

struct relay_conn;
struct relay_neg;
struct relay_webreq;

struct relay_sub {
	LIST_ENTRY(relay_sub) rs_entry;
	struct relay_conn    *rs_conn;
	char		      rs_id[RELAY_MAX_SUBID + 1];
	struct filter	     *rs_filters;
	size_t		      rs_nfilters;
	/*
	 * Its stored events are still being sent (no EOSE yet): where the
	 * query stands, and the live events that matched meanwhile, which
	 * go out after the EOSE.
	 */
	int		      rs_streaming;
	struct store_cursor   rs_cur;
	STAILQ_HEAD(, relay_held) rs_held;
	int64_t rs_t0; /* ms the REQ came */
};

/* A live event's message held for a subscription until its EOSE. */
struct relay_held {
	STAILQ_ENTRY(relay_held) rh_entry;
	size_t			 rh_len;
	char			 rh_data[];
};

enum conn_kind {
	CONN_HTTP = 0,
	CONN_WS,
};

/* Per-session data of every HTTP or websocket connection. */
struct relay_conn {
	enum conn_kind	       rc_kind;
	struct lws	      *rc_wsi;
	uint64_t	       rc_serial; /* never reused */
	LIST_ENTRY(relay_conn) rc_entry;  /* all websockets */
	struct wss_rx	       rc_rx;	  /* message being assembled */
	struct wss_queue       rc_out;	  /* its answers */
	LIST_HEAD(, relay_sub) rc_subs;
	int rc_nsubs;
	LIST_HEAD(, relay_neg) rc_negs; /* NIP-77 sessions */
	int		     rc_nnegs;
	double		     rc_tokens;	   /* EVENT rate bucket */
	int64_t		     rc_tokens_at; /* ms of last refill */
	char		     rc_peer[64];
	/* Came through the import socket (relay_listen_import()). */
	int		     rc_import;
	/* NIP-42: the challenge sent on connect, the keys it proved. */
	char		     rc_challenge[2 * RELAY_AUTH_CHALLENGE_BYTES + 1];
	uint8_t		     rc_auth[RELAY_MAX_AUTH][32];
	int		     rc_nauth;
	struct relay_addr   *rc_addr; /* its address's limits */
	/* HTTP: the response body waiting for a writable callback. */
	char		    *rc_body;
	size_t		     rc_bodylen;
	/* HTTP: a git smart HTTP request in progress (relay_git.c). */
	struct relay_gitreq *rc_git;
	/* HTTP: a repository page waiting for git (relay_web.c). */
	struct relay_webreq *rc_web;
	/* Websocket: the close status relay_wire.c gave it, 0 if none. */
	int		     rc_close;
	const char	    *rc_close_why; /* static */

	/* Websocket: REQs before their EOSE (relay_ws.c). */
	int		       rc_nstreaming;
	size_t		       rc_held_bytes; /* their rs_held messages */
	unsigned	       rc_pump_next;  /* which of them goes first */
	lws_sorted_usec_list_t rc_stall_sul;  /* max_read_stall_secs */
};

/* Ours: buckets of a latency histogram (relay_metrics.c has the bounds). */
#define RELAY_HIST_BUCKETS 12

/* A Prometheus histogram: cumulative bucket counts, count, sum (s). */
struct relay_hist {
	uint64_t rh_bucket[RELAY_HIST_BUCKETS];
	uint64_t rh_count;
	double	 rh_sum;
};

/* The byte limits of a push (relay_repo_push_room(), relay_git.c). */
enum push_limit {
	PUSH_LIMIT_PUSH,    /* max_push_bytes */
	PUSH_LIMIT_REPO,    /* max_repo_bytes */
	PUSH_LIMIT_GRASP06, /* the /prs/ quota */
	PUSH_LIMIT_COUNT,
};

/*
 * Why a git request's body did not reach git whole (relay_git.c): each is
 * logged, counted (graspd_git_requests_ended_early_total{cause=...}) and,
 * while the client still listens, answered with an ERR line naming it.
 */
enum git_early {
	GIT_EARLY_CLIENT,    /* the connection closed mid-body */
	GIT_EARLY_LIMIT,     /* a push byte limit (also git_push_over) */
	GIT_EARLY_REQUEST,   /* RELAY_GIT_MAX_REQUEST */
	GIT_EARLY_TIMEOUT,   /* the request's deadline */
	GIT_EARLY_MALFORMED, /* chunked framing or gzip data broken */
	GIT_EARLY_GIT,	     /* git stopped reading its input */
	GIT_EARLY_CUT,	     /* the HTTP layer ended the body early */
	GIT_EARLY_COUNT,
};

struct relay_stats {
	uint64_t connections_total;
	uint64_t connections_refused_ip;      /* over the per-IP cap */
	uint64_t connections_refused_pending; /* max_pending_per_ip */
	uint64_t connections_refused_proxy;   /* PROXY header */
	uint64_t requests_refused_xff;	      /* bad X-Forwarded-For */
	uint64_t ws_closed_unmasked;	      /* RFC 6455 5.1 */
	uint64_t ws_closed_slow_frame;	      /* ws_frame_timeout */
	uint64_t msgs_in_event, msgs_in_req, msgs_in_close, msgs_in_other;
	uint64_t msgs_in_neg, msgs_in_auth;
	uint64_t auth[2]; /* [accepted] */
	uint64_t events_accepted, events_duplicate, events_refused;
	uint64_t events_invalid, events_ephemeral;
	uint64_t http_requests;
	uint64_t commits, committed_events;
	uint64_t ingested[ROLE_COUNT]; /* by origin role */
	uint64_t purg_held, purg_released, purg_expired;
	uint64_t git_requests[3][2];		  /* [service][ok] */
	uint64_t git_push_auth[2];		  /* [allowed] */
	uint64_t git_refused_ip;		  /* over the per-IP git cap */
	uint64_t git_push_over[PUSH_LIMIT_COUNT]; /* refused */
	uint64_t git_early[GIT_EARLY_COUNT];	  /* bodies cut short */
	uint64_t git_jobs[2];			  /* [ok] */
	struct relay_hist ok_latency;		  /* EVENT -> OK */
	struct relay_hist req_eose;		  /* REQ -> EOSE */
	struct relay_hist git_duration[3];	  /* as git_requests */
};

struct relayd {
	struct config	    cfg;
	struct proc	    proc; /* the skeleton (proc.h) */
	struct policy	    policy;
	struct store	   *store;
	struct purg	   *purg;
	struct lws_context *ctx;
	struct lws_vhost   *vhost;
	LIST_HEAD(, relay_conn) conns;
	int		   nconns;
	uint64_t	   next_serial;
	struct relay_stats stats;
	char		   owner_hex[65];
	char		  *nip11; /* cached document */
	size_t		   nip11_len;
	int		   sock_ingest;	  /* nanomsg PULL */
	int		   sock_accepted; /* nanomsg PUB */
	int		   sock_stats;	  /* nanomsg PULL */
	int		   sock_control;  /* nanomsg REP */
	time_t		   started;
};

extern struct relayd *relayd;

/* relayd.c */
int64_t relay_now_ms(void);

/* relay_ws.c */
int  relay_ws_callback(struct lws *, enum lws_callback_reasons, void *, void *,
     size_t);
/* Queues text for the client; drops the connection when it lags. */
void relay_send(struct relay_conn *, const char *, size_t);
void relay_send_notice(struct relay_conn *, const char *);
void relay_send_ok(struct relay_conn *, const char *id_hex, int ok,
    const char *msg);
/* Sends ev to every live subscription it matches. */
void relay_fanout(const struct event *);

/* relay_listen.c */
/* Listening sockets at most: the addresses one bind host resolves to. */
#define RELAY_LISTEN_MAX 8
/*
 * Binds and listens on every IPv4 and IPv6 address host resolves to (a
 * literal is itself), port port, and nothing else.  Returns the number of
 * sockets, or -1 with "ADDRESS:PORT: reason" (or "HOST: reason") in err,
 * none left open.  Does not exit.
 */
int  relay_listen_open(const char *host, int port, char *err, size_t errlen);
/* Puts the sockets of relay_listen_open() in relayd->vhost's loop; exits
 * if lws cannot take one. */
void relay_listen_start(void);
/* Closes sockets relay_listen_open() left that were not started. */
void relay_listen_close(void);
/*
 * Binds the import socket, run_path/CHAN_IMPORT_SOCKET (msg.h), mode
 * 0600, replacing a stale one, and puts it in relayd->vhost's loop.
 * Returns 0, or -1 after a warning (import then cannot reach relayd;
 * relayd serves on).  relay_listen_unlink() removes it at the end.
 */
int  relay_listen_import(const char *run_path);
void relay_listen_unlink(void);
/* 1 if wsi came through the import socket, else 0. */
int  relay_listen_is_import(struct lws *);
/* The "listen" protocol: accepts and hands connections to the vhost. */
int  relay_listen_callback(struct lws *, enum lws_callback_reasons, void *,
     void *, size_t);
/*
 * The numeric address of wsi's peer into out (len bytes, "" if unknown),
 * an IPv4-mapped IPv6 address shown as IPv4.  Returns out.
 */
const char *relay_peer_name(struct lws *, char *out, size_t len);
/*
 * The per-address key (addrkey.h, under ipv6_prefix) of wsi's peer into
 * out (len bytes, ADDRKEY_LEN is enough; "" if unknown).  Returns out.
 */
const char *relay_peer_key(struct lws *, char *out, size_t len);
/*
 * Takes the client address of wsi's request from its X-Forwarded-For
 * when the TCP peer is in trusted_proxies (and proxy_protocol is off),
 * for relay_peer_name() and relay_peer_key().  Returns 0, or -1 after
 * answering 400 to a malformed header: the callback must return
 * nonzero.  Never exits.
 */
int	    relay_proxy_forwarded(struct lws *wsi);
/* Logs and counts a malformed PROXY header on the connection fd. */
void	    relay_listen_bad_header(int fd, const char *why);
/* relay_wire.c */
/* Starts the frame-timeout sweep; after the context exists. */
void	    relay_wire_init(void);
/*
 * wsi, adopted from the accepted descriptor fd, is watched from now on;
 * pending is its place from relay_addr_pending_begin() (NULL: none),
 * given back when its headers are complete or it closes; proxy_header:
 * the connection starts with a PROXY header, read before lws reads.
 * Uses wsi's opaque user data.  Exits only if memory runs out.
 */
void relay_wire_accept(struct lws *wsi, int fd, struct relay_addr *pending,
    int proxy_header);
/*
 * The client address a trusted proxy named for wsi's connection into
 * *ss: 1, or 0 if there is none (the TCP peer is the client).
 */
int  relay_wire_client(struct lws *wsi, struct sockaddr_storage *ss);
/* Sets (ss) or forgets (NULL) the client address of wsi's connection. */
void relay_wire_set_client(struct lws *wsi, const struct sockaddr_storage *ss);
/* wsi's request headers are complete: gives back its pending place. */
void relay_wire_headers_done(struct lws *wsi);
/* wsi is an established websocket: its frames are checked now. */
void relay_wire_established(struct lws *wsi);
/* 1 if the websocket wsi has sent an unmasked frame, else 0. */
int  relay_wire_unmasked(struct lws *wsi);
/* 1 if a verdict waits for relay_wire_sweep(), else 0. */
int  relay_wire_dirty(void);
/*
 * Starts closing every websocket that sent an unmasked frame (1002) or
 * whose frame in progress is older than ws_frame_timeout (1008): the
 * close goes out at its next writable callback (relay_ws.c), or the
 * connection is dropped shortly after.
 */
void relay_wire_sweep(void);
/* wsi is going: forgets it and gives back its pending place. */
void relay_wire_destroy(struct lws *wsi);
/* Releases everything, at exit. */
void relay_wire_free(void);
/* relay_addr.c */
struct relay_addr;
/* Websockets open from the address of key (relay_peer_key()). */
int  relay_addr_conns(const char *key);
/* Counts c, an established websocket, for its address key. */
void relay_addr_attach(struct relay_conn *c, const char *key);
/*
 * A connection from key was accepted and has not sent its request
 * headers yet: 1 with its place taken (*ap, given back with
 * relay_addr_pending_end(); NULL when max_pending_per_ip is 0), or 0 when
 * the address already has max_pending_per_ip such connections.  Exits
 * only if memory runs out.
 */
int  relay_addr_pending_begin(const char *key, struct relay_addr **ap);
/* Gives back the place relay_addr_pending_begin() took; NULL is fine. */
void relay_addr_pending_end(struct relay_addr *);
/* Uncounts c; safe on a connection never attached. */
void relay_addr_detach(struct relay_conn *c);
/*
 * 1 if c's address may send one more EVENT now under
 * max_events_per_minute_per_ip (and takes the token), else 0.
 */
int  relay_addr_event_ok(struct relay_conn *c);
/*
 * A git smart HTTP request from wsi's address begins: 1 with its place
 * taken (*ap, given back with relay_addr_git_end(); NULL when
 * max_git_requests_per_ip is 0), or 0 when the address already has
 * max_git_requests_per_ip in progress (counted in /metrics, logged).
 * Exits only if memory runs out.
 */
int  relay_addr_git_begin(struct lws *wsi, struct relay_addr **ap);
/* Gives back the place relay_addr_git_begin() took; NULL is fine. */
void relay_addr_git_end(struct relay_addr *);
/* Releases every record, at exit. */
void relay_addr_free(void);

/* relay_chan.c */
void relay_chan_open(void);
void relay_chan_close(void);
/*
 * Adds the accepted notice of a stored event to those relay_chan_send()
 * publishes, in one message (sent at once when MSG_ACCEPTED_MAX wait).
 */
void relay_chan_publish(int64_t seq, const struct event *);
void relay_chan_send(void);
int relay_chan_callback(struct lws *, enum lws_callback_reasons, void *, void *,
    size_t);
/*
 * The last stats snapshot of role r ({"role", "pid", "metrics"}, owned by
 * relay_chan.c, valid until the next message), with the relay_now_ms()
 * of its arrival in *at; NULL if none came.
 */
const cJSON *relay_chan_role_stats(enum role r, int64_t *at);
/*
 * 1 if the supervisor's last fresh stats snapshot says role r is stopped
 * on request (`graspctl stop`), else 0 (also when there is none).
 */
int	     relay_chan_role_stopped(enum role r);

/* relay_metrics.c */
/* Counts one observation of ms milliseconds in h. */
void  relay_hist_observe(struct relay_hist *h, int64_t ms);
/*
 * The Prometheus text of /metrics; the caller frees it.  Exits on
 * allocation failure.
 */
char *relay_metrics_text(size_t *len);

/* relay_ingest.c */
/* An event fetched by another role: the same pipeline, no client limits. */
void relay_ingest_remote(enum role origin, const char *url, size_t urllen,
    const char *json, size_t len);
/* A client EVENT: checks, then queues it for the next batched commit. */
void relay_ingest_client(struct relay_conn *, const struct json *evj);
/*
 * A client AUTH (NIP-42): checks the event (auth_check_event()), then its
 * signature on the verification path, in order with the connection's
 * events; answers OK and, when good, adds its key to the connection's.
 */
void relay_ingest_auth(struct relay_conn *, const struct json *evj);
/* Drops references to a closing connection from pending work. */
void relay_ingest_forget(struct relay_conn *);
void relay_ingest_init(void);
void relay_ingest_verified(void);
/* After the checkpoint thread woke the loop: flushes what a hold kept. */
void relay_ingest_resume(void);
void relay_ingest_stop(void);
void relay_ingest_flush_now(void);

/* relay_ckpt.c */
/*
 * Opens a second connection to the database at path and starts the
 * thread that checkpoints the WAL with it.  0, or -1 after logging (then
 * the store goes on checkpointing inside its commits).  Does not exit.
 */
int  relay_ckpt_init(const char *path);
/* After a commit that left frames in the WAL: checkpoint soon if many. */
void relay_ckpt_kick(int frames);
/*
 * Before a commit, with the WAL's size after the last one: 1 while the
 * loop must hold its commits because the WAL reached
 * RELAY_CKPT_MAX_FRAMES and the thread is still copying it (the thread
 * wakes the loop when it is done), else 0.  0 when the thread does not
 * run.  Does not exit.
 */
int  relay_ckpt_hold(int frames);
/*
 * No commit for RELAY_CKPT_QUIET_S: the thread truncates a WAL file left
 * larger than RELAY_CKPT_KEEP_FRAMES once it could copy all of it.
 */
void relay_ckpt_idle(void);
/* Waits for a running checkpoint and closes the connection; safe twice. */
void relay_ckpt_stop(void);

/* relay_disk.c */
/* Ours: free space is looked up at most this often (ms), and after a
 * failed write. */
#define RELAY_DISK_CHECK_MS 1000
/* The OK message of an event refused below the floor (NIP-01 prefix). */
#define RELAY_DISK_MSG	    "error: " RELAY_DISK_PUSH_MSG
/* The ERR reason of a push refused below the floor ("ERR error: ..."). */
#define RELAY_DISK_PUSH_MSG \
	"the server is low on disk space; try " \
	"again later"
/*
 * 1 while the database's or the git data's file system has less than
 * NGIT_MIN_FREE_DISK_MB available (statvfs, cached for
 * RELAY_DISK_CHECK_MS), else 0; always 0 when the floor is 0.  Logs
 * entering and leaving the low state.  Never exits.
 */
int  relay_disk_low(void);
/* A write failed (commit, push): the next relay_disk_low() looks again. */
void relay_disk_recheck(void);
/* Counts a refusal for the metrics: push 0 an event, 1 a push. */
void relay_disk_refused(int push);
/* Appends the floor's gauges and counters to a relay_own_metrics() array. */
void relay_disk_metrics(cJSON *arr);

/* relay_inv.c */
/* Builds the inventory from the store and gives it to the policy. */
void relay_inv_init(void);
/* Inside a transaction: ev was stored (accepted or released). */
void relay_inv_add(const struct event *ev);
/* After a transaction failed to commit: back to what the store holds. */
void relay_inv_rebuild(void);
void relay_inv_free(void);

/* relay_neg.c */
/* Handles a message whose verb starts "NEG-" (NIP-77); never exits. */
void   relay_neg_message(struct relay_conn *, const struct json *msg);
/* Frees the connection's negentropy sessions. */
void   relay_neg_release(struct relay_conn *);
/* RELAY_NEG_IDLE, or RELAY_NEG_IDLE_TEST under NGIT_TEST. */
double relay_neg_idle(void);

/*
 * Work that runs inside the next batched write transaction: fn(arg) in
 * it, then done(arg, committed) after the commit (committed 1) or its
 * failure (0).  done may be NULL.
 */
void relay_ingest_task(void (*fn)(void *), void (*done)(void *, int),
    void *arg);
/*
 * Inside a transaction: ev (ownership taken) was stored with seq by a
 * side effect (a purgatory release); it is fanned out and published on
 * the accepted feed after the commit, dropped if the commit fails.
 */
void relay_ingest_released(struct event *ev, int64_t seq);
/* Inside a transaction: fn(arg, committed) runs after the commit. */
void relay_ingest_defer(void (*fn)(void *, int), void *arg);
/* 1 while a batched transaction is open. */
int  relay_ingest_in_txn(void);

/* relay_http.c */
int    relay_http_request(struct relay_conn *, struct lws *);
int    relay_http_writeable(struct relay_conn *, struct lws *);
/* Request body callbacks and the end of an HTTP transaction. */
int    relay_http_body(struct relay_conn *, struct lws *, const void *, size_t);
int    relay_http_body_done(struct relay_conn *, struct lws *);
void   relay_http_closed(struct relay_conn *);
/* Adds the CORS headers every response carries. 0 or 1 when out of room. */
int    relay_http_add_cors(struct lws *, unsigned char **p, unsigned char *end);
/* A complete response whose body (owned by the connection now) follows. */
int    relay_http_respond(struct relay_conn *, struct lws *, unsigned status,
       const char *type, char *body, size_t len);
/*
 * HTTP 429 (RELAY_HTTP_TOO_MANY) with "Retry-After: retry_s" and the
 * text/plain body text (copied).  Returns the callback result.
 */
int    relay_http_too_many(struct relay_conn *, struct lws *, int retry_s,
       const char *text);
int    relay_nip11_build(void);
/* relayd's own counters as [["name{labels}",value],...]; caller frees. */
cJSON *relay_own_metrics(void);
/* Appends ["name{labels}",v] to such an array. */
void   relay_metric(cJSON *arr, const char *name, double v);

/* relay_web.c */
/*
 * Serves uri if it is a page for people (/, /icon.png, /favicon.ico):
 * returns the callback result, or RELAY_WEB_NOT_MINE.
 */
#define RELAY_WEB_NOT_MINE (-2)
int   relay_web_request(struct relay_conn *, struct lws *, const char *uri,
      int urilen);
/*
 * The landing page for search text q ("" or NULL: every repository) and
 * page (1-based), rendered now from the store; the caller frees it.
 * Never NULL (exits if memory runs out).
 */
char *relay_web_landing_render(const char *q, long page, size_t *len);
/* Appends len bytes of s to b, HTML-escaped (controls but \t \n dropped). */
void  relay_web_escape(struct buf *b, const char *s, size_t len);
/*
 * The page of the repository (owner, d) at /<npub>/<d>.git: 404 unless
 * it is hosted; else git runs as children, and the page is written from
 * a later writable callback (relay_web_writeable).  Returns the
 * callback result.
 */
int   relay_web_repo(struct relay_conn *, struct lws *, const char *npub,
      const uint8_t owner[32], const char *d);
/* Writes the page once rendered; the callback result. */
int   relay_web_writeable(struct relay_conn *, struct lws *);
/* The connection closes or takes a new request: forget its page. */
void  relay_web_close(struct relay_conn *);
/* Frees a page request (its children are killed). */
void  relay_web_free(struct relay_webreq *);
/* relay_icon.c: the icon, a PNG. */
extern const unsigned char relay_icon_png[];
extern const size_t	   relay_icon_png_len;

/* relay_git.c */
/*
 * Serves uri if it is a git route (/<npub>/<id>.git[/...]): returns the
 * callback result, or RELAY_GIT_NOT_MINE.
 */
#define RELAY_GIT_NOT_MINE (-2)
int  relay_git_request(struct relay_conn *, struct lws *, int method,
     const char *uri, int urilen);
int  relay_git_body(struct relay_conn *, struct lws *, const void *, size_t);
int  relay_git_body_done(struct relay_conn *, struct lws *);
int  relay_git_writeable(struct relay_conn *, struct lws *);
void relay_git_close(struct relay_conn *);
/* The raw-file protocol of the pipes to git processes. */
int  relay_git_pipe_callback(struct lws *, enum lws_callback_reasons, void *,
     void *, size_t);
/* Appends the git and purgatory counters to a relay_own_metrics() array. */
void relay_git_metrics(cJSON *arr);
/*
 * Git-first pushes (refs/nostr/<id> no PR event claims yet): a PR event
 * claims ref of repository d of signer (/prs/ when prs, else the
 * owner's placeholder), whose bytes become the signer's (the owner's);
 * the sweep removes the /prs/ refs nothing claimed in a placeholder's
 * life (placeholders expire on their own).
 */
void relay_git_unclaimed_claim(const uint8_t signer[32], const char *d,
    const char *ref, int prs);
void relay_git_unclaimed_sweep(void);
/* 1 if a push runs git receive-pack in the repository at repo, else 0. */
int  relay_git_pushing(const char *repo);

/* One ref update of a receive-pack request. */
struct relay_push_cmd {
	char  pc_old[GIT_OID_HEX + 1];
	char  pc_new[GIT_OID_HEX + 1];
	char *pc_ref;
};

/* relay_repo.c */
/* One ref: its full name and object. */
struct relay_ref {
	char *rf_name;
	char  rf_oid[GIT_OID_HEX + 1];
};
struct relay_refs {
	struct relay_ref *v;
	size_t		  n;
	char		 *head; /* HEAD's target, or NULL */
};

/* At start, before the port listens: the scan of prs/ (GRASP-06). */
void relay_repo_init(void);
/* Once the loop exists: the table of git children (common/child.c). */
void relay_children_init(void);
/* <git_data_path>/<npub>/<d>.git into out.  0, or -1 if too long. */
int  relay_repo_path(const uint8_t owner[32], const char *d, char *out,
     size_t outlen);
/* 1 if the repository directory exists, else 0. */
int  relay_repo_exists(const uint8_t owner[32], const char *d);
/*
 * Creates the bare repository of (owner, d) if it is missing, in C and
 * atomically (a complete directory is renamed into place).  0 or -1.
 */
int  relay_repo_create(const uint8_t owner[32], const char *d);
/* Removes the repository of (owner, d); 0, or -1 after logging. */
int  relay_repo_remove(const uint8_t owner[32], const char *d);
/* GRASP-06: contributors' repositories, <git_data_path>/prs/<hex>/<d>.git. */
#define RELAY_PRS_DIR "prs"
/* The /prs/ path of (signer, d) into out.  0, or -1 if too long or unsafe. */
int relay_repo_prs_path(const uint8_t signer[32], const char *d, char *out,
    size_t outlen);
/* Creates the /prs/ repository of (signer, d) if missing.  0 or -1. */
int relay_repo_prs_create(const uint8_t signer[32], const char *d);
/*
 * Removes the /prs/ repository at path (and its signer's directory once
 * empty) if it holds no ref.  1 removed, 0 kept, -1 after logging.
 */
int relay_repo_prs_prune(const char *path);
/* The empty repository served for /prs/ repositories not created yet. */
const char *relay_repo_prs_empty(void);
/* Bytes of files under signer's /prs/ directory (UINT64_MAX on error). */
uint64_t    relay_repo_prs_usage(const uint8_t signer[32]);
/*
 * The most request bytes a push to the repository at repo may send
 * under max_push_bytes and what max_repo_bytes leaves of it (the bytes
 * of the files under its objects/, walked now), UINT64_MAX when neither
 * is set; the limit that binds goes to *which and what it says to why,
 * and what max_repo_bytes alone leaves to *repo_room (UINT64_MAX when
 * unset).  Never exits.
 */
uint64_t    relay_repo_push_room(const char *repo, enum push_limit *which,
       char *why, size_t whylen, uint64_t *repo_room);
/* Repositories of owner here (<git_data_path>/<npub>/ *.git), or -1. */
int	    relay_repo_count(const uint8_t owner[32]);
/* Removes the quarantines a killed git receive-pack left in repo. */
void	    relay_repo_drop_incoming(const char *repo);
/* 1 if repo holds object oid (loose or in a pack), 0 if not. */
int	    relay_repo_has_object(const char *repo, const char *oid);
/*
 * Reads the refs of repo (loose and packed) whose names start with one of
 * the prefixes (NULL-terminated list; NULL: every ref), and HEAD's
 * target.  0, or -1 (out empty).  Free with relay_refs_free().
 */
int	    relay_repo_read_refs(const char *repo, const char *const *prefixes,
	    struct relay_refs *out);
void	    relay_refs_free(struct relay_refs *);
/* The object a ref names, or NULL. */
const char *relay_refs_get(const struct relay_refs *, const char *name);
/*
 * Sets name to oid (GIT_OID_HEX characters), replacing an earlier value
 * (loose beats packed).  Exits on allocation failure.
 */
void  relay_refs_set(struct relay_refs *, const char *name, const char *oid);
/* 1 if repo has a branch or tag. */
int   relay_repo_has_refs(const char *repo);
/*
 * Spawns argv (argv[0] looked up in PATH) with stdin from fd_in and
 * stdout to fd_out (-1: /dev/null), stderr inherited, every other
 * descriptor closed, and relayd's environment without GIT_* plus env
 * ("KEY=VALUE", NULL-terminated, may be NULL), into common/child.c's
 * table.  It is killed after timeout_s; cb(pid, status, killed, arg)
 * runs from the loop once it is reaped (status: exit code, or 128 +
 * signal).  child_abandon(), child_reap() and child_count() apply.
 * Returns the pid or -1 after logging.
 */
pid_t relay_child_spawn(char *const argv[], int fd_in, int fd_out,
    const char *const *env, int timeout_s, child_done_cb *cb, void *arg);
/*
 * Deletes ref from signer's /prs/ repository d if it names oid (and the
 * repository once refless).  1 if deleted, else 0.
 */
int   relay_repo_prs_drop_ref(const uint8_t signer[32], const char *d,
      const char *ref, const char *oid);

/* relay_job.c */
/*
 * The branches and tags a state event (kind 30618) declares, names
 * ending "^{}" and malformed entries skipped, and the branch its HEAD tag
 * names into *head (NULL if none; the caller frees both).
 */
void relay_state_refs(const struct event *state, struct relay_refs *out,
    char **head);
/*
 * 1 if every branch and tag of a state (names ending "^{}" aside) has an
 * object id for value (40 hex digits, what pkt_is_oid() takes), else 0:
 * a value such as "abc123" names nothing git can ever receive, so such a
 * state counts as one whose data is absent (held, never released).
 */
int  relay_state_values_ok(const struct event *state);
/*
 * Adds to refs the branches and tags of a state whose value is not an
 * object id, with that value (at most 40 bytes, a longer one cut with
 * "..."), so that a push compared with it never matches and is told
 * what the state says (relay_pushgate.c).
 */
void relay_state_bad_refs(const struct event *state, struct relay_refs *refs);
/*
 * Maintenance jobs, run one at a time in order.  align: make the
 * branches, tags and HEAD of (owner, d) those of the state event
 * (copying objects from src's repository when missing), then report new
 * git data for (owner, d).  set_ref / delete_ref: one ref (delete only if
 * it still names old).  call: fn(arg) once every job queued before it is
 * done.
 */
void relay_job_align(const uint8_t owner[32], const char *d,
    const struct event *state, const uint8_t src[32]);
void relay_job_set_ref(const uint8_t owner[32], const char *d, const char *ref,
    const char *oid, const uint8_t src[32]);
void relay_job_delete_ref(const uint8_t owner[32], const char *d,
    const char *ref, const char *old);
/* relay_job_set_ref() copying objects from the repository at src_path. */
void relay_job_set_ref_from(const uint8_t owner[32], const char *d,
    const char *ref, const char *oid, const char *src_path);
void relay_job_call(void (*fn)(void *), void *arg);
/*
 * Queues a prune of (owner, d): objects no ref reaches, older than a
 * placeholder's life, go (git gc --prune); put off while a push runs.
 */
void relay_job_prune(const uint8_t owner[32], const char *d);

/* relay_pushauth.c */
/* GRASP-01: the ref namespaces a push may write. */
#define RELAY_REF_HEADS	    "refs/heads/"
#define RELAY_REF_TAGS	    "refs/tags/"
#define RELAY_REF_NOSTR	    "refs/nostr/"
#define RELAY_REF_NOSTR_LEN (sizeof(RELAY_REF_NOSTR) - 1)
/* git's null object id: "no ref" as a push's old or new value. */
#define RELAY_NULL_OID	    "0000000000000000000000000000000000000000"

/* Whether the repository's announcements include the pushed owner's. */
enum pushauth_ann {
	PUSHAUTH_ANN_NONE,  /* no announcement for the identifier */
	PUSHAUTH_ANN_OTHER, /* announcements, none by the owner */
	PUSHAUTH_ANN_OWNER,
};

/* The known tip commit of the PR event a refs/nostr/<id> ref names. */
struct pushauth_tip {
	const char *pt_ref;			  /* refs/nostr/<id> */
	char	    pt_c[GIT_OID_SHA256_HEX + 8]; /* c tag, or "(none)" */
	int	    pt_foreign;			  /* /prs/: another signer's, or
						 * another identifier's */
};

/* What the push decision reads; the caller owns everything. */
struct pushauth_in {
	const struct relay_push_cmd *pi_cmds; /* in request order */
	size_t			     pi_ncmds;
	const struct relay_refs	    *pi_cur; /* every ref, and HEAD */
	enum pushauth_ann	     pi_ann;
	const char		    *pi_owner_hex; /* for the reason */
	size_t			     pi_nheld;	   /* held states */
	const struct relay_refs	    *pi_states;	   /* the authorised */
	size_t			     pi_nstates;   /* ones, newest first */
	const struct pushauth_tip   *pi_tips;
	size_t			     pi_ntips;
	int			     pi_prs; /* a GRASP-06 /prs/ push */
};

struct pushauth_out {
	int	 po_allow;
	int	 po_state;	  /* index of the matching state, or -1 */
	int	 po_deny_deletes; /* git's walls: 1 unless the state */
	int	 po_deny_nonff;	  /* or PR tip that authorises the push
					 * deletes / rewrites a ref */
	char	 po_reason[1024]; /* when refused */
	/* Git first: bit k set when command k (k < 64) writes a
	 * refs/nostr/<id> no PR event claims yet (a placeholder, or under
	 * /prs/ no PR event of the path's signer). */
	uint64_t po_unclaimed;
};

/*
 * Decides a push from in alone (no I/O, no allocation): 1 allowed, 0
 * refused with the reason (what follows "authorisation failed: ") in
 * out->po_reason.  out is always filled in.  Never exits.
 */
int relay_pushauth_decide(const struct pushauth_in *in,
    struct pushauth_out				   *out);
/* 1 if ref is a full ref name git's check-ref-format accepts, else 0. */
int relay_pushauth_refname_ok(const char *ref);

/* relay_purg.c */
enum purg_route {
	PURG_STORE,  /* store it as usual */
	PURG_HELD,   /* held in purgatory: OK true, not stored */
	PURG_REFUSE, /* OK false */
};
void relay_purg_init(void);
void relay_purg_close(void);
/*
 * Before the policy: 1 (with the OK message) when ev is already held and
 * needs no further decision, else 0.  Inside the transaction.
 */
int  relay_purg_held(const struct event *ev, char *msg, size_t msglen);
/*
 * After the policy gave verdict (POLICY_*): holds, refuses or lets ev be
 * stored, with the purgatory side effects (repositories created or
 * evicted, expiry extended, deletions applied).  msg gets the OK message.
 * remote: fetched by another role.  Inside the transaction.
 */
enum purg_route relay_purg_route(const struct event *ev, int verdict,
    int remote, char *msg, size_t msglen);
/* After store_put() stored ev: aligns refs, releases what it unblocks. */
void		relay_purg_stored(const struct event *ev);
/*
 * GRASP-06: a /prs/ push by signer to d succeeded: each refs/nostr/<id>
 * of a known PR or PR update that names that path in its clone tag and
 * the pushed commit in its c tag is mirrored into the PR's repositories
 * here, whose new git data releases it; one with no repository here
 * (GRASP-06's relaxation) is released by the push itself.
 */
void		relay_purg_prs_pushed(const uint8_t signer[32], const char *d,
	       const struct relay_push_cmd *, size_t			    n);
/*
 * GRASP-06: 1 if PR ev names its signer's /prs/ repository d here
 * (policy_prs_clone()) and refs/nostr/<its id> there is at c; else 0.
 */
int relay_purg_prs_holds(const struct event *ev, const char *d, const char *c);
/* 2 if (owner, d) is served, 1 if held in purgatory, 0 if neither. */
int relay_purg_hosted(const uint8_t owner[32], const char *d);
/*
 * The purgatory's shared pieces, for relay_release.c and relay_pushgate.c.
 * relay_purg_later: now plus a delay of the brief (scaled in test mode);
 * relay_purg_parse: an event from stored JSON, or NULL; relay_purg_anns:
 * the announcements of d (with_held: the held ones too), -1 on error;
 * relay_purg_pr_commit: the tip commit of a PR or PR update, or NULL;
 * relay_purg_pr_event: the PR or PR update with that id, held or stored
 * (caller frees), or NULL; relay_purg_pr_by: 1 if PR ev is signer's for
 * identifier d.
 */
int64_t	      relay_purg_later(double secs);
struct event *relay_purg_parse(const char *json);
int relay_purg_anns(const char *d, int with_held, struct policy_anns *a);
const char   *relay_purg_pr_commit(const struct event *ev);
struct event *relay_purg_pr_event(const uint8_t id[32]);
int	      relay_purg_pr_by(const struct event *ev, const uint8_t signer[32],
	      const char *d);
/* The owner among a whose repository holds every object of want. */
int	      relay_purg_find_source(const struct policy_anns *a, const char *d,
	      const struct relay_refs *want, uint8_t src[32]);
/* The owners whose repositories PR ev concerns, at most max. */
size_t	      relay_purg_pr_owners(const struct event *ev, const char *d,
	   uint8_t (*owners)[32], size_t			       max);
/* A repository holding commit c among owners (or extra_*); 1 if found. */
int  relay_purg_pr_source(const uint8_t (*owners)[32], size_t n, const char *d,
     const char *c, const uint8_t *extra_owner, const char *extra_d,
     uint8_t src[32], char *src_d, size_t src_dlen);
/* After the commit: refs/nostr/<id> of PR ev in every owner's repository. */
void relay_purg_pr_set_refs(const struct event *ev, const uint8_t (*owners)[32],
    size_t n, const char *d, const uint8_t src[32], const char *src_d);
/* A repository, as a queued task sees it (relay_ingest_task()). */
struct relay_purg_key {
	uint8_t rk_owner[32];
	char   *rk_d;
};
struct relay_purg_key *relay_purg_key(const uint8_t owner[32], const char *d);
void		       relay_purg_key_done(void *arg, int committed);

/* relay_release.c */
/*
 * A receive-pack to (owner, d) succeeded: records placeholders and
 * releases what the new git data satisfies; done(arg) runs once that is
 * committed and the refs it implies are aligned.
 */
void relay_purg_pushed(const uint8_t owner[32], const char *d,
    const struct relay_push_cmd *, size_t n, void (*done)(void *), void *arg);
/* Git data landed in (owner, d) by a job: release what it satisfies. */
void relay_purg_git_arrived(const uint8_t owner[32], const char *d);
/*
 * Releases what git data present for identifier d now satisfies
 * (extra_owner/extra_d: a repository the data was just pushed to).
 */
void relay_release_d(const char *d, const uint8_t *extra_owner,
    const char *extra_d);

/* relay_pushgate.c */
/*
 * Push authorization (reference brief 7) for a receive-pack request to
 * (owner, d), before any git process runs: gathers the repository's refs,
 * its announcements, held states and known PR tips, and asks
 * relay_pushauth_decide().  prs: a GRASP-06 push to /prs/ of signer
 * owner (refs/nostr only, no announcement or state).  1 allowed; 0
 * refused with the reason (after "authorisation failed: ") in
 * out->po_reason; -1 on error.
 */
int relay_purg_authorise_push(const uint8_t owner[32], const char *d, int prs,
    const struct relay_push_cmd *, size_t n, struct pushauth_out *out);

#endif
