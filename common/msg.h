/*
 * msg.h: the messages graspd's processes exchange over nanomsg, and the
 * channels that carry them (design.md, "Channels").
 *
 * Every message is a fixed header followed by a payload.  The header
 * carries a magic number, a version, the type and the payload length; a
 * receiver checks all four.  A malformed message from a sibling process is
 * a bug: msg_recv() ends the receiving process with fatalx() and the
 * supervisor restarts it.  Nothing a websocket client or a remote relay
 * sends reaches this path.  Control sockets are the exception: a client
 * (graspctl) writes to them, so they are read with msg_recv_client(),
 * which answers a malformed request instead of exiting.
 *
 * All processes run on one machine, so integers travel in host order.
 */
#ifndef GRASPD_MSG_H
#define GRASPD_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "nip01.h"

struct buf;

#define MSG_MAGIC	0x47525350u /* "GRSP" */
#define MSG_VERSION	1
/* Ours: an ingested event is at most 1 MiB (relayd's message limit)
 * plus its origin; control replies and stats are far smaller. */
#define MSG_MAX_PAYLOAD (4u * 1024 * 1024)

/*
 * The one list of message types.  Append, never renumber: a role built
 * from another revision must not misread a message.
 */
#define MSG_TYPE_LIST(X) \
	X(INGEST, 1)	    /* role -> relayd: a fetched event */ \
	X(ACCEPTED, 2)	    /* relayd -> all: one stored event */ \
	X(CONTROL, 3)	    /* graspctl/supervisor -> process */ \
	X(CONTROL_REPLY, 4) /* process -> graspctl/supervisor */ \
	X(STATS, 5)	    /* role -> relayd: counter snapshot */ \
	X(PLUSMARK, 6)	    /* discoveryd -> relayd: fallback mark */ \
	X(GIT_DATA, 7)	    /* syncd -> relayd gitdata: git arrived */

enum msg_type {
#define MSG_ENUM(name, value) MSG_##name = value,
	MSG_TYPE_LIST(MSG_ENUM)
#undef MSG_ENUM
};

/* "INGEST", "ACCEPTED", ...; "UNKNOWN" for anything else. */
const char *msg_type_name(unsigned type);

struct msg_hdr {
	uint32_t mh_magic;
	uint16_t mh_version;
	uint16_t mh_type;
	uint32_t mh_len; /* payload bytes after the header */
	uint32_t mh_pid; /* sender */
};

/* The processes, for origins, endpoints and logs. */
#define ROLE_LIST(X) \
	X(SUPERVISOR, 0, "graspd") \
	X(RELAYD, 1, "relayd") \
	X(SYNCD, 2, "syncd") \
	X(DISCOVERYD, 3, "discoveryd") \
	X(HISTORYD, 4, "historyd") \
	X(GRASPCTL, 5, "graspctl")

enum role {
#define ROLE_ENUM(name, value, str) ROLE_##name = value,
	ROLE_LIST(ROLE_ENUM)
#undef ROLE_ENUM
	ROLE_COUNT
};

const char *role_name(unsigned role);
/* The role named s, or -1. */
int	    role_from_name(const char *s);

/* Ours: send/receive buffer of the PUSH/PULL pipes (ingest, stats). */
#define CHAN_PIPE_BUFFER (8 * 1024 * 1024)

/* Channel names: ipc://<NGIT_RUN_PATH>/<name>.ipc. */
#define CHAN_INGEST   "ingest"
#define CHAN_ACCEPTED "accepted"
#define CHAN_STATS    "stats"
#define CHAN_GITDATA  "gitdata"
/* Each process binds its own control channel "control-<role>". */

/*
 * Ours: relayd's websocket for graspctl import, a unix socket in the run
 * directory (graspctl(8), import).  A connection that comes through it
 * is the operator's, whatever it sends: only a local user who may open
 * the run directory reaches it, never a client of the TCP listener.
 */
#define CHAN_IMPORT_SOCKET "relayd-import.sock"

/* Writes "ipc://<run_path>/<name>.ipc"; -1 if it does not fit. */
int chan_endpoint(const char *run_path, const char *name, char *out,
    size_t outlen);
/* The control endpoint of a role. */
int chan_control_endpoint(const char *run_path, enum role, char *out,
    size_t outlen);

/*
 * Opens a nanomsg socket of protocol proto (NN_PUSH, NN_SUB, ...) and binds
 * (bind != 0) or connects it to endpoint, with the receive size limit set
 * to the largest message.  SUB sockets subscribe to everything.  Returns
 * the socket or -1 with errno set.
 */
int  chan_open(int proto, const char *endpoint, int bind);
/* The descriptor that polls readable when a message waits (NN_RCVFD). */
int  chan_rcvfd(int sock);
void chan_close(int sock);

/*
 * Sends one message.  flags are nanomsg flags (NN_DONTWAIT).  Returns 0,
 * or -1 with errno (EAGAIN when it would block).
 */
int msg_send(int sock, enum msg_type, const void *payload, size_t len,
    int flags);

/* A received message; release it with msg_free(). */
struct msg {
	enum msg_type  m_type;
	uint32_t       m_pid;
	const uint8_t *m_data; /* payload */
	size_t	       m_len;
	void	      *m_nn; /* nanomsg's buffer */
};

/*
 * Receives one message.  Returns 1 with *m filled, 0 when none is waiting
 * (with NN_DONTWAIT) and -1 on a socket error.  A message with a bad
 * magic, version, type or length ends the process (fatalx): it can only
 * come from a broken sibling.
 */
