/*
 * gctl_jsonl.c: graspctl export and import (graspctl(8)), events as JSON
 * lines, like strfry's export and import.
 *
 * export reads the store through a read-only connection inside one read
 * transaction, so that a running relayd goes on writing and the output
 * is one snapshot; it streams the rows, the purgatory's too, in an order
 * import can take (export_sql[]).  import is a websocket client of
 * relayd on its import socket in the run directory: every line is sent
 * as an EVENT, with a window of events in flight, so that it passes
 * relayd's whole pipeline (id, signature, write policy, purgatory) like
 * any client's, except that the socket marks it as the operator's, who
 * may import NIP-70 protected events.  The events refused only because
 * what they need has not come yet (waiting[]) go again after the file,
 * in passes, so that an export in any order (strfry's, ngit-grasp's)
 * comes across whole; relayd's OK answers are counted by their NIP-01
 * prefix.  Runs in graspctl only.
 */
#define _GNU_SOURCE /* struct ucred */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "config.h"
#include "event.h"
#include "filter.h"
#include "graspctl.h"
#include "json.h"
#include "log.h"
#include "msg.h"
#include "store.h"
#include "wsclient.h"

/* Ours: EVENTs import keeps unanswered (relayd answers in batches). */
#define IMPORT_WINDOW	      64
/* Ours: how long relayd may take to answer one EVENT. */
#define IMPORT_ANSWER_MS      30000
/* Ours: how long import waits to connect to relayd. */
#define IMPORT_CONNECT_MS     5000
/* Ours: pause after a "rate-limited:" answer before sending again. */
#define IMPORT_BACKOFF_MS     1000
/* Ours: how often the progress line on a terminal is redrawn. */
#define IMPORT_PROGRESS_MS    500
/* Ours: distinct refusal prefixes counted (the rest as "other"). */
#define IMPORT_REASONS	      16
/*
 * Ours: the most bytes of refused events kept to send again after the
 * file.  An event may need one that comes later in the file (a state its
 * announcement, a reply its root), or one that relayd takes out of
 * purgatory only when a later event (a state, after the git data)
 * releases it.  Passes go on while one gets some accepted.
 */
#define IMPORT_LATER_BYTES    (256u * 1024 * 1024)
/* Ours: pause before each later round, for releases to land. */
#define IMPORT_ROUND_PAUSE_MS 500

/* Ours: most directory levels of the git tree import looks through. */
#define IMPORT_TREE_DEPTH 32

/*
 * The refusals that mean "not yet": what the event needs has not
 * arrived.  Each is relayd's text (common/policy.c), and the name the
 * summary counts it under when it is still refused after the passes.
 */
static const struct waiting {
	const char *wt_text;
	const char *wt_name;
} waiting[] = {
	/* A state or maintainer's event before its announcement. */
	{ "no announcement exists for this repository",
	    "no announcement exists for this repository" },
	/* A maintainer listed by an announcement not yet in. */
	{ "author not authorized for this repository",
	    "author not authorized for this repository" },
	/* The related-event rule: a thread before its root. */
	{ "must reference an accepted repository or accepted event",
	    "references no accepted repository or event" },
	/* GRASP-03 identity: its author's thread or repository not yet in. */
	{ "accepted only from owners and maintainers of hosted",
	    "its author has no repository or thread here yet" },
	/* Its repository is held until a state brings its git data. */
	{ "is announced but its git data has not been pushed yet",
	    "its repository waits for its git data" },
};
#define NWAITING (sizeof(waiting) / sizeof(waiting[0]))

/* The entry of waiting[] msg is, or NULL. */
static const struct waiting *
waiting_for(const char *msg)
{
	size_t i;

	for (i = 0; i < NWAITING; i++)
		if (strstr(msg, waiting[i].wt_text) != NULL)
			return &waiting[i];
	return NULL;
}

/* A refused event kept for a later pass, with relayd's answer. */
struct later {
	char  *lt_line;
	size_t lt_len;
	char  *lt_msg;
};

struct export
{
	const struct filter *ex_f;   /* NULL: every event */
	int64_t		     ex_seq; /* last seq read */
	int64_t		     ex_n;   /* written */
	int		     ex_error;
};

