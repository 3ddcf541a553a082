/*
 * relay_git_body.c: the body of a git request (relay_git.c, relay_git.h):
 * read from the socket by relayd itself after its first bytes (lws 4.1
 * takes a body without a length as 100 MiB long), de-chunked (RFC 9112
 * 7.1) and inflated when gzip, bounded, and fed to git's stdin; a push's
 * commands are decided on as soon as they are in.  A body that ends early
 * is counted by cause and answered.
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

/* Request bytes after de-chunking and inflating. */
static void
feed(struct relay_gitreq *gr, const void *data, size_t n)
{
	if (gr->gr_discard)
		return;
	gr->gr_inbytes += n;
	if (gr->gr_inbytes > RELAY_GIT_MAX_REQUEST) {
		relay_git_early_end(gr, GIT_EARLY_REQUEST,
		    "the body passed %llu bytes",
		    (unsigned long long)RELAY_GIT_MAX_REQUEST);
		if (gr->gr_svc == SVC_RECEIVE && !gr->gr_hdr_sent)
			relay_git_refuse_push(gr, "request too large",
			    "the request body is larger than this server "
			    "takes");
		else
			relay_git_finish_error(gr,
			    HTTP_STATUS_REQ_ENTITY_TOO_LARGE,
			    "request too large\n");
		return;
	}
	/* A push stops at its byte limit, before git gets the byte past
	 * it. */
	if (gr->gr_decided &&
	    (gr->gr_inbytes > gr->gr_quota ||
		(gr->gr_inflight && relay_git_over_shared(gr)))) {
		gr->gr_over = 1;
		relay_git_refuse_over(gr);
		return;
	}
	buf_add(&gr->gr_in, data, n);
	if (gr->gr_svc == SVC_RECEIVE && !gr->gr_decided)
		relay_git_decide_push(gr);
	relay_git_pump_in(gr);
}

/* Inflates gzip request bytes into feed(). */
static int
inflate_feed(struct relay_gitreq *gr, const void *data, size_t n)
{
	unsigned char out[GIT_IO_CHUNK];
	int	      rc;

	if (!gr->gr_zinit) {
		memset(&gr->gr_z, 0, sizeof(gr->gr_z));
		if (inflateInit2(&gr->gr_z, 16 + MAX_WBITS) != Z_OK)
			return -1;
		gr->gr_zinit = 1;
	}
	gr->gr_z.next_in = (unsigned char *)(uintptr_t)data;
	gr->gr_z.avail_in = (unsigned)n;
	do {
		gr->gr_z.next_out = out;
		gr->gr_z.avail_out = sizeof(out);
		rc = inflate(&gr->gr_z, Z_NO_FLUSH);
		if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
			return -1;
		if (rc == Z_STREAM_END)
			gr->gr_zend = 1;
		feed(gr, out, sizeof(out) - gr->gr_z.avail_out);
		if (gr->gr_done)
			return 0;
	} while (gr->gr_z.avail_out == 0 ||
	    (gr->gr_z.avail_in > 0 && rc != Z_STREAM_END));
	return 0;
}

static int
decoded(struct relay_gitreq *gr, const void *data, size_t n)
{
	if (n == 0 || gr->gr_discard)
		return 0;
	if (gr->gr_gzip)
		return inflate_feed(gr, data, n);
	feed(gr, data, n);
	return 0;
}

/*
 * Removes the chunked framing, handing the data on.  1 when the last
 * chunk and its trailers were seen, 0 for more, -1 if malformed.
 */
