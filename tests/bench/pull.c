/*
 * pull.c: the helper of the sync pull benchmark, run by tests/bench/pull.sh
 * (a test tool, not a daemon).
 *
 *   pull announce FILE --owner-seckey HEX --domains A,B[,...]
 *	rewrites the first line of FILE (made by `ingest gen --git-dir`)
 *	into a new announcement by the same owner (same "d", one second
 *	newer) whose clone and relays tags name every domain, so that each
 *	graspd listed hosts the repository.
 *   pull sync HOST PORT FILE DIR --source HOST:PORT [--stall-ms MS]
 *	on HOST:PORT, a graspd that gets FILE's announcement by sync from
 *	the source: publishes FILE's second line (the owner's state) until
 *	it is taken (the announcement is held in purgatory by then), pushes
 *	DIR's main branch, which releases the repository, and waits until
 *	HOST:PORT stores as many events as the source does
 *	(graspd_relay_events_stored in both /metrics).  Prints how long the
 *	release took from the start, and how long the pull took from the
 *	push, with its rate.
 *
 * Figures go to stdout as "figure value unit" lines.  Nothing fails on
 * time: only when a relay stops answering or makes no progress for
 * --stall-ms (120 s by default).  Only loopback hosts are accepted.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "buf.h"
#include "event.h"
#include "gitutil.h"
#include "log.h"
#include "nip19.h"
#include "nostr.h"
#include "wsclient.h"

#define PULL_STALL_MS	 120000
#define PULL_POLL_MS	 100
#define PULL_HTTP_MS	 10000
#define PULL_MAX_DOMAINS 8

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
	    "usage: pull announce FILE --owner-seckey HEX --domains A,B\n"
	    "       pull sync HOST PORT FILE DIR --source HOST:PORT "
	    "[--stall-ms MS]\n");
	exit(2);
}

static long
num_arg(const char *s, long min, long max)
{
	char *ep;
	long  v;

	v = s ? strtol(s, &ep, 10) : 0;
	if (s == NULL || *s == '\0' || *ep != '\0' || v < min || v > max) {
		fprintf(stderr, "pull: bad number %s\n", s ? s : "(none)");
		usage();
	}
	return v;
}

/* The first two lines of file (announcement, state); caller frees. */
static int
read_head(const char *file, char **ann, char **state, struct buf *rest)
{
	FILE   *f;
	char   *line = NULL;
	size_t	cap = 0, n = 0;
	ssize_t r;

	*ann = *state = NULL;
	if ((f = fopen(file, "r")) == NULL) {
		fprintf(stderr, "pull: %s: cannot open\n", file);
		return -1;
	}
	while ((r = getline(&line, &cap, f)) != -1) {
		if (n == 0 || n == 1) {
			while (r > 0 && line[r - 1] == '\n')
				line[--r] = '\0';
			if ((*(n == 0 ? ann : state) = strdup(line)) == NULL)
				fatal("pull: strdup");
		} else if (rest != NULL)
			buf_add(rest, line, (size_t)r);
		else
			break;
		n++;
	}
	free(line);
	fclose(f);
	if (*state == NULL) {
		fprintf(stderr, "pull: %s has fewer than two lines\n", file);
		return -1;
	}
	return 0;
}

static struct event *
parse_line(const char *line)
{
	char	      err[128];
	struct event *ev;

	if ((ev = event_parse(line, strlen(line), err, sizeof(err))) == NULL)
		fprintf(stderr, "pull: bad event line: %s\n", err);
	return ev;
}