static int
export_row(const char *json, size_t len, int64_t seq, void *arg)
{
	struct export *ex = arg;
	struct event  *ev;
	char	       err[256];
	int	       match = 1;

	ex->ex_seq = seq;
	if (ex->ex_f != NULL) {
		if ((ev = event_parse(json, len, err, sizeof(err))) == NULL) {
			fprintf(stderr,
			    "graspctl: stored event %" PRId64
			    " does not parse: %s\n",
			    seq, err);
			ex->ex_error = 1;
			return 1;
		}
		match = filter_match(ex->ex_f, ev);
		event_destroy(ev);
	}
	if (!match)
		return 0;
	if (fwrite(json, 1, len, stdout) != len || putchar('\n') == EOF) {
		fprintf(stderr, "graspctl: export: %s\n", strerror(errno));
		ex->ex_error = 1;
		return 1;
	}
	ex->ex_n++;
	return 0;
}

/*
 * The passes of export, in an order import can take: an announcement
 * before the states and threads that name its repository, each pass by
 * created_at, so that a replaceable event's newer version comes after
 * the older one and a deletion after the address versions it covers.
 * The stored events of a pass come first, then the purgatory's (events
 * held until their git data arrives), which import puts back into
 * purgatory.  A repository whose owner deleted it (soft_expired) is not
 * exported from purgatory.
 */
static const char *const export_sql[] = {
	"SELECT seq, json FROM events WHERE kind = 30617 "
	"ORDER BY created_at, seq",
	"SELECT 0, json FROM purgatory_announcements WHERE soft_expired = 0 "
	"ORDER BY created_at",
	"SELECT seq, json FROM events WHERE kind = 30618 "
	"ORDER BY created_at, seq",
	"SELECT 0, json FROM purgatory_events WHERE kind = 30618 "
	"ORDER BY created_at",
	"SELECT seq, json FROM events WHERE kind NOT IN (30617, 30618) "
	"ORDER BY created_at, seq",
	"SELECT 0, json FROM purgatory_events WHERE kind <> 30618 "
	"ORDER BY created_at",
};

/* Runs one of export_sql on db through export_row.  0 or -1. */
static int
export_pass(sqlite3 *db, const char *sql, struct export *ex)
{
	sqlite3_stmt *st = NULL;
	int	      rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "graspctl: export: %s\n", sqlite3_errmsg(db));
		ex->ex_error = 1;
		return -1;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (export_row((const char *)sqlite3_column_text(st, 1),
			(size_t)sqlite3_column_bytes(st, 1),
			sqlite3_column_int64(st, 0), ex) != 0)
			break;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		fprintf(stderr, "graspctl: export: %s\n", sqlite3_errmsg(db));
		ex->ex_error = 1;
	}
	sqlite3_finalize(st);
	return ex->ex_error ? -1 : 0;
}

int
gctl_db_path(const struct gctl_where *w, char *out, size_t len)
{
	struct stat st;

	if ((size_t)snprintf(out, len, "%s/graspd.db",
		w->cw_cfg.relay_data_path) >= len) {
		fprintf(stderr, "graspctl: relay_data_path is too long\n");
		return -1;
	}
	if (stat(out, &st) == 0)
		return 0;
	if (errno == ENOENT)
		fprintf(stderr,
		    "graspctl: no database at %s (%s): name graspd's configuration with -f FILE, or the run directory of the running graspd with -r DIR\n",
		    out, w->cw_from);
	else
		fprintf(stderr, "graspctl: %s: %s (%s)\n", out, strerror(errno),
		    w->cw_from);
	return -1;
}

/* The reason of a failed store_open() of path, path said once. */
static void
open_failed(const char *path, const char *err)
{
	if (strncmp(err, path, strlen(path)) == 0)
		fprintf(stderr, "graspctl: %s\n", err);
	else
		fprintf(stderr, "graspctl: %s: %s\n", path, err);
}

