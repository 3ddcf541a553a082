/*
 * negentropy.h: the Negentropy set reconciliation protocol, version 1
 * (NIP-77 appendix; nips.md 5.4), both roles.
 *
 * Each side holds a set of items (timestamp, 32-byte id) sorted by
 * timestamp, then id.  The client (initiator) sends a first message; the
 * server answers each message it gets; the client answers each answer
 * until it has nothing left to say, and learns on the way which ids only
 * it has ("have") and which only the server has ("need").  Messages are
 * hex-encoded binary, as NIP-77 carries them.
 *
 * relayd runs the server side for NEG-OPEN / NEG-MSG; syncd runs the
 * client side against other relays (through common/conn.c).  Every
 * message is untrusted input: a malformed one is refused with a reason,
 * never trusted to be in bounds.  The module does not exit, except on allocation failure.
 */
#ifndef GRASPD_NEGENTROPY_H
#define GRASPD_NEGENTROPY_H

#include <stddef.h>
#include <stdint.h>

struct buf;

/* NIP-77 appendix: the first byte of a v1 message. */
#define NEG_PROTOCOL_V1	     0x61
/* NIP-77 appendix: version bytes are 0x60 + version, up to 0x6f. */
#define NEG_VERSION_MIN	     0x60
#define NEG_VERSION_MAX	     0x6f
/* NIP-77 appendix: ids are 32 bytes, fingerprints 16. */
#define NEG_ID_SIZE	     32
#define NEG_FINGERPRINT_SIZE 16
/* NIP-77 appendix: the reserved "infinity" timestamp. */
#define NEG_TS_INFINITY	     UINT64_MAX
/* Reference implementation (nips.md 5.4): a range is split in 16. */
#define NEG_BUCKETS	     16
/* Reference: a range with fewer items than this goes as an id list. */
#define NEG_IDLIST_THRESHOLD (2 * NEG_BUCKETS)
/* Reference: a frame size limit is 0 (none) or at least this. */
#define NEG_FRAME_MIN	     4096
/* Reference: output stops this close to the frame size limit. */
#define NEG_FRAME_MARGIN     200
/*
 * ngit-grasp brief 2.1 (and nostr-tools' and strfry's sync clients):
 * bytes of one binary message, 120,000 hex characters on the wire.
 */
#define NEG_FRAME_DEFAULT    60000
/* STRFRY maxSyncEvents (nips.md 5.4): items in one set. */
#define NEG_MAX_ITEMS	     1000000

/* NIP-77 appendix: range modes. */
enum neg_mode {
	NEG_MODE_SKIP = 0,
	NEG_MODE_FINGERPRINT = 1,
	NEG_MODE_IDLIST = 2,
};

struct neg_item {
	uint64_t ni_ts; /* created_at */
	uint8_t	 ni_id[NEG_ID_SIZE];
};

/*
 * A range boundary: items below (nb_ts, nb_id zero-padded) are inside.
 * nb_len is how many bytes of nb_id the encoding carries (0..32).
 */
struct neg_bound {
	uint64_t nb_ts;
	uint8_t	 nb_id[NEG_ID_SIZE];
	size_t	 nb_len;
};

/* A list of ids (have or need), owned by its struct neg. */
struct neg_idlist {
	uint8_t (*il_ids)[NEG_ID_SIZE];
	size_t il_n;
	size_t il_cap;
};

struct neg;

/*
 * Protocol pieces, exposed for the tests.
 *
 * neg_varint_put() appends v as a Negentropy varint (base 128, most
 * significant group first; not LEB128).  neg_varint_get() reads one from
 * *p (not past end), advancing *p; returns 0, or -1 if the input ends
 * early or the value does not fit 64 bits.
 *
 * neg_bound_put() / neg_bound_get() write and read a bound; *last is the
 * previous timestamp of the message in that direction (start each
 * message at 0).  neg_bound_get() returns 0, or -1 on a truncated bound
 * or an id prefix longer than 32 bytes.
 *
 * neg_fingerprint() writes the fingerprint of items[0..n): the first 16
 * bytes of SHA-256 over (the sum of the ids as 256-bit little-endian
 * numbers, mod 2^256) followed by varint(n).
 *
 * neg_items_sort() sorts items by (timestamp, id) and drops exact
 * duplicates, updating *n.
 */