static int
dechunk(struct relay_gitreq *gr, const unsigned char *p, size_t n)
{
	struct dechunk *dc = &gr->gr_dc;
	size_t		i = 0, take;
	int		v;

	while (i < n) {
		switch (dc->dc_state) {
		case DC_SIZE:
			if ((v = pkt_hexval(p[i])) >= 0) {
				if (++dc->dc_digits > 15)
					return -1;
				dc->dc_left = dc->dc_left * 16 + (uint64_t)v;
			} else if (dc->dc_digits == 0)
				return -1;
			else if (p[i] == '\r')
				dc->dc_state = DC_SIZE_LF;
			else if (p[i] == ';' || p[i] == ' ' || p[i] == '\t')
				dc->dc_state = DC_EXT;
			else
				return -1;
			i++;
			break;
		case DC_EXT:
			if (p[i++] == '\r')
				dc->dc_state = DC_SIZE_LF;
			break;
		case DC_SIZE_LF:
			if (p[i++] != '\n')
				return -1;
			dc->dc_digits = 0;
			if (dc->dc_left == 0) {
				dc->dc_state = DC_TRAILER;
				dc->dc_linelen = 0;
			} else
				dc->dc_state = DC_DATA;
			break;
		case DC_DATA:
			take = n - i;
			if (take > dc->dc_left)
				take = (size_t)dc->dc_left;
			if (decoded(gr, p + i, take) == -1)
				return -1;
			i += take;
			dc->dc_left -= take;
			if (dc->dc_left == 0)
				dc->dc_state = DC_DATA_CR;
			break;
		case DC_DATA_CR:
			if (p[i++] != '\r')
				return -1;
			dc->dc_state = DC_DATA_LF;
			break;
		case DC_DATA_LF:
			if (p[i++] != '\n')
				return -1;
			dc->dc_state = DC_SIZE;
			break;
		case DC_TRAILER:
			if (p[i] == '\r') {
				dc->dc_state = DC_TRAILER_LF;
			} else
				dc->dc_linelen++;
			i++;
			break;
		case DC_TRAILER_LF:
			if (p[i++] != '\n')
				return -1;
			if (dc->dc_linelen == 0) {
				dc->dc_state = DC_DONE;
				return 1;
			}
			dc->dc_linelen = 0;
			dc->dc_state = DC_TRAILER;
			break;
		case DC_DONE:
			return 1;
		}
	}
	return dc->dc_state == DC_DONE;
}

/* The whole request body is in. */
void
relay_git_body_end(struct relay_gitreq *gr)
{
	if (gr->gr_in_done)
		return;
	gr->gr_in_done = 1;
	lws_sul_cancel(&gr->gr_drain_sul);
	if (gr->gr_gzip && !gr->gr_zend && !gr->gr_discard) {
		/* git would take the inflated part as the whole. */
		relay_git_early_end(gr, GIT_EARLY_MALFORMED,
		    "the gzip stream did not end");
		if (gr->gr_svc == SVC_RECEIVE && !gr->gr_hdr_sent)
			relay_git_refuse_push(gr, "error",
			    "the request body's gzip stream is incomplete");
		else
			relay_git_finish_error(gr, HTTP_STATUS_BAD_REQUEST,
			    "malformed request body\n");
	}
	if (gr->gr_zinit && !gr->gr_done) {
		inflateEnd(&gr->gr_z);
		gr->gr_zinit = 0;
	}
	if (gr->gr_svc == SVC_RECEIVE && !gr->gr_decided && !gr->gr_done)
		relay_git_decide_push(gr);
	if (gr->gr_discard) {
		/* A refusal (or git's own answer), now that the body is
		 * read. */
		relay_git_want_write(gr);
		return;
	}
	relay_git_pump_in(gr);
}

/*
 * Body bytes as the client sent them (chunked framing, gzip), from lws or
 * from the socket: decodes them on toward git, or counts them while a
 * refusal drains the rest.  Ends the body at its last byte.
 */
void
relay_git_body_raw(struct relay_gitreq *gr, const unsigned char *p, size_t n)
{
	int r;

	if (gr->gr_in_done || n == 0)
		return;
	gr->gr_raw += n;
	if (gr->gr_discard) {
		gr->gr_drained += n;
		if (gr->gr_drained > RELAY_GIT_DRAIN_BYTES &&
		    !gr->gr_drain_over) {
			log_info(
			    "git %s for %s: stopped reading the rest of a refused body after %llu bytes",
			    svc_name[gr->gr_svc], gr->gr_d,
			    (unsigned long long)gr->gr_drained);
			gr->gr_drain_over = 1;
			relay_git_want_write(gr);
		}
	}
	if (gr->gr_chunked) {
		if ((r = dechunk(gr, p, n)) == -1) {
			relay_git_early_end(gr, GIT_EARLY_MALFORMED,
			    "malformed chunked framing");
			/* Its end cannot be found: answer now. */
			gr->gr_drain_over = 1;
			relay_git_finish_error(gr, HTTP_STATUS_BAD_REQUEST,
			    "malformed request body\n");
			return;
		}
		if (r == 1)
			relay_git_body_end(gr);
		return;
	}
	if (decoded(gr, p, n) == -1) {
		relay_git_early_end(gr, GIT_EARLY_MALFORMED,
		    "malformed gzip data");
		relay_git_finish_error(gr, HTTP_STATUS_BAD_REQUEST,
		    "malformed request body\n");
	}
	if (gr->gr_has_clen && gr->gr_raw >= gr->gr_clen)
		relay_git_body_end(gr);
}