int
gctl_export(const struct gctl_where *w, int argc, char *argv[])
{
	struct export ex = { NULL, 0, 0, 0 };
	struct filter	 f;
	struct json_doc *doc = NULL;
	struct json	*j;
	struct store	*st = NULL;
	const char	*ftext = NULL, *since = NULL;
	char		 path[PATH_MAX], err[512], *end;
	int64_t		 t = 0;
	int		 i, rc = 1, have_f = 0;

	memset(&f, 0, sizeof(f));
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--since") == 0 && i + 1 < argc &&
		    since == NULL)
			since = argv[++i];
		else if (ftext == NULL && argv[i][0] != '-')
			ftext = argv[i];
		else
			return GCTL_USAGE_EXIT;
	}
	if (since != NULL) {
		errno = 0;
		t = strtoll(since, &end, 10);
		if (errno != 0 || end == since || *end != '\0' || t < 0) {
			fprintf(stderr,
			    "graspctl: --since wants unix seconds, not \"%s\"\n",
			    since);
			return GCTL_USAGE_EXIT;
		}
	}
	if (ftext != NULL) {
		if ((j = json_parse(ftext, strlen(ftext), &doc, err,
			 sizeof(err))) == NULL ||
		    j->type != JSON_OBJECT ||
		    filter_parse(j, &f, err, sizeof(err)) == -1) {
			fprintf(stderr, "graspctl: filter: %s\n",
			    j != NULL && j->type != JSON_OBJECT ?
				"not an object" :
				err);
			json_free(doc);
			filter_free(&f);
			return GCTL_USAGE_EXIT;
		}
		json_free(doc);
		have_f = 1;
	}
	if (since != NULL && (!f.f_has_since || f.f_since < t)) {
		f.f_since = t;
		f.f_has_since = 1;
		have_f = 1;
	}
	if (have_f)
		ex.ex_f = &f;
	if (gctl_db_path(w, path, sizeof(path)) == -1)
		goto done;
	if ((st = store_open(path, 1, err, sizeof(err))) == NULL) {
		open_failed(path, err);
		goto done;
	}
	/* One snapshot: relayd's commits after this point are not seen. */
	if (sqlite3_exec(store_sqlite(st), "BEGIN", NULL, NULL, NULL) !=
	    SQLITE_OK) {
		fprintf(stderr, "graspctl: %s: %s\n", path,
		    sqlite3_errmsg(store_sqlite(st)));
		goto done;
	}
	for (i = 0; i < (int)(sizeof(export_sql) / sizeof(export_sql[0])) &&
	     !ex.ex_error;
	     i++)
		export_pass(store_sqlite(st), export_sql[i], &ex);
	sqlite3_exec(store_sqlite(st), "COMMIT", NULL, NULL, NULL);
	if (ex.ex_error || fflush(stdout) == EOF)
		goto done;
	fprintf(stderr, "graspctl: exported %" PRId64 " events\n", ex.ex_n);
	rc = 0;
done:
	store_close(st);
	filter_free(&f);
	return rc;
}

/* One EVENT sent and not yet answered. */
struct inflight {
	char	if_id[EVENT_ID_HEX_LEN + 1]; /* "" when the slot is free */
	char   *if_line;
	size_t	if_len;
	int64_t if_sent; /* ms */
};

struct import {
	struct wsc     *im_ws;
	struct inflight im_win[IMPORT_WINDOW];
	size_t		im_busy;
	/* Lines sent again after "rate-limited:", oldest first. */
	char	       *im_retry[IMPORT_WINDOW];
	size_t		im_retry_len[IMPORT_WINDOW];
	size_t		im_nretry;
	int64_t		im_resume; /* no sending before (ms) */
	struct later   *im_later;  /* waiting[], for the next pass */
	size_t		im_nlater, im_caplater, im_later_bytes;
	int		im_round; /* 0: the file; then 1, 2, ... */
	int64_t		im_lines;
	int64_t		im_accepted;
	int64_t		im_held; /* accepted into purgatory */
	int64_t		im_duplicate;
	int64_t		im_refused;
	int64_t		im_ratelimited;
	char		im_reason[IMPORT_REASONS][32];
	int64_t		im_nreason[IMPORT_REASONS];
	size_t		im_nreasons;
	int64_t		im_nwaiting[NWAITING]; /* still refused at the end */
	int		im_tty;
	int64_t		im_drawn;
};

