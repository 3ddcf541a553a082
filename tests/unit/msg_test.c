/*
 * msg_test.c: the message framing of msg.c: every type survives a round
 * trip with its payload and sender, the type list names every type, the
 * ingest, PLUSMARK and GIT_DATA codecs round-trip, a malformed GIT_DATA
 * payload is refused with a reason, and a message with a broken header ends the
 * receiving process with status 1.
 *
 * The broken-header cases run in a fresh copy of this program started by
 * fork+exec: nanomsg is not fork-safe, so no child ever uses a nanomsg
 * state inherited from the test process.
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <nanomsg/nn.h>
#include <nanomsg/pair.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "msg.h"
#include "t.h"
#include "tdir.h"
#include "tunit_child.h"

static char tmpdir[64];
static int  npair;

/* A connected PAIR of sockets over ipc in tmpdir; 0 or -1. */
static int
pair_open(int *tx, int *rx)
{
	char name[32], ep[256];
	int  tmo = 5000;

	snprintf(name, sizeof(name), "pair%d", ++npair);
	if (chan_endpoint(tmpdir, name, ep, sizeof(ep)) == -1)
		return -1;
	if ((*rx = chan_open(NN_PAIR, ep, 1)) == -1)
		return -1;
	if ((*tx = chan_open(NN_PAIR, ep, 0)) == -1) {
		chan_close(*rx);
		return -1;
	}
	nn_setsockopt(*rx, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo, sizeof(tmo));
	nn_setsockopt(*tx, NN_SOL_SOCKET, NN_SNDTIMEO, &tmo, sizeof(tmo));
	return 0;
}

static void
test_every_type_round_trips(void)
{
	static const unsigned types[] = {
#define MSG_VAL(name, value) value,
		MSG_TYPE_LIST(MSG_VAL)
#undef MSG_VAL
	};
	struct msg m;
	char	   payload[64];
	size_t	   i;
	int	   tx, rx;

	T_ASSERT(pair_open(&tx, &rx) == 0);
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		snprintf(payload, sizeof(payload), "payload of %s",
		    msg_type_name(types[i]));
		T_ASSERT(
		    msg_send(tx, types[i], payload, strlen(payload), 0) == 0);
		T_EQ_INT(msg_recv(rx, &m, 0), 1);
		T_EQ_INT(m.m_type, types[i]);
		T_EQ_INT(m.m_pid, getpid());
		T_EQ_INT(m.m_len, strlen(payload));
		T_CHECK(memcmp(m.m_data, payload, m.m_len) == 0);
		msg_free(&m);
		T_CHECK(m.m_nn == NULL);
	}
	/* An empty payload is a message too. */
	T_ASSERT(msg_send(tx, MSG_CONTROL, NULL, 0, 0) == 0);
	T_EQ_INT(msg_recv(rx, &m, 0), 1);
	T_EQ_INT(m.m_type, MSG_CONTROL);
	T_EQ_INT(m.m_len, 0);
	msg_free(&m);
	/* Nothing waiting: 0 without blocking. */
	T_EQ_INT(msg_recv(rx, &m, NN_DONTWAIT), 0);
	chan_close(tx);
	chan_close(rx);
}

static void
test_largest_payload_passes_and_larger_is_refused(void)
{
	struct msg m;
	char	  *big;
	int	   tx, rx;

	T_ASSERT((big = malloc(MSG_MAX_PAYLOAD + 1)) != NULL);
	memset(big, 'x', MSG_MAX_PAYLOAD + 1);
	big[MSG_MAX_PAYLOAD - 1] = 'y';
	T_ASSERT(pair_open(&tx, &rx) == 0);
	T_ASSERT(msg_send(tx, MSG_INGEST, big, MSG_MAX_PAYLOAD, 0) == 0);
	T_EQ_INT(msg_recv(rx, &m, 0), 1);
	T_EQ_INT(m.m_len, MSG_MAX_PAYLOAD);
	T_CHECK(m.m_data[MSG_MAX_PAYLOAD - 1] == 'y');
	msg_free(&m);
	errno = 0;
	T_EQ_INT(msg_send(tx, MSG_INGEST, big, MSG_MAX_PAYLOAD + 1, 0), -1);
	T_EQ_INT(errno, EMSGSIZE);
	chan_close(tx);
	chan_close(rx);
	free(big);
}