int msg_recv(int sock, struct msg *m, int flags);
/*
 * msg_recv() for a socket a client writes to (a control socket, where
 * graspctl or any local program may send anything): a malformed message
 * is the client's mistake, not a sibling's bug.  Returns 1 with *m
 * filled, 0 when none is waiting, -1 on a socket error, and
 * MSG_RECV_MALFORMED when a message arrived that msg_check() refuses:
 * its buffer is already released, *m is empty and err says why (the
 * caller answers and goes on).  Never exits.
 */
#define MSG_RECV_MALFORMED (-2)
int  msg_recv_client(int sock, struct msg *m, int flags, char *err,
     size_t errlen);
/*
 * The checks of msg_recv() on a received buffer of n bytes (header and
 * payload), without the exit: returns 0 with *m filled (m_data points
 * into buf, which the caller keeps owning; m_nn is NULL, so msg_free() is
 * a no-op), or -1 with msg_recv()'s fatalx text in err.  Never exits.
 * Used by msg_recv() and by the fuzz harness.
 */
int  msg_check(const void *buf, size_t n, struct msg *m, char *err,
     size_t errlen);
void msg_free(struct msg *);

/*
 * ACCEPTED payload: 1 to MSG_ACCEPTED_MAX notices, in seq order, each a
 * hint that an event was stored.  Subscribers read the event itself from
 * the database by seq (SQLite is the truth).  relayd sends a commit's
 * notices together: one message costs a send per subscriber.
 */
struct msg_accepted {
	int64_t	 ma_seq;
	uint32_t ma_kind;
	uint32_t ma_pad;
	uint8_t	 ma_id[EVENT_ID_LEN];
	uint8_t	 ma_pubkey[PUBKEY_LEN];
};
/* Ours: notices in one ACCEPTED message (80 bytes each). */
#define MSG_ACCEPTED_MAX 1024
/*
 * The number of notices in ACCEPTED message m (its i-th at m_data + i *
 * sizeof(struct msg_accepted)), or 0 when m is not 1 to MSG_ACCEPTED_MAX
 * whole notices.
 */
size_t msg_accepted_count(const struct msg *m);

/*
 * INGEST payload: [u8 origin role][u16 url length][url][event JSON].
 * msg_ingest_decode() ends the process on a malformed payload.
 */
void msg_ingest_encode(struct buf *, enum role origin, const char *url,
    const char *json, size_t jsonlen);
struct msg_ingest {
	enum role   mi_origin;
	const char *mi_url; /* not NUL-terminated */
	size_t	    mi_urllen;
	const char *mi_json;
	size_t	    mi_jsonlen;
};
void msg_ingest_decode(const struct msg *, struct msg_ingest *);

/*
 * PLUSMARK payload (on the ingest channel, after the events it follows):
 * GRASP-03's fallback mark of one author, set when a successful
 * user-index query returned no accepted kind 10002, cleared once it is
 * moot.  relayd persists it (plusmark.h).  Exactly the 32-byte pubkey
 * and one byte, 1 (set) or 0 (clear); msg_plusmark_decode() ends the
 * process on anything else.
 */
#define MSG_PLUSMARK_LEN (PUBKEY_LEN + 1)
void msg_plusmark_encode(uint8_t out[MSG_PLUSMARK_LEN],
    const uint8_t pubkey[PUBKEY_LEN], int set);
/* Fills pubkey; returns the mark (1 set, 0 clear). */
int  msg_plusmark_decode(const struct msg *, uint8_t pubkey[PUBKEY_LEN]);

/*
 * GIT_DATA payload: syncd's git-data hunt fetched objects into relayd's
 * repository <owner>/<d>.git; relayd runs the release a push runs.  It
 * is a request on the gitdata channel (syncd REQ, relayd REP: the one
 * sibling channel with an answer), answered by a CONTROL_REPLY
 * {"ok":true} or {"ok":false,"error":"..."} (an identifier that is not
 * safe, or a repository that is gone).  Only syncd writes to it, so a
 * malformed message there ends relayd, as on every sibling channel.
 * Layout: the 32-byte owner key, one byte n, then n bytes of d (no NUL,
 * no terminator), exactly 33 + n bytes.
 */
/* Ours: <d>.git is one file name, at most NAME_MAX (255) bytes. */
#define MSG_GIT_DATA_D_MAX 251
/* The owner key and the byte n before d. */
#define MSG_GIT_DATA_HEAD  (PUBKEY_LEN + 1)
#define MSG_GIT_DATA_MAX   (MSG_GIT_DATA_HEAD + MSG_GIT_DATA_D_MAX)
struct msg_git_data {
	uint8_t mg_owner[PUBKEY_LEN];
	char	mg_d[MSG_GIT_DATA_D_MAX + 1]; /* NUL-terminated */
};
/* The payload for owner and d into out; its length, or -1 (errno
 * EINVAL) if d is empty or longer than MSG_GIT_DATA_D_MAX. */
int msg_git_data_encode(uint8_t out[MSG_GIT_DATA_MAX],
    const uint8_t owner[PUBKEY_LEN], const char *d);
/* Fills mg from m; 0, or -1 with err saying why.  Never exits (the
 * fuzz harness and the unit test call it; relayd exits on -1). */
int msg_git_data_decode(const struct msg *, struct msg_git_data *mg, char *err,
    size_t errlen);

/*
 * CONTROL and CONTROL_REPLY payloads are JSON text: a request is
 * {"cmd":"status"|"show"|"log"|"stop"|...,"args":[...]} and a reply
 * {"ok":true|false, ...}.  STATS payloads are JSON text too:
 * {"role":"syncd","pid":N,"metrics":[["name{labels}",value],...]}.
 */

#endif