/* Counts a refusal under the prefix of msg ("blocked:", ...). */
static void
count_refusal(struct import *im, const char *msg)
{
	const struct waiting *w;
	char		      prefix[32];
	size_t		      n, i;

	im->im_refused++;
	if ((w = waiting_for(msg)) != NULL)
		im->im_nwaiting[w - waiting]++;
	n = strcspn(msg, ": ");
	if (msg[n] == ':' && n > 0 && n + 1 < sizeof(prefix))
		snprintf(prefix, sizeof(prefix), "%.*s", (int)n + 1, msg);
	else
		snprintf(prefix, sizeof(prefix), "other");
	for (i = 0; i < im->im_nreasons; i++)
		if (strcmp(im->im_reason[i], prefix) == 0)
			break;
	if (i == im->im_nreasons) {
		if (i == IMPORT_REASONS)
			i = IMPORT_REASONS - 1; /* the last: the rest */
		else
			snprintf(im->im_reason[im->im_nreasons++],
			    sizeof(im->im_reason[0]), "%s", prefix);
	}
	im->im_nreason[i]++;
}

static void
progress(struct import *im, int last)
{
	int64_t now = wsc_now_ms();

	if (!im->im_tty || (!last && now - im->im_drawn < IMPORT_PROGRESS_MS))
		return;
	im->im_drawn = now;
	fprintf(stderr,
	    "\r%" PRId64 " lines: %" PRId64 " accepted, %" PRId64
	    " duplicate, %" PRId64 " refused%s",
	    im->im_lines, im->im_accepted, im->im_duplicate, im->im_refused,
	    last ? "\n" : "");
}

/* Sends one line as an EVENT into a free slot; 0, or -1 if it failed. */
static int
send_line(struct import *im, char *line, size_t len)
{
	struct inflight *s;
	struct json_doc *doc = NULL;
	struct json	*j, *id;
	char		 err[256], *msg;
	size_t		 i;
	int		 rc;

	if ((j = json_parse(line, len, &doc, err, sizeof(err))) == NULL ||
	    j->type != JSON_OBJECT || (id = json_get(j, "id")) == NULL ||
	    id->type != JSON_STRING || id->len != EVENT_ID_HEX_LEN) {
		/* relayd could not name it in an OK: refused here. */
		json_free(doc);
		count_refusal(im, "invalid: not an event with an id");
		free(line);
		return 0;
	}
	for (i = 0; i < IMPORT_WINDOW && im->im_win[i].if_id[0] != '\0'; i++)
		;
	s = &im->im_win[i];
	memcpy(s->if_id, id->s, EVENT_ID_HEX_LEN);
	s->if_id[EVENT_ID_HEX_LEN] = '\0';
	json_free(doc);
	if ((msg = malloc(len + 16)) == NULL)
		fatal("malloc");
	memcpy(msg, "[\"EVENT\",", 9);
	memcpy(msg + 9, line, len);
	msg[9 + len] = ']';
	s->if_line = line;
	s->if_len = len;
	s->if_sent = wsc_now_ms();
	im->im_busy++;
	rc = wsc_send_text(im->im_ws, msg, len + 10);
	free(msg);
	return rc;
}

/* Keeps the line of s, refused with msg, for the next round. */
static void
later_add(struct import *im, struct inflight *s, const char *msg)
{
	struct later *lt;

	if (im->im_nlater == im->im_caplater) {
		im->im_caplater = im->im_caplater ? im->im_caplater * 2 : 64;
		if ((im->im_later = reallocarray(im->im_later, im->im_caplater,
			 sizeof(*im->im_later))) == NULL)
			fatal("reallocarray");
	}
	lt = &im->im_later[im->im_nlater++];
	lt->lt_line = s->if_line;
	lt->lt_len = s->if_len;
	if ((lt->lt_msg = strdup(msg)) == NULL)
		fatal("strdup");
	im->im_later_bytes += s->if_len;
}