void neg_varint_put(struct buf *, uint64_t v);
int  neg_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v);
void neg_bound_put(struct buf *, uint64_t *last, const struct neg_bound *);
int  neg_bound_get(const uint8_t **p, const uint8_t *end, uint64_t *last,
     struct neg_bound *);
void neg_fingerprint(const struct neg_item *items, size_t n,
    uint8_t out[NEG_FINGERPRINT_SIZE]);
void neg_items_sort(struct neg_item *items, size_t *n);

/* A growing array of items; { NULL, 0, 0 } is empty. */
struct neg_items {
	struct neg_item *ni_v; /* malloc'd, the caller frees */
	size_t		 ni_n;
	size_t		 ni_cap;
};

/*
 * Appends (created_at, id) to the struct neg_items at arg, a negative
 * created_at as 0: the callback shape of store_query_items(), which
 * fills a set from the database.  Returns 0; exits on allocation failure.
 */
int neg_items_add(int64_t created_at, const uint8_t id[NEG_ID_SIZE], void *arg);

/*
 * Creates a server (neg_server_new) or client (neg_client_new) over n
 * items.  Takes ownership of items, a malloc'd array in any order (it is
 * sorted and deduplicated here; NULL is fine when n is 0), and frees it
 * on failure too.  frame_limit is the largest binary message this side
 * writes: 0 for no limit, else at least NEG_FRAME_MIN.  Returns the
 * session, or NULL with the reason in err: more than NEG_MAX_ITEMS items,
 * or a bad frame limit.  Free it with neg_free().
 */
struct neg *neg_server_new(struct neg_item *items, size_t n, size_t frame_limit,
    char *err, size_t errlen);
struct neg *neg_client_new(struct neg_item *items, size_t n, size_t frame_limit,
    char *err, size_t errlen);
/* Releases the session, its items and its id lists.  NULL is fine. */
void	    neg_free(struct neg *);
/* Number of items in the session's set. */
size_t	    neg_size(const struct neg *);

/*
 * Server: answers one message (hex[0..hexlen)), appending the answer in
 * hex to out.  A message of an unsupported version in 0x60..0x6f gets
 * the bare version byte "61" as the spec asks.  Returns 0, or -1 with the
 * reason in err (bad hex, bad version byte, malformed message, or a
 * client session); out is then unchanged.
 */
int neg_server_reconcile(struct neg *, const char *hex, size_t hexlen,
    struct buf *out, char *err, size_t errlen);

/*
 * Client: appends the first message, in hex, to out.  Returns 0, or -1
 * if this is not a client or it has already initiated.
 */
int neg_client_initiate(struct neg *, struct buf *out);

/*
 * Client: reads the server's answer.  Returns 1 and appends the next
 * message in hex to out; or 0 when reconciliation is complete (nothing
 * appended); or -1 with the reason in err (malformed message, bad or
 * unsupported version, not initiated, more than NEG_MAX_ITEMS needed
 * ids).  The ids found so far accumulate in the have and need lists; when
 * it returns 0 they are sorted and free of repeats.
 */
int neg_client_reconcile(struct neg *, const char *hex, size_t hexlen,
    struct buf *out, char *err, size_t errlen);

/*
 * The client's lists: ids in its set that the server lacks (have), and ids
 * the server has that it lacks (need).  Owned by the session; valid until
 * the next call on it.
 */
const struct neg_idlist *neg_client_have(const struct neg *);
const struct neg_idlist *neg_client_need(const struct neg *);

#endif