static void
test_type_names_cover_the_list(void)
{
#define MSG_NAME_CHECK(name, value) \
	T_EQ_STR(msg_type_name(value), #name); \
	T_EQ_INT(MSG_##name, value);
	MSG_TYPE_LIST(MSG_NAME_CHECK)
#undef MSG_NAME_CHECK
	T_EQ_STR(msg_type_name(0), "UNKNOWN");
	T_EQ_STR(msg_type_name(999), "UNKNOWN");
	T_EQ_STR(msg_type_name(0xffff), "UNKNOWN");
}

static void
test_role_names_round_trip(void)
{
	unsigned r;

	for (r = 0; r < ROLE_COUNT; r++)
		T_EQ_INT(role_from_name(role_name(r)), r);
	T_EQ_STR(role_name(ROLE_SYNCD), "syncd");
	T_EQ_STR(role_name(ROLE_COUNT), "unknown");
	T_EQ_INT(role_from_name("nobody"), -1);
}

static void
test_endpoints(void)
{
	char ep[64];

	T_EQ_INT(chan_endpoint("/run/g", CHAN_ACCEPTED, ep, sizeof(ep)), 0);
	T_EQ_STR(ep, "ipc:///run/g/accepted.ipc");
	T_EQ_INT(chan_control_endpoint("/run/g", ROLE_HISTORYD, ep, sizeof(ep)),
	    0);
	T_EQ_STR(ep, "ipc:///run/g/control-historyd.ipc");
	T_EQ_INT(
	    chan_endpoint("/a/very/long/run/directory/path", "stats", ep, 16),
	    -1);
}

static void
test_ingest_codec_round_trips(void)
{
	struct buf	  b = BUF_INIT;
	struct msg	  m;
	struct msg_ingest mi;
	const char	 *json = "{\"id\":\"x\"}";
	int		  tx, rx;

	T_ASSERT(pair_open(&tx, &rx) == 0);
	msg_ingest_encode(&b, ROLE_HISTORYD, "wss://relay.example/", json,
	    strlen(json));
	T_ASSERT(msg_send(tx, MSG_INGEST, b.b_data, b.b_len, 0) == 0);
	buf_free(&b);
	T_EQ_INT(msg_recv(rx, &m, 0), 1);
	msg_ingest_decode(&m, &mi);
	T_EQ_INT(mi.mi_origin, ROLE_HISTORYD);
	T_EQ_INT(mi.mi_urllen, strlen("wss://relay.example/"));
	T_CHECK(memcmp(mi.mi_url, "wss://relay.example/", mi.mi_urllen) == 0);
	T_EQ_INT(mi.mi_jsonlen, strlen(json));
	T_CHECK(memcmp(mi.mi_json, json, mi.mi_jsonlen) == 0);
	msg_free(&m);

	/* No URL. */
	msg_ingest_encode(&b, ROLE_SYNCD, NULL, json, strlen(json));
	T_ASSERT(msg_send(tx, MSG_INGEST, b.b_data, b.b_len, 0) == 0);
	buf_free(&b);
	T_EQ_INT(msg_recv(rx, &m, 0), 1);
	msg_ingest_decode(&m, &mi);
	T_EQ_INT(mi.mi_origin, ROLE_SYNCD);
	T_EQ_INT(mi.mi_urllen, 0);
	T_EQ_INT(mi.mi_jsonlen, strlen(json));
	msg_free(&m);
	chan_close(tx);
	chan_close(rx);
}

/*
 * The child: sends itself one raw frame (a header made broken in the way
 * named by how, or a bad INGEST payload) and receives it with msg_recv()
 * (or decodes it).  Exits 1 through fatalx() if msg.c does its job;
 * returning 0 means it accepted the message.
 */
static int
child_broken(const char *dir, const char *how)
{
	struct msg_hdr	  h;
	struct msg	  m;
	struct msg_ingest mi;
	unsigned char	  frame[sizeof(h) + MSG_PLUSMARK_LEN];
	uint8_t		  pk[PUBKEY_LEN];
	size_t		  len = sizeof(h) + 8;
	int		  tx, rx;

	snprintf(tmpdir, sizeof(tmpdir), "%s", dir);
	if (pair_open(&tx, &rx) == -1)
		return 3;
	memset(&h, 0, sizeof(h));
	h.mh_magic = MSG_MAGIC;
	h.mh_version = MSG_VERSION;
	h.mh_type = MSG_CONTROL;
	h.mh_len = 8;
	h.mh_pid = (uint32_t)getpid();
	if (strcmp(how, "short") == 0)
		len = sizeof(h) - 1;
	else if (strcmp(how, "magic") == 0)
		h.mh_magic = 0x12345678;
	else if (strcmp(how, "version") == 0)
		h.mh_version = MSG_VERSION + 1;
	else if (strcmp(how, "type") == 0)
		h.mh_type = 999;
	else if (strcmp(how, "length") == 0)
		h.mh_len = 9;
	else if (strcmp(how, "ingest") == 0) {
		/* A URL length past the end of the payload. */
		h.mh_type = MSG_INGEST;
		h.mh_len = 8;
	} else if (strcmp(how, "plusmark-length") == 0) {
		/* Eight bytes, not a pubkey and a flag. */
		h.mh_type = MSG_PLUSMARK;
		h.mh_len = 8;
	} else if (strcmp(how, "plusmark-flag") == 0) {
		h.mh_type = MSG_PLUSMARK;
		h.mh_len = MSG_PLUSMARK_LEN;
		len = sizeof(h) + MSG_PLUSMARK_LEN;
	} else
		return 3;
	memcpy(frame, &h, sizeof(h));
	memset(frame + sizeof(h), 0, MSG_PLUSMARK_LEN);
	frame[sizeof(h)] = ROLE_SYNCD;
	frame[sizeof(h) + 1] = 0xff;
	frame[sizeof(h) + 32] = 2;
	if (nn_send(tx, frame, len, 0) != (int)len)
		return 3;
	if (msg_recv(rx, &m, 0) != 1)
		return 3;
	if (m.m_type == MSG_INGEST)
		msg_ingest_decode(&m, &mi);
	if (m.m_type == MSG_PLUSMARK)
		msg_plusmark_decode(&m, pk);
	msg_free(&m);
	return 0;
}

/* Runs child_broken(how) in a fresh process; it must die saying says. */
static void
broken(const char *how, const char *says)
{
	T_EQ_INT(tunit_child_dies("msg_test", tmpdir, how, says), 0);
}

static void
test_short_message_ends_the_receiver(void)
{
	broken("short", "shorter than a header");
}

static void
test_bad_magic_ends_the_receiver(void)
{
	broken("magic", "bad magic 0x12345678");
}

static void
test_bad_version_ends_the_receiver(void)
{
	broken("version", "version 2, expected 1");
}

static void
test_unknown_type_ends_the_receiver(void)
{
	broken("type", "unknown type 999");
}

static void
test_length_mismatch_ends_the_receiver(void)
{
	broken("length", "malformed CONTROL message: length 9, 8 bytes follow");
}

static void
test_bad_ingest_payload_ends_the_receiver(void)
{
	broken("ingest", "malformed INGEST message: url length");
}

static void
test_bad_plusmark_payload_ends_the_receiver(void)
{
	broken("plusmark-length",
	    "malformed PLUSMARK message: 8 bytes, "
	    "expected 33");
	broken("plusmark-flag", "malformed PLUSMARK message: mark 2");
}

/* Whole notices, 1 to MSG_ACCEPTED_MAX of them, of the ACCEPTED type. */
static void
test_accepted_count_takes_whole_notices_only(void)
{
	static uint8_t
		     data[(MSG_ACCEPTED_MAX + 1) * sizeof(struct msg_accepted)];
	const size_t sz = sizeof(struct msg_accepted);
	struct msg   m;

	memset(&m, 0, sizeof(m));
	m.m_type = MSG_ACCEPTED;
	m.m_data = data;
	m.m_len = 0;
	T_EQ_INT(msg_accepted_count(&m), 0);
	m.m_len = sz;
	T_EQ_INT(msg_accepted_count(&m), 1);
	m.m_len = 3 * sz;
	T_EQ_INT(msg_accepted_count(&m), 3);
	m.m_len = 3 * sz + 1;
	T_EQ_INT(msg_accepted_count(&m), 0);
	m.m_len = sz - 1;
	T_EQ_INT(msg_accepted_count(&m), 0);
	m.m_len = MSG_ACCEPTED_MAX * sz;
	T_EQ_INT(msg_accepted_count(&m), MSG_ACCEPTED_MAX);
	m.m_len = (MSG_ACCEPTED_MAX + 1) * sz;
	T_EQ_INT(msg_accepted_count(&m), 0);
	m.m_type = MSG_PLUSMARK;
	m.m_len = sz;
	T_EQ_INT(msg_accepted_count(&m), 0);
}

static void
test_plusmark_codec_round_trips(void)
{
	uint8_t	   pk[PUBKEY_LEN], got[PUBKEY_LEN], buf[MSG_PLUSMARK_LEN];
	struct msg m;
	int	   tx, rx, set;

	T_ASSERT(pair_open(&tx, &rx) == 0);
	for (set = 0; set <= 1; set++) {
		memset(pk, 0xa0 + set, sizeof(pk));
		pk[31] = 0x01;
		msg_plusmark_encode(buf, pk, set ? 7 : 0);
		T_ASSERT(msg_send(tx, MSG_PLUSMARK, buf, sizeof(buf), 0) == 0);
		T_EQ_INT(msg_recv(rx, &m, 0), 1);
		T_EQ_INT(m.m_type, MSG_PLUSMARK);
		memset(got, 0, sizeof(got));
		T_EQ_INT(msg_plusmark_decode(&m, got), set);
		T_CHECK(memcmp(got, pk, PUBKEY_LEN) == 0);
		msg_free(&m);
	}
	chan_close(tx);
	chan_close(rx);
}

static void
test_git_data_codec_round_trips(void)
{
	uint8_t		    owner[PUBKEY_LEN], buf[MSG_GIT_DATA_MAX];
	char		    longest[MSG_GIT_DATA_D_MAX + 2];
	const char	   *ds[] = { "x", "my-repo.v2", longest };
	struct msg_git_data mg;
	struct msg	    m;
	char		    err[160];
	size_t		    i;
	int		    tx, rx, n;

	memset(longest, 'd', MSG_GIT_DATA_D_MAX);
	longest[MSG_GIT_DATA_D_MAX] = '\0';
	T_ASSERT(pair_open(&tx, &rx) == 0);
	for (i = 0; i < sizeof(ds) / sizeof(ds[0]); i++) {
		memset(owner, 0x30 + (int)i, sizeof(owner));
		owner[0] = 0x00; /* a key may hold zero bytes */
		n = msg_git_data_encode(buf, owner, ds[i]);
		T_EQ_INT(n, 33 + (int)strlen(ds[i]));
		T_ASSERT(msg_send(tx, MSG_GIT_DATA, buf, (size_t)n, 0) == 0);
		T_EQ_INT(msg_recv(rx, &m, 0), 1);
		T_EQ_INT(m.m_type, MSG_GIT_DATA);
		memset(&mg, 0xff, sizeof(mg));
		err[0] = '\0';
		T_EQ_INT(msg_git_data_decode(&m, &mg, err, sizeof(err)), 0);
		T_EQ_STR(err, "");
		T_CHECK(memcmp(mg.mg_owner, owner, PUBKEY_LEN) == 0);
		T_EQ_STR(mg.mg_d, ds[i]);
		msg_free(&m);
	}
	chan_close(tx);
	chan_close(rx);
	/* What cannot be encoded is not: empty, one byte too long. */
	T_EQ_INT(msg_git_data_encode(buf, owner, ""), -1);
	longest[MSG_GIT_DATA_D_MAX] = 'd';
	longest[MSG_GIT_DATA_D_MAX + 1] = '\0';
	T_EQ_INT(msg_git_data_encode(buf, owner, longest), -1);
}

/* 1 if a GIT_DATA payload of len bytes is refused with why in err. */
static int
git_data_refused(enum msg_type type, const uint8_t *p, size_t len,
    const char *why)
{
	struct msg_git_data mg;
	struct msg	    m;
	char		    err[160] = "";
	int		    r;

	memset(&m, 0, sizeof(m));
	m.m_type = type;
	m.m_data = p;
	m.m_len = len;
	r = msg_git_data_decode(&m, &mg, err, sizeof(err));
	if (r != -1 || strstr(err, why) == NULL)
		printf("# %zu bytes: %d, \"%s\" (wanted \"%s\")\n", len, r, err,
		    why);
	return r == -1 && strstr(err, why) != NULL;
}

/* A control socket's client may send anything: every length is checked,
 * and a refusal is an answer, not an exit (this process goes on). */
static void
test_bad_git_data_payload_is_refused(void)
{
	uint8_t		    owner[PUBKEY_LEN], good[MSG_GIT_DATA_MAX];
	uint8_t		    raw[MSG_GIT_DATA_MAX + 8];
	struct msg_git_data mg;
	struct msg	    m;
	char		    err[160];
	int		    n;

	memset(owner, 0x42, sizeof(owner));
	T_ASSERT((n = msg_git_data_encode(good, owner, "repo")) == 37);
	T_CHECK(git_data_refused(MSG_GIT_DATA, good, 0, "0 bytes, shorter"));
	T_CHECK(git_data_refused(MSG_GIT_DATA, good, 32,
	    "32 bytes, "
	    "shorter"));
	T_CHECK(git_data_refused(MSG_GIT_DATA, good, 36,
	    "36 bytes, "
	    "expected 37"));
	memcpy(raw, good, 37);
	raw[37] = 'x';
	T_CHECK(git_data_refused(MSG_GIT_DATA, raw, 38,
	    "38 bytes, "
	    "expected 37"));
	T_CHECK(git_data_refused(MSG_PLUSMARK, good, 37, "type PLUSMARK"));
	T_CHECK(git_data_refused(MSG_CONTROL, good, 37, "type CONTROL"));
	/* d with a NUL, empty, too long. */
	memcpy(raw, good, 37);
	raw[34] = '\0';
	T_CHECK(git_data_refused(MSG_GIT_DATA, raw, 37, "NUL"));
	raw[PUBKEY_LEN] = 0;
	T_CHECK(git_data_refused(MSG_GIT_DATA, raw, 33, "length 0"));
	memset(raw + 33, 'd', sizeof(raw) - 33);
	raw[PUBKEY_LEN] = MSG_GIT_DATA_D_MAX + 1;
	T_CHECK(git_data_refused(MSG_GIT_DATA, raw, 33 + MSG_GIT_DATA_D_MAX + 1,
	    "length 252"));
	raw[PUBKEY_LEN] = 0xff;
	T_CHECK(git_data_refused(MSG_GIT_DATA, raw, 33 + 0xff, "length 255"));
	/* The longest d passes at its exact length only. */
	raw[PUBKEY_LEN] = MSG_GIT_DATA_D_MAX;
	T_CHECK(git_data_refused(MSG_GIT_DATA, raw, MSG_GIT_DATA_MAX + 1,
	    "expected 284"));
	memset(&m, 0, sizeof(m));
	m.m_type = MSG_GIT_DATA;
	m.m_data = raw;
	m.m_len = MSG_GIT_DATA_MAX;
	T_EQ_INT(msg_git_data_decode(&m, &mg, err, sizeof(err)), 0);
	T_EQ_INT((int)strlen(mg.mg_d), MSG_GIT_DATA_D_MAX);
}

int
main(int argc, char *argv[])
{
	int rc;

	log_init("msg_test", 1);
	if (argc == 4 && strcmp(argv[1], "child") == 0)
		return child_broken(argv[2], argv[3]);
	if (tdir_make(tmpdir, sizeof(tmpdir), "msg_test") == -1)
		return 2;

	T_RUN(test_every_type_round_trips);
	T_RUN(test_largest_payload_passes_and_larger_is_refused);
	T_RUN(test_type_names_cover_the_list);
	T_RUN(test_role_names_round_trip);
	T_RUN(test_endpoints);
	T_RUN(test_ingest_codec_round_trips);
	T_RUN(test_short_message_ends_the_receiver);
	T_RUN(test_bad_magic_ends_the_receiver);
	T_RUN(test_bad_version_ends_the_receiver);
	T_RUN(test_unknown_type_ends_the_receiver);
	T_RUN(test_length_mismatch_ends_the_receiver);
	T_RUN(test_bad_ingest_payload_ends_the_receiver);
	T_RUN(test_accepted_count_takes_whole_notices_only);
	T_RUN(test_plusmark_codec_round_trips);
	T_RUN(test_bad_plusmark_payload_ends_the_receiver);
	T_RUN(test_git_data_codec_round_trips);
	T_RUN(test_bad_git_data_payload_is_refused);

	rc = t_done();
	tdir_remove(tmpdir);
	return rc;
}