/* Takes one relay message; OKs free their slot and are counted. */
static void
take_answer(struct import *im, const char *text, size_t len)
{
	struct json_doc *doc = NULL;
	struct json	*j, *t, *id, *ok, *m;
	struct inflight *s = NULL;
	const char	*msg;
	char		 err[128];
	size_t		 i;

	if ((j = json_parse(text, len, &doc, err, sizeof(err))) == NULL ||
	    j->type != JSON_ARRAY || (t = json_at(j, 0)) == NULL ||
	    t->type != JSON_STRING) {
		json_free(doc);
		return;
	}
	if (strcmp(t->s, "NOTICE") == 0 && (m = json_at(j, 1)) != NULL &&
	    m->type == JSON_STRING)
		fprintf(stderr, "%sgraspctl: relayd: %s\n",
		    im->im_tty ? "\n" : "", m->s);
	if (strcmp(t->s, "OK") != 0 || (id = json_at(j, 1)) == NULL ||
	    id->type != JSON_STRING || (ok = json_at(j, 2)) == NULL ||
	    (ok->type != JSON_TRUE && ok->type != JSON_FALSE)) {
		json_free(doc);
		return;
	}
	m = json_at(j, 3);
	msg = m != NULL && m->type == JSON_STRING ? m->s : "";
	for (i = 0; i < IMPORT_WINDOW && s == NULL; i++)
		if (strcmp(im->im_win[i].if_id, id->s) == 0)
			s = &im->im_win[i];
	if (s == NULL) {
		json_free(doc);
		return;
	}
	if (ok->type == JSON_FALSE && strncmp(msg, "rate-limited:", 13) == 0 &&
	    im->im_nretry < IMPORT_WINDOW) {
		/* Not a refusal of the event: it goes again later. */
		im->im_ratelimited++;
		im->im_retry[im->im_nretry] = s->if_line;
		im->im_retry_len[im->im_nretry++] = s->if_len;
		im->im_resume = wsc_now_ms() + IMPORT_BACKOFF_MS;
		s->if_line = NULL;
	} else if (ok->type == JSON_FALSE && waiting_for(msg) != NULL &&
	    im->im_later_bytes + s->if_len <= IMPORT_LATER_BYTES) {
		later_add(im, s, msg);
		s->if_line = NULL;
	} else if (strncmp(msg, "duplicate:", 10) == 0)
		im->im_duplicate++;
	else if (ok->type == JSON_TRUE) {
		im->im_accepted++;
		if (strncmp(msg, "purgatory:", 10) == 0)
			im->im_held++;
	} else
		count_refusal(im, msg);
	free(s->if_line);
	s->if_line = NULL;
	s->if_id[0] = '\0';
	im->im_busy--;
	json_free(doc);
}

/* Waits for answers until a slot is free (or all are, when drain). */
static int
wait_answers(struct import *im, int drain)
{
	struct pollfd pfd;
	char	     *text;
	size_t	      len, i;
	int64_t	      oldest;

	while (drain ? im->im_busy > 0 : im->im_busy == IMPORT_WINDOW) {
		oldest = INT64_MAX;
		for (i = 0; i < IMPORT_WINDOW; i++)
			if (im->im_win[i].if_id[0] != '\0' &&
			    im->im_win[i].if_sent < oldest)
				oldest = im->im_win[i].if_sent;
		if (wsc_now_ms() - oldest > IMPORT_ANSWER_MS) {
			fprintf(stderr,
			    "graspctl: relayd did not answer an EVENT within %d s\n",
			    IMPORT_ANSWER_MS / 1000);
			return -1;
		}
		while ((text = wsc_next(im->im_ws, &len, NULL)) != NULL) {
			take_answer(im, text, len);
			free(text);
		}
		if (drain ? im->im_busy == 0 : im->im_busy < IMPORT_WINDOW)
			break;
		if (wsc_is_closed(im->im_ws)) {
			fprintf(stderr,
			    "graspctl: relayd closed the connection: %s\n",
			    wsc_error(im->im_ws));
			return -1;
		}
		pfd.fd = wsc_fd(im->im_ws);
		pfd.events = POLLIN;
		if (poll(&pfd, 1, IMPORT_PROGRESS_MS) > 0 &&
		    wsc_read_available(im->im_ws) == -1 &&
		    !wsc_is_closed(im->im_ws)) {
			fprintf(stderr,
			    "graspctl: connection to relayd lost\n");
			return -1;
		}
		progress(im, 0);
	}
	return 0;
}

