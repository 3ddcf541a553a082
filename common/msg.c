/*
 * msg.c: nanomsg channels and the message framing shared by every graspd
 * process (see msg.h).
 */
#include <errno.h>
#include <nanomsg/nn.h>
#include <nanomsg/pipeline.h>
#include <nanomsg/pubsub.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "msg.h"

const char *
msg_type_name(unsigned type)
{
	switch (type) {
#define MSG_NAME(name, value) \
	case value: \
		return #name;
		MSG_TYPE_LIST(MSG_NAME)
#undef MSG_NAME
	default:
		return "UNKNOWN";
	}
}

static int
msg_type_known(unsigned type)
{
	switch (type) {
#define MSG_CASE(name, value) case value:
		MSG_TYPE_LIST(MSG_CASE)
#undef MSG_CASE
		return 1;
	default:
		return 0;
	}
}

static const char *const role_names[] = {
#define ROLE_STR(name, value, str) [value] = str,
	ROLE_LIST(ROLE_STR)
#undef ROLE_STR
};

const char *
role_name(unsigned role)
{
	if (role >= ROLE_COUNT)
		return "unknown";
	return role_names[role];
}

int
role_from_name(const char *s)
{
	unsigned i;

	for (i = 0; i < ROLE_COUNT; i++)
		if (strcmp(role_names[i], s) == 0)
			return (int)i;
	return -1;
}

int
chan_endpoint(const char *run_path, const char *name, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "ipc://%s/%s.ipc", run_path, name);

	return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}

int
chan_control_endpoint(const char *run_path, enum role r, char *out,
    size_t outlen)
{
	char name[64];

	snprintf(name, sizeof(name), "control-%s", role_name(r));
	return chan_endpoint(run_path, name, out, outlen);
}

int
chan_open(int proto, const char *endpoint, int bind)
{
	int s, maxsz = (int)(MSG_MAX_PAYLOAD + sizeof(struct msg_hdr));
	int bufsz = CHAN_PIPE_BUFFER;
	int saved;

	if ((s = nn_socket(AF_SP, proto)) < 0)
		return -1;
	if (nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVMAXSIZE, &maxsz,
		sizeof(maxsz)) < 0)
		goto fail;
	if (proto == NN_SUB &&
	    nn_setsockopt(s, NN_SUB, NN_SUB_SUBSCRIBE, "", 0) < 0)
		goto fail;
	/* Room for a burst of fetched events between two roles. */
	if ((proto == NN_PUSH &&
		nn_setsockopt(s, NN_SOL_SOCKET, NN_SNDBUF, &bufsz,
		    sizeof(bufsz)) < 0) ||
	    (proto == NN_PULL &&
		nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVBUF, &bufsz,
		    sizeof(bufsz)) < 0))
		goto fail;
	if (bind) {
		/* A stale socket file from a killed process blocks bind. */
		if (strncmp(endpoint, "ipc://", 6) == 0)
			unlink(endpoint + 6);
		if (nn_bind(s, endpoint) < 0)
			goto fail;
	} else if (nn_connect(s, endpoint) < 0)
		goto fail;
	return s;
fail:
	saved = errno;
	nn_close(s);
	errno = saved;
	return -1;
}

int
chan_rcvfd(int sock)
{
	int    fd;
	size_t sz = sizeof(fd);

	if (nn_getsockopt(sock, NN_SOL_SOCKET, NN_RCVFD, &fd, &sz) < 0)
		return -1;
	return fd;
}

void
chan_close(int sock)
{
	if (sock >= 0)
		nn_close(sock);
}