static int
cmd_announce(int argc, char **argv)
{
	const char   *file, *skhex, *domains;
	struct buf    tags = BUF_INIT, rest = BUF_INIT, url = BUF_INIT;
	struct event *old = NULL, *ev = NULL;
	char	     *ann = NULL, *state = NULL, *dl = NULL, *d, *sp;
	char	      npub[NIP19_KEY_BUFSZ], *doms[PULL_MAX_DOMAINS];
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	size_t	      nd = 0, i;
	FILE	     *f;
	int	      rc = 1;

	if (argc < 2 ||
	    (skhex = bench_opt(argc, argv, "--owner-seckey")) == NULL ||
	    (domains = bench_opt(argc, argv, "--domains")) == NULL)
		usage();
	file = argv[1];
	if (key_parse_seckey(skhex, sk) == -1 ||
	    event_pubkey_of(sk, pk) == -1) {
		fprintf(stderr, "pull: bad owner secret key\n");
		return 2;
	}
	nip19_encode("npub", pk, npub, sizeof(npub));
	if ((dl = strdup(domains)) == NULL)
		fatal("pull: strdup");
	for (d = strtok_r(dl, ",", &sp); d != NULL && nd < PULL_MAX_DOMAINS;
	     d = strtok_r(NULL, ",", &sp))
		doms[nd++] = d;
	if (read_head(file, &ann, &state, &rest) == -1 ||
	    (old = parse_line(ann)) == NULL)
		goto done;
	if (memcmp(old->pubkey, pk, PUBKEY_LEN) != 0 || old->kind != 30617) {
		fprintf(stderr,
		    "pull: the first line of %s is no announcement "
		    "by that owner\n",
		    file);
		goto done;
	}
	buf_adds(&tags, "[[\"d\",");
	buf_add_jstr(&tags, event_d(old), strlen(event_d(old)));
	buf_adds(&tags, "],[\"clone\"");
	for (i = 0; i < nd; i++) {
		buf_reset(&url);
		buf_printf(&url, "http://%s/%s/%s.git", doms[i], npub,
		    event_d(old));
		buf_addc(&tags, ',');
		buf_add_jstr(&tags, url.b_data, url.b_len);
	}
	buf_adds(&tags, "],[\"relays\"");
	for (i = 0; i < nd; i++) {
		buf_reset(&url);
		buf_printf(&url, "ws://%s", doms[i]);
		buf_addc(&tags, ',');
		buf_add_jstr(&tags, url.b_data, url.b_len);
	}
	buf_adds(&tags, "]]");
	/* Newer than the one it replaces, older than anything to come. */
	if ((ev = event_new_signed(sk, old->created_at + 1, 30617, tags.b_data,
		 "Repository of the graspd pull benchmark.")) == NULL) {
		fprintf(stderr, "pull: cannot sign the announcement\n");
		goto done;
	}
	if ((f = fopen(file, "w")) == NULL) {
		fprintf(stderr, "pull: %s: cannot write\n", file);
		goto done;
	}
	fprintf(f, "%.*s\n%s\n", (int)ev->json_len, ev->json, state);
	if (rest.b_len > 0)
		fwrite(rest.b_data, 1, rest.b_len, f);
	if (fclose(f) == EOF) {
		fprintf(stderr, "pull: %s: write failed\n", file);
		goto done;
	}
	rc = 0;
done:
	event_destroy(old);
	event_destroy(ev);
	buf_free(&tags);
	buf_free(&rest);
	buf_free(&url);
	free(ann);
	free(state);
	free(dl);
	return rc;
}

/* 1 if the event with id_hex is served on w, 0 if not, -1 on failure. */
static int
served(struct wsc *w, const char *id_hex, int timeout_ms)
{
	size_t n;

	return nostr_count_id(w, "served", id_hex, timeout_ms, &n) == 0 ?
	    n == 1 :
	    -1;
}

/* graspd_relay_events_stored from host:port's /metrics, or -1. */
static long
stored(const char *host, int port)
{
	static const char name[] = "graspd_relay_events_stored{";
	char		 *h = NULL, *body = NULL, *p, *sp;
	int		  status = 0;
	long		  n = -1;

	if (http_get(host, port, "/metrics", NULL, PULL_HTTP_MS, &status, &h,
		&body) == 0 &&
	    status == 200) {
		for (p = body; (p = strstr(p, name)) != NULL; p++) {
			if ((p == body || p[-1] == '\n') &&
			    (sp = strchr(p, ' ')) != NULL) {
				n = strtol(sp + 1, NULL, 10);
				break;
			}
		}
	}
	free(h);
	free(body);
	return n;
}

/* "HOST:PORT" into host (size hl) and *port; 0 or -1. */
static int
split_hostport(const char *s, char *host, size_t hl, int *port)
{
	const char *c = strrchr(s, ':');

	if (c == NULL || (size_t)(c - s) >= hl)
		return -1;
	memcpy(host, s, (size_t)(c - s));
	host[c - s] = '\0';
	*port = (int)num_arg(c + 1, 1, 65535);
	return 0;
}

/*
 * Waits until host:port stores target events; *last gets the count and
 * *t_last when it was reached.  0, or -1 on a stall or a dead relay.
 */
static int
wait_stored(const char *host, int port, long target, int stall_ms, long *last,
    double *t_last)
{
	long n;

	*t_last = bench_now_s();
	if ((*last = stored(host, port)) < 0)
		goto dead;
	while (*last < target) {
		usleep(PULL_POLL_MS * 1000);
		if ((n = stored(host, port)) < 0)
			goto dead;
		if (n > *last) {
			*last = n;
			*t_last = bench_now_s();
		} else if ((bench_now_s() - *t_last) * 1000 > stall_ms) {
			fprintf(stderr,
			    "pull: stuck at %ld of %ld events for "
			    "%d ms\n",
			    *last, target, stall_ms);
			return -1;
		}
	}
	return 0;
dead:
	fprintf(stderr, "pull: %s:%d stopped answering\n", host, port);
	return -1;
}