/* Sends the lines that were rate-limited, once the pause is over. */
static int
send_retries(struct import *im)
{
	int64_t wait;
	size_t	i;

	while (im->im_nretry > 0) {
		if ((wait = im->im_resume - wsc_now_ms()) > 0)
			usleep((useconds_t)wait * 1000);
		if (wait_answers(im, 0) == -1)
			return -1;
		if (send_line(im, im->im_retry[0], im->im_retry_len[0]) == -1)
			return -1;
		for (i = 1; i < im->im_nretry; i++) {
			im->im_retry[i - 1] = im->im_retry[i];
			im->im_retry_len[i - 1] = im->im_retry_len[i];
		}
		im->im_nretry--;
	}
	return 0;
}

/*
 * Waits until a new line may go: no rate-limited line waits and a slot
 * is free, so that the window and the lines to send again never hold
 * more than IMPORT_WINDOW together.
 */
static int
make_room(struct import *im)
{
	while (im->im_nretry > 0 || im->im_busy == IMPORT_WINDOW) {
		if (im->im_nretry > 0) {
			if (send_retries(im) == -1)
				return -1;
		} else if (wait_answers(im, 0) == -1)
			return -1;
	}
	return 0;
}

/*
 * Sends the events refused for want of another (waiting[]) again, in
 * passes, in the order they came, while a pass gets some accepted; what
 * is left is counted as refused with its last answer.
 */
static int
later_rounds(struct import *im)
{
	struct later *round;
	size_t	      n, i;
	int64_t	      before;
	int	      rc = 0;

	while (im->im_nlater > 0) {
		round = im->im_later;
		n = im->im_nlater;
		im->im_later = NULL;
		im->im_nlater = im->im_caplater = im->im_later_bytes = 0;
		im->im_round++;
		before = im->im_accepted + im->im_duplicate;
		usleep(IMPORT_ROUND_PAUSE_MS * 1000);
		for (i = 0; i < n; i++) {
			free(round[i].lt_msg);
			if (rc == 0 && make_room(im) == -1)
				rc = -1;
			if (rc == -1) {
				free(round[i].lt_line);
				continue;
			}
			/* send_line() owns the line, even when it fails. */
			if (send_line(im, round[i].lt_line, round[i].lt_len) ==
			    -1)
				rc = -1;
		}
		free(round);
		while (rc == 0 && (im->im_nretry > 0 || im->im_busy > 0))
			if (send_retries(im) == -1 || wait_answers(im, 1) == -1)
				rc = -1;
		if (rc == -1)
			return -1;
		if (im->im_accepted + im->im_duplicate == before)
			break;
	}
	for (i = 0; i < im->im_nlater; i++) {
		count_refusal(im, im->im_later[i].lt_msg);
		free(im->im_later[i].lt_line);
		free(im->im_later[i].lt_msg);
	}
	free(im->im_later);
	im->im_later = NULL;
	im->im_nlater = 0;
	return 0;
}