int
msg_send(int sock, enum msg_type type, const void *payload, size_t len,
    int flags)
{
	struct msg_hdr *h;
	void	       *nb;

	if (len > MSG_MAX_PAYLOAD) {
		errno = EMSGSIZE;
		return -1;
	}
	if ((nb = nn_allocmsg(sizeof(*h) + len, 0)) == NULL)
		fatal("nn_allocmsg");
	h = nb;
	h->mh_magic = MSG_MAGIC;
	h->mh_version = MSG_VERSION;
	h->mh_type = (uint16_t)type;
	h->mh_len = (uint32_t)len;
	h->mh_pid = (uint32_t)getpid();
	if (len)
		memcpy((char *)nb + sizeof(*h), payload, len);
	/* With NN_MSG nanomsg takes the buffer on success only. */
	if (nn_send(sock, &nb, NN_MSG, flags) < 0) {
		int saved = errno;

		nn_freemsg(nb);
		errno = saved;
		return -1;
	}
	return 0;
}

int
msg_check(const void *buf, size_t n, struct msg *m, char *err, size_t errlen)
{
	struct msg_hdr h;

	memset(m, 0, sizeof(*m));
	if (n < sizeof(h)) {
		snprintf(err, errlen,
		    "malformed message: %zu bytes, shorter than a header", n);
		return -1;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.mh_magic != MSG_MAGIC) {
		snprintf(err, errlen, "malformed message: bad magic 0x%08x",
		    h.mh_magic);
		return -1;
	}
	if (h.mh_version != MSG_VERSION) {
		snprintf(err, errlen,
		    "malformed message: version %u, expected %u", h.mh_version,
		    MSG_VERSION);
		return -1;
	}
	if (!msg_type_known(h.mh_type)) {
		snprintf(err, errlen, "malformed message: unknown type %u",
		    h.mh_type);
		return -1;
	}
	if (h.mh_len != n - sizeof(h) || h.mh_len > MSG_MAX_PAYLOAD) {
		snprintf(err, errlen,
		    "malformed %s message: length %u, %zu bytes follow",
		    msg_type_name(h.mh_type), h.mh_len, n - sizeof(h));
		return -1;
	}
	m->m_type = h.mh_type;
	m->m_pid = h.mh_pid;
	m->m_data = (const uint8_t *)buf + sizeof(h);
	m->m_len = h.mh_len;
	return 0;
}

int
msg_recv_client(int sock, struct msg *m, int flags, char *err, size_t errlen)
{
	void *nb = NULL;
	int   n;

	memset(m, 0, sizeof(*m));
	if ((n = nn_recv(sock, &nb, NN_MSG, flags)) < 0) {
		if (errno == EAGAIN)
			return 0;
		return -1;
	}
	if (msg_check(nb, (size_t)n, m, err, errlen) == -1) {
		nn_freemsg(nb);
		memset(m, 0, sizeof(*m));
		return MSG_RECV_MALFORMED;
	}
	m->m_nn = nb;
	return 1;
}

int
msg_recv(int sock, struct msg *m, int flags)
{
	char err[160];
	int  r;

	if ((r = msg_recv_client(sock, m, flags, err, sizeof(err))) ==
	    MSG_RECV_MALFORMED)
		fatalx("%s", err);
	return r;
}

void
msg_free(struct msg *m)
{
	if (m->m_nn)
		nn_freemsg(m->m_nn);
	memset(m, 0, sizeof(*m));
}

size_t
msg_accepted_count(const struct msg *m)
{
	size_t n = m->m_len / sizeof(struct msg_accepted);

	if (m->m_type != MSG_ACCEPTED || n == 0 || n > MSG_ACCEPTED_MAX ||
	    m->m_len % sizeof(struct msg_accepted) != 0)
		return 0;
	return n;
}

void
msg_ingest_encode(struct buf *b, enum role origin, const char *url,
    const char *json, size_t jsonlen)
{
	size_t	 ulen = url ? strlen(url) : 0;
	uint16_t u16;

	if (ulen > UINT16_MAX)
		ulen = UINT16_MAX;
	u16 = (uint16_t)ulen;
	buf_addc(b, (char)origin);
	buf_add(b, &u16, sizeof(u16));
	buf_add(b, url ? url : "", ulen);
	buf_add(b, json, jsonlen);
}