static int
cmd_sync(int argc, char **argv)
{
	const char   *host, *file, *dir, *src, *v;
	struct event *ann = NULL, *state = NULL;
	struct wsc   *w = NULL;
	char	     *annl = NULL, *statel = NULL, *msg = NULL, *out = NULL;
	char	      url[1024], npub[NIP19_KEY_BUFSZ], home[4200];
	char	      shost[256];
	double	      t0 = bench_now_s(), t_push, t_last;
	long	      target, base, last;
	int	      port, sport, stall_ms = PULL_STALL_MS, ok = 0, rc = 1;

	if (argc < 5 || (src = bench_opt(argc, argv, "--source")) == NULL)
		usage();
	host = argv[1];
	port = (int)num_arg(argv[2], 1, 65535);
	file = argv[3];
	dir = argv[4];
	if (split_hostport(src, shost, sizeof(shost), &sport) == -1)
		usage();
	bench_loopback_only("pull", host);
	bench_loopback_only("pull", shost);
	if ((v = bench_opt(argc, argv, "--stall-ms")) != NULL)
		stall_ms = (int)num_arg(v, 100, 3600000);
	if (read_head(file, &annl, &statel, NULL) == -1 ||
	    (ann = parse_line(annl)) == NULL ||
	    (state = parse_line(statel)) == NULL)
		goto done;
	if ((target = stored(shost, sport)) < 0) {
		fprintf(stderr, "pull: no events_stored from %s\n", src);
		goto done;
	}
	if ((w = wsc_connect(host, port, "/", PULL_HTTP_MS)) == NULL)
		goto done;

	/* The state is refused until the announcement has arrived by sync
	 * (held in purgatory). */
	for (;;) {
		free(msg);
		msg = NULL;
		if (nostr_publish(w, state, PULL_HTTP_MS, &ok, &msg) == -1) {
			fprintf(stderr, "pull: no OK for the state event\n");
			goto done;
		}
		if (ok)
			break;
		if ((bench_now_s() - t0) * 1000 > stall_ms) {
			fprintf(stderr,
			    "pull: state still refused after %d "
			    "ms: %s\n",
			    stall_ms, msg ? msg : "");
			goto done;
		}
		usleep(PULL_POLL_MS * 1000);
	}
	/* Nothing of the repository is pulled before its release. */
	if ((base = stored(host, port)) < 0) {
		fprintf(stderr, "pull: no events_stored from %s:%d\n", host,
		    port);
		goto done;
	}
	nip19_encode("npub", ann->pubkey, npub, sizeof(npub));
	snprintf(url, sizeof(url), "http://%s:%d/%s/%s.git", host, port, npub,
	    event_d(ann));
	snprintf(home, sizeof(home), "%s.home", dir);
	t_push = bench_now_s();
	if (gt_setup(home) == -1 ||
	    gt_git(dir, &out, "push", "-q", url, "main", NULL) != 0) {
		fprintf(stderr, "pull: git push to %s failed: %s\n", url,
		    out ? out : "");
		goto done;
	}
	while (served(w, ann->id_hex, PULL_HTTP_MS) != 1) {
		if ((bench_now_s() - t_push) * 1000 > stall_ms) {
			fprintf(stderr,
			    "pull: the announcement is not served "
			    "after the push\n");
			goto done;
		}
		usleep(PULL_POLL_MS * 1000);
	}
	printf("pull_release_seconds %.3f s\n", bench_now_s() - t0);
	if (wait_stored(host, port, target, stall_ms, &last, &t_last) == -1)
		goto done;
	printf("pull_events %ld events\n", last - base);
	printf("pull_seconds %.3f s\n", t_last - t_push);
	printf("pull_rate %.1f events/s\n",
	    t_last > t_push ? (double)(last - base) / (t_last - t_push) : 0.0);
	rc = 0;
done:
	wsc_close(w);
	event_destroy(ann);
	event_destroy(state);
	free(annl);
	free(statel);
	free(msg);
	free(out);
	return rc;
}

int
main(int argc, char **argv)
{
	log_init("pull", 1);
	if (argc < 2)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(argv[1], "announce") == 0)
		return cmd_announce(argc - 1, argv + 1);
	if (strcmp(argv[1], "sync") == 0)
		return cmd_sync(argc - 1, argv + 1);
	usage();
}