/* Drops lws's body timeout, set after each body callback it makes. */
static void
untimeout(lws_sorted_usec_list_t *sul)
{
	struct relay_gitreq *gr =
	    lws_container_of(sul, struct relay_gitreq, gr_to_sul);

	if (gr->gr_wsi != NULL)
		lws_set_timeout(gr->gr_wsi, NO_PENDING_TIMEOUT, 0);
}

/*
 * Reads the rest of the body from the socket ourselves, lws reading no
 * more of it.  lws 4.1 takes a POST without a Content-Length (git's
 * chunked pushes) as 100 MiB long and silently drops what follows; and it
 * times a body out after timeout_secs without a read, which a paused read
 * (git busy) can pass.  lws hands each read on whole in LRS_BODY, so the
 * socket holds exactly the rest.
 */
static void
take_body(struct relay_gitreq *gr, struct lws *wsi)
{
	int fd;

	/* Not once an answer is under way: lws may be asked to write, which
	 * it does not do while its reading is paused.  It drains the rest
	 * itself (a chunked body past its 100 MiB: until the bounds). */
	if (gr->gr_psock != NULL || gr->gr_in_done || gr->gr_drain_over ||
	    gr->gr_discard || gr->gr_done)
		return;
	if ((fd = fcntl(lws_get_socket_fd(wsi), F_DUPFD_CLOEXEC, 0)) == -1) {
		log_warn("git request for %s: dup", gr->gr_d);
		return;
	}
	if ((gr->gr_psock = relay_git_adopt_pipe(gr, fd, GP_SOCK)) == NULL) {
		log_warnx("git request for %s: cannot watch its socket",
		    gr->gr_d);
		return;
	}
	gr->gr_taken = 1;
	lws_rx_flow_control(wsi, 0);
	if (gr->gr_rx_paused)
		lws_rx_flow_control(gr->gr_psock->gp_wsi, 0);
	lws_sul_schedule(relayd->ctx, 0, &gr->gr_to_sul, untimeout, 1);
}

int
relay_git_body(struct relay_conn *c, struct lws *wsi, const void *in,
    size_t len)
{
	struct relay_gitreq *gr = c->rc_git;

	if (gr == NULL)
		return -1;
	if (gr->gr_given_back)
		return 0; /* past the body, or past caring */
	if (gr->gr_taken) {
		/* lws read past take_body(): the order is lost. */
		log_warnx(
		    "git request for %s: body bytes from lws after the socket was taken",
		    gr->gr_d);
		return -1;
	}
	relay_git_body_raw(gr, in, len);
	take_body(gr, wsi);
	return 0;
}

int
relay_git_body_done(struct relay_conn *c, struct lws *wsi)
{
	struct relay_gitreq *gr = c->rc_git;

	(void)wsi;
	if (gr == NULL)
		return -1;
	if (gr->gr_in_done || gr->gr_taken || gr->gr_done)
		return 0;
	if (gr->gr_chunked || (gr->gr_has_clen && gr->gr_raw < gr->gr_clen)) {
		/* lws ends a body it drops the rest of: say so. */
		relay_git_early_end(gr, GIT_EARLY_CUT,
		    "the HTTP layer ended the body early");
		gr->gr_drain_over = 1;
		if (gr->gr_svc == SVC_RECEIVE && !gr->gr_hdr_sent)
			relay_git_refuse_push(gr, "error",
			    "the request body was cut short; try again");
		else
			relay_git_finish_error(gr, HTTP_STATUS_BAD_REQUEST,
			    "the request body was cut short\n");
		return 0;
	}
	relay_git_body_end(gr);
	return 0;
}