static void
import_summary(const struct import *im, int jflag)
{
	cJSON *o, *r;
	char  *text;
	size_t i;

	if (jflag) {
		if ((o = cJSON_CreateObject()) == NULL ||
		    cJSON_AddNumberToObject(o, "lines", im->im_lines) == NULL ||
		    cJSON_AddNumberToObject(o, "accepted", im->im_accepted) ==
			NULL ||
		    cJSON_AddNumberToObject(o, "held", im->im_held) == NULL ||
		    cJSON_AddNumberToObject(o, "duplicate", im->im_duplicate) ==
			NULL ||
		    cJSON_AddNumberToObject(o, "refused", im->im_refused) ==
			NULL ||
		    (r = cJSON_AddObjectToObject(o, "reasons")) == NULL)
			fatalx("out of memory");
		for (i = 0; i < im->im_nreasons; i++)
			if (cJSON_AddNumberToObject(r, im->im_reason[i],
				im->im_nreason[i]) == NULL)
				fatalx("out of memory");
		if ((r = cJSON_AddObjectToObject(o, "waiting")) == NULL)
			fatalx("out of memory");
		for (i = 0; i < NWAITING; i++)
			if (im->im_nwaiting[i] > 0 &&
			    cJSON_AddNumberToObject(r, waiting[i].wt_name,
				im->im_nwaiting[i]) == NULL)
				fatalx("out of memory");
		if ((text = cJSON_Print(o)) == NULL)
			fatalx("out of memory");
		printf("%s\n", text);
		free(text);
		cJSON_Delete(o);
		return;
	}
	printf("%" PRId64 " lines\n", im->im_lines);
	printf("%" PRId64 " accepted (%" PRId64 " held in purgatory until "
	       "their git data arrives)\n",
	    im->im_accepted, im->im_held);
	printf("%" PRId64 " duplicate\n", im->im_duplicate);
	printf("%" PRId64 " refused\n", im->im_refused);
	for (i = 0; i < im->im_nreasons; i++)
		printf("  %s %" PRId64 "\n", im->im_reason[i],
		    im->im_nreason[i]);
	for (i = 0; i < NWAITING; i++)
		if (im->im_nwaiting[i] > 0)
			printf("  of which still waiting: %s %" PRId64 "\n",
			    waiting[i].wt_name, im->im_nwaiting[i]);
}

/*
 * Connects to relayd's import socket in the run directory (msg.h), and
 * the uid relayd runs as into *uid.  The websocket, or NULL after saying
 * why on stderr.
 */
static struct wsc *
import_connect(const struct gctl_where *w, uid_t *uid)
{
	struct sockaddr_un sun;
	struct ucred	   cred;
	socklen_t	   clen = sizeof(cred);
	struct wsc	  *ws;
	int		   fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/%s",
		w->cw_run, CHAN_IMPORT_SOCKET) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "graspctl: run directory name too long\n");
		return NULL;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		fatal("socket");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		fprintf(stderr,
		    "graspctl: cannot reach relayd at %s: %s (is graspd running? -r names its run directory, -f its configuration)\n",
		    sun.sun_path, strerror(errno));
		close(fd);
		return NULL;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == -1)
		fatal("SO_PEERCRED");
	*uid = cred.uid;
	/* wsc_handshake() owns fd, and says why on stderr if it fails. */
	if ((ws = wsc_handshake(fd, "localhost", w->cw_cfg.bind_port, "/", NULL,
		 IMPORT_CONNECT_MS, NULL)) == NULL)
		fprintf(stderr,
		    "graspctl: relayd at %s refused the websocket\n",
		    sun.sun_path);
	return ws;
}

/* "name (uid N)" of uid into out. */
static const char *
user_text(uid_t uid, char *out, size_t len)
{
	struct passwd *pw = getpwuid(uid);

	if (pw != NULL)
		snprintf(out, len, "%s (uid %u)", pw->pw_name, (unsigned)uid);
	else
		snprintf(out, len, "uid %u", (unsigned)uid);
	return out;
}

/*
 * The first entry under dir, depth levels at most, that uid does not
 * own, into bad (its owner into *owner).  1 if one was found, else 0;
 * what this process cannot read is passed over (it may be relayd's).
 */
static int
foreign_entry(const char *dir, uid_t uid, int depth, char *bad, size_t len,
    uid_t *owner)
{
	DIR	      *d;
	struct dirent *e;
	struct stat    st;
	char	       path[PATH_MAX];
	int	       found = 0;

	if (depth == 0 || (d = opendir(dir)) == NULL)
		return 0;
	while (!found && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
			e->d_name) >= sizeof(path) ||
		    lstat(path, &st) == -1)
			continue;
		if (st.st_uid != uid) {
			snprintf(bad, len, "%s", path);
			*owner = st.st_uid;
			found = 1;
		} else if (S_ISDIR(st.st_mode))
			found = foreign_entry(path, uid, depth - 1, bad, len,
			    owner);
	}
	closedir(d);
	return found;
}

/*
 * Whether relayd, running as uid, can use the git tree: every file and
 * directory of git_data_path its own, since it creates repositories
 * there, and git writes refs and objects into them.  0, or -1 after
 * saying what to chown.
 */