void
msg_ingest_decode(const struct msg *m, struct msg_ingest *mi)
{
	uint16_t u16;

	if (m->m_type != MSG_INGEST || m->m_len < 3)
		fatalx("malformed INGEST message: %zu bytes", m->m_len);
	if (m->m_data[0] >= ROLE_COUNT)
		fatalx("malformed INGEST message: origin %u", m->m_data[0]);
	memcpy(&u16, m->m_data + 1, sizeof(u16));
	if ((size_t)u16 + 3 > m->m_len)
		fatalx("malformed INGEST message: url length %u of %zu", u16,
		    m->m_len);
	mi->mi_origin = m->m_data[0];
	mi->mi_url = (const char *)m->m_data + 3;
	mi->mi_urllen = u16;
	mi->mi_json = mi->mi_url + u16;
	mi->mi_jsonlen = m->m_len - 3 - u16;
}

void
msg_plusmark_encode(uint8_t out[MSG_PLUSMARK_LEN],
    const uint8_t pubkey[PUBKEY_LEN], int set)
{
	memcpy(out, pubkey, PUBKEY_LEN);
	out[PUBKEY_LEN] = set ? 1 : 0;
}

int
msg_plusmark_decode(const struct msg *m, uint8_t pubkey[PUBKEY_LEN])
{
	if (m->m_type != MSG_PLUSMARK || m->m_len != MSG_PLUSMARK_LEN)
		fatalx("malformed PLUSMARK message: %zu bytes, expected %u",
		    m->m_len, MSG_PLUSMARK_LEN);
	if (m->m_data[PUBKEY_LEN] > 1)
		fatalx("malformed PLUSMARK message: mark %u",
		    m->m_data[PUBKEY_LEN]);
	memcpy(pubkey, m->m_data, PUBKEY_LEN);
	return m->m_data[PUBKEY_LEN];
}

int
msg_git_data_encode(uint8_t out[MSG_GIT_DATA_MAX],
    const uint8_t owner[PUBKEY_LEN], const char *d)
{
	size_t n = strlen(d);

	if (n == 0 || n > MSG_GIT_DATA_D_MAX) {
		errno = EINVAL;
		return -1;
	}
	memcpy(out, owner, PUBKEY_LEN);
	out[PUBKEY_LEN] = (uint8_t)n;
	memcpy(out + MSG_GIT_DATA_HEAD, d, n);
	return (int)(MSG_GIT_DATA_HEAD + n);
}

int
msg_git_data_decode(const struct msg *m, struct msg_git_data *mg, char *err,
    size_t errlen)
{
	size_t n;

	if (m->m_type != MSG_GIT_DATA) {
		snprintf(err, errlen, "malformed GIT_DATA message: type %s",
		    msg_type_name(m->m_type));
		return -1;
	}
	if (m->m_len < MSG_GIT_DATA_HEAD) {
		snprintf(err, errlen,
		    "malformed GIT_DATA message: %zu bytes, shorter than an owner and a length",
		    m->m_len);
		return -1;
	}
	n = m->m_data[PUBKEY_LEN];
	if (n == 0 || n > MSG_GIT_DATA_D_MAX) {
		snprintf(err, errlen,
		    "malformed GIT_DATA message: identifier length %zu, not 1 to %d",
		    n, MSG_GIT_DATA_D_MAX);
		return -1;
	}
	if (m->m_len != MSG_GIT_DATA_HEAD + n) {
		snprintf(err, errlen,
		    "malformed GIT_DATA message: %zu bytes, expected %zu",
		    m->m_len, MSG_GIT_DATA_HEAD + n);
		return -1;
	}
	if (memchr(m->m_data + MSG_GIT_DATA_HEAD, '\0', n) != NULL) {
		snprintf(err, errlen,
		    "malformed GIT_DATA message: NUL in the identifier");
		return -1;
	}
	memcpy(mg->mg_owner, m->m_data, PUBKEY_LEN);
	memcpy(mg->mg_d, m->m_data + MSG_GIT_DATA_HEAD, n);
	mg->mg_d[n] = '\0';
	return 0;
}