static int
git_tree_usable(const struct gctl_where *w, uid_t uid)
{
	const char    *git = w->cw_cfg.git_data_path;
	struct stat    st;
	struct passwd *pw;
	char	       bad[PATH_MAX], who[128], whose[128], name[64];
	uid_t	       owner;

	if (uid == 0 || stat(git, &st) == -1)
		return 0;
	if (st.st_uid != uid) {
		snprintf(bad, sizeof(bad), "%s", git);
		owner = st.st_uid;
	} else if (!foreign_entry(git, uid, IMPORT_TREE_DEPTH, bad, sizeof(bad),
		       &owner))
		return 0;
	user_text(uid, who, sizeof(who));
	user_text(owner, whose, sizeof(whose));
	if ((pw = getpwuid(uid)) != NULL)
		snprintf(name, sizeof(name), "%s", pw->pw_name);
	else
		snprintf(name, sizeof(name), "%u", (unsigned)uid);
	fprintf(stderr,
	    "graspctl: %s belongs to %s, but relayd runs as %s and cannot write there, so the events of its repositories would be refused or held; nothing imported: run chown -R %s: %s and import again\n",
	    bad, whose, who, name, git);
	return -1;
}

int
gctl_import(const struct gctl_where *w, int argc, char *argv[], int jflag)
{
	struct import *im;
	FILE	      *fp = stdin;
	const char    *name = "-";
	char	      *line = NULL;
	size_t	       cap = 0, i;
	ssize_t	       n;
	uid_t	       uid;
	int	       rc = 1;

	if (argc > 2)
		return GCTL_USAGE_EXIT;
	if (argc == 2)
		name = argv[1];
	if (strcmp(name, "-") != 0 && (fp = fopen(name, "r")) == NULL) {
		fprintf(stderr, "graspctl: %s: %s\n", name, strerror(errno));
		return 1;
	}
	if ((im = calloc(1, sizeof(*im))) == NULL)
		fatal("calloc");
	im->im_tty = isatty(STDERR_FILENO);
	if ((im->im_ws = import_connect(w, &uid)) == NULL)
		goto done;
	if (git_tree_usable(w, uid) == -1) {
		/* Nothing sent: no summary. */
		wsc_close(im->im_ws);
		im->im_ws = NULL;
		goto done;
	}
	while ((n = getline(&line, &cap, fp)) != -1) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0)
			continue;
		im->im_lines++;
		if (make_room(im) == -1)
			goto done;
		if (send_line(im, line, (size_t)n) == -1) {
			line = NULL;
			fprintf(stderr, "graspctl: cannot send to relayd: %s\n",
			    wsc_error(im->im_ws));
			goto done;
		}
		/* send_line() owns the line now. */
		line = NULL;
		cap = 0;
		progress(im, 0);
	}
	if (ferror(fp)) {
		fprintf(stderr, "graspctl: %s: %s\n", name, strerror(errno));
		goto done;
	}
	while (im->im_nretry > 0 || im->im_busy > 0)
		if (send_retries(im) == -1 || wait_answers(im, 1) == -1)
			goto done;
	if (later_rounds(im) == -1)
		goto done;
	rc = 0;
done:
	if (im->im_ws != NULL) {
		progress(im, 1);
		import_summary(im, jflag);
	}
	for (i = 0; i < IMPORT_WINDOW; i++)
		free(im->im_win[i].if_line);
	for (i = 0; i < im->im_nretry; i++)
		free(im->im_retry[i]);
	for (i = 0; i < im->im_nlater; i++) {
		free(im->im_later[i].lt_line);
		free(im->im_later[i].lt_msg);
	}
	free(im->im_later);
	if (im->im_ws != NULL)
		wsc_close(im->im_ws);
	free(im);
	free(line);
	if (fp != stdin)
		fclose(fp);
	return rc;
}

int
gctl_data(const struct gctl_where *w, int argc, char *argv[], int jflag)
{
	if (strcmp(argv[0], "export") == 0)
		return gctl_export(w, argc, argv);
	if (strcmp(argv[0], "import") == 0)
		return gctl_import(w, argc, argv, jflag);
	if (strcmp(argv[0], "backup") == 0)
		return gctl_backup(w, argc, argv, jflag);
	return GCTL_USAGE_EXIT;
}
