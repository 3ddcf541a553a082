/*
 * disk_test.c: relayd on a small tmpfs that fills up.  With a floor
 * (NGIT_MIN_FREE_DISK_MB) new events are refused with "error:", a push
 * with git's ERR, every event acknowledged before is still stored after
 * a restart, and once a filler file goes events are accepted again
 * without a restart.  With no floor SQLite itself runs out of room
 * (SQLITE_FULL at commit): no event gets OK true unless stored, relayd
 * keeps running and accepts again once space is freed.  The WAL file's
 * room (wal_room_mb) stops short of twice the floor.
 *
 * Mounting needs root (CAP_SYS_ADMIN); without it each case prints
 * "ok - NAME # SKIP reason", as privdrop_test.c does.  The mounts are
 * always undone, on failure paths too.
 */
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "ctl.h"
#include "event.h"
#include "gitutil.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tuser.h"
#include "wsclient.h"

#define TMO	   5000
#define FILL	   0x5d
/* Content of one filling event: about 200 kB of the 256 k allowed. */
#define BIG	   (200 * 1024)
/* Most events one case publishes before it must have been refused. */
#define MAX_EVENTS 400
/* How long relayd may take to accept again once space is back. */
#define RECOVER_MS 10000

static char  tmp[256]; /* the test's directory, HOME */
static char  mnt[300]; /* the tmpfs mounted in it, or "" */
static char *big;      /* BIG bytes of content */
static int   seq_n;

struct acked {
	char (*ids)[EVENT_ID_HEX_LEN + 1];
	size_t n;
};

/* Mounts a tmpfs of size (e.g. "16m") at dir.  0, or -1 (errno). */
static int
mount_tmpfs(const char *dir, const char *size)
{
	char opt[64];

	if (mkdir(dir, 0755) == -1 && errno != EEXIST)
		return -1;
	snprintf(opt, sizeof(opt), "size=%s,mode=0755", size);
	return mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opt);
}

static void
unmount_all(void)
{
	if (mnt[0] != '\0' && umount2(mnt, MNT_DETACH) == -1)
		printf("# umount %s: %s\n", mnt, strerror(errno));
	mnt[0] = '\0';
}

static void
on_fatal_signal(int sig)
{
	unmount_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Writes a file of mib MiB at path.  0 or -1. */
static int
filler(const char *path, int mib)
{
	char buf[65536];
	int  fd, i, rc = 0;

	memset(buf, 'x', sizeof(buf));
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1)
		return -1;
	for (i = 0; i < mib * 16 && rc == 0; i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			rc = -1;
	close(fd);
	return rc;
}

/* An issue (kind 1621) on user 1's repository d, of BIG bytes. */
static struct event *
issue(const char *d)
{
	char coord[200], tags[300];

	tuser_coord(FILL, 1, d, coord, sizeof(coord));
	snprintf(tags, sizeof(tags),
	    "[[\"a\",\"%s\"],[\"subject\","
	    "\"s%d\"]]",
	    coord, ++seq_n);
	big[0] = (char)('a' + seq_n % 26);
	return tuser_event(FILL, 2, time(NULL), 1621, tags, big);
}

/* 1 if the relay returns the event with id (one REQ), 0 if not, -1. */
static int
stored(struct relayproc *rp, const char *id)
{
	char f[100];

	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", id);
	return client_count(rp, f);
}

/*
 * Publishes issues on ws, pausing pause_ms after each, until one is
 * refused; its message goes to msg.  The ids answered OK true go to a.
 * 0 once refused, -1 if none was (or no answer came).
 */
static int
fill_until_refused(struct wsc *ws, const char *d, int pause_ms, struct acked *a,
    char *msg, size_t msglen)
{
	struct event *ev;
	int	      i, ok;

	for (i = 0; i < MAX_EVENTS; i++) {
		if ((ev = issue(d)) == NULL)
			return -1;
		memcpy(a->ids[a->n], ev->id_hex, EVENT_ID_HEX_LEN + 1);
		ok = nostr_publish_take(ws, ev, TMO, msg, msglen);
		if (ok == -1)
			return -1;
		if (ok == 0)
			return 0;
		a->n++;
		if (pause_ms > 0)
			usleep((useconds_t)pause_ms * 1000);
	}
	snprintf(msg, msglen, "never refused");
	return -1;
}

/* Every acknowledged event is stored: the count of those missing. */
static size_t
missing(struct relayproc *rp, const struct acked *a)
{
	size_t i, n = 0;

	for (i = 0; i < a->n; i++)
		if (stored(rp, a->ids[i]) != 1) {
			if (n++ < 3)
				printf("# acknowledged but not stored: %s\n",
				    a->ids[i]);
		}
	return n;
}

/* Publishes a small issue every 200 ms until accepted, at most ms. */
static int
accepted_within(struct relayproc *rp, const char *d, int ms, char *msg,
    size_t msglen)
{
	char	      coord[200], tags[300];
	struct event *ev;
	int64_t	      end = t_now_ms() + ms;
	int	      ok;

	tuser_coord(FILL, 1, d, coord, sizeof(coord));
	do {
		snprintf(tags, sizeof(tags),
		    "[[\"a\",\"%s\"],[\"subject\","
		    "\"back %d\"]]",
		    coord, ++seq_n);
		ev = tuser_event(FILL, 3, time(NULL), 1621, tags, "back");
		ok = client_publish(rp, ev, msg, msglen);
		event_destroy(ev);
		if (ok == 1)
			return 1;
		usleep(200000);
	} while (t_now_ms() < end);
	return 0;
}

/*
 * Mounts a tmpfs of size at tmp/mnt-<name> and starts relayd on it with
 * the floor floor_mb and the WAL room room_mb (NULL: the tests' own),
 * user 1's repository d hosted.  NULL on failure.
 */
static struct relayproc *
start_on_tmpfs(const char *name, const char *size, const char *floor_mb,
    const char *room_mb, const char *d)
{
	struct relayproc *rp;
	uint8_t		  sk[SECKEY_LEN];
	char		  env[4][400], work[400];
	const char	 *envp[5];

	snprintf(mnt, sizeof(mnt), "%s/mnt-%s", tmp, name);
	if (mount_tmpfs(mnt, size) == -1) {
		printf("# mount %s: %s\n", mnt, strerror(errno));
		mnt[0] = '\0';
		return NULL;
	}
	snprintf(env[0], sizeof(env[0]), "NGIT_RELAY_DATA_PATH=%s/relay", mnt);
	snprintf(env[1], sizeof(env[1]), "NGIT_GIT_DATA_PATH=%s/git", mnt);
	snprintf(env[2], sizeof(env[2]), "NGIT_MIN_FREE_DISK_MB=%s", floor_mb);
	snprintf(env[3], sizeof(env[3]), "%s",
	    room_mb != NULL ? room_mb : TPROC_WAL_ROOM);
	envp[0] = env[0];
	envp[1] = env[1];
	envp[2] = env[2];
	envp[3] = env[3];
	envp[4] = NULL;
	if ((rp = relayproc_start("relayd", envp)) == NULL)
		return NULL;
	tuser_sk(FILL, 1, sk);
	snprintf(work, sizeof(work), "%s/work-%s", tmp, name);
	if (client_host_repo(rp, sk, time(NULL), d, NULL, work) == -1) {
		relayproc_dump_log(rp, 20);
		relayproc_free(rp);
		return NULL;
	}
	return rp;
}

/* A relayd on a tmpfs filled by a case until it refuses. */
struct fill_run {
	struct relayproc *fr_rp;
	struct wsc	 *fr_ws;
	struct acked	  fr_a; /* what it acknowledged */
	char		  fr_filler[400];
};

/*
 * Starts relayd on a tmpfs of size with the floor floor_mb
 * (start_on_tmpfs(), repository name), takes filler_mib of it with a
 * filler file and connects.  0, or -1 (a check failed) with what
 * started left for fill_end().
 */
static int
fill_start(struct fill_run *fr, const char *name, const char *size,
    const char *floor_mb, int filler_mib)
{
	memset(fr, 0, sizeof(*fr));
	if ((fr->fr_rp = start_on_tmpfs(name, size, floor_mb, NULL, name)) ==
	    NULL) {
		T_CHECK(!"relayd on a tmpfs");
		return -1;
	}
	snprintf(fr->fr_filler, sizeof(fr->fr_filler), "%s/filler", mnt);
	T_CHECK(filler(fr->fr_filler, filler_mib) == 0);
	fr->fr_a.ids = calloc(MAX_EVENTS, sizeof(*fr->fr_a.ids));
	if ((fr->fr_ws = relayproc_ws_retry(fr->fr_rp, TMO)) == NULL) {
		T_CHECK(!"websocket");
		return -1;
	}
	return 0;
}

/* Stops and frees what fill_start() started (the log when a case failed). */
static void
fill_end(struct fill_run *fr)
{
	if (t_case_failed && fr->fr_rp != NULL)
		relayproc_dump_log(fr->fr_rp, 30);
	wsc_close(fr->fr_ws);
	relayproc_free(fr->fr_rp);
	unmount_all();
	free(fr->fr_a.ids);
}

/*
 * A new commit pushed from the case's work repository, after a state
 * event naming it when state (else the push is refused before that
 * matters); git's output in out.  git's exit status, or -1.
 */
static int
push_more(const char *name, const char *d, struct relayproc *rp, int state,
    char **out)
{
	struct event *ev;
	uint8_t	      pk[PUBKEY_LEN], sk[SECKEY_LEN];
	char	      work[400], url[600], oid[41], tags[300], msg[256];
	int	      ok;

	tuser_sk(FILL, 1, sk);
	event_pubkey_of(sk, pk);
	snprintf(work, sizeof(work), "%s/work-%s", tmp, name);
	big[1] = (char)('a' + ++seq_n % 26);
	if (gt_commit(work, "more", big, "more", oid) == -1)
		return -1;
	if (state) {
		snprintf(tags, sizeof(tags),
		    "[[\"d\",\"%s\"],"
		    "[\"refs/heads/main\",\"%s\"],[\"HEAD\","
		    "\"ref: refs/heads/main\"]]",
		    d, oid);
		ev = tuser_event(FILL, 1, time(NULL), 30618, tags, "");
		ok = client_publish(rp, ev, msg, sizeof(msg));
		event_destroy(ev);
		if (ok != 1) {
			printf("# state refused: %s\n", msg);
			return -1;
		}
	}
	gt_url(url, sizeof(url), relayproc_domain(rp), pk, d);
	return gt_git(work, out, "push", url, "main", NULL);
}

static void
test_floor_refuses_events_and_pushes_then_recovers(void)
{
	struct fill_run	  fr;
	struct relayproc *rp;
	char		  msg[512], *out = NULL;
	int		  rc;

	/* 48 MiB with a 16 MiB filler and a 24 MiB floor: about 8 MiB of
	 * room, which the events cross well before the disk is full. */
	if (fill_start(&fr, "floor", "48m", "24", 16) == -1)
		goto done;
	rp = fr.fr_rp;
	T_CHECK(ctl_metric(rp, "graspd_relay_disk_low{role=\"relayd\"}") == 0);
	/* Paced so that the once-a-second look at free space keeps up. */
	rc = fill_until_refused(fr.fr_ws, "floor", 100, &fr.fr_a, msg,
	    sizeof(msg));
	printf("# %zu events accepted before the floor: %s\n", fr.fr_a.n, msg);
	T_CHECK(rc == 0);
	T_CHECK(fr.fr_a.n > 0);
	T_CHECK(strncmp(msg, "error:", 6) == 0);
	T_CHECK(strstr(msg, "low on disk space") != NULL);
	T_CHECK(ctl_metric(rp, "graspd_relay_disk_low{role=\"relayd\"}") == 1);
	T_CHECK(ctl_metric(rp,
		    "graspd_relay_disk_refusals_total"
		    "{role=\"relayd\",what=\"event\"}") >= 1);

	/* A push is refused with git's ERR, which git prints. */
	rc = push_more("floor", "floor", rp, 0, &out);
	printf("# push below the floor: exit %d\n", rc);
	T_CHECK(rc != 0);
	T_CHECK(out != NULL && strstr(out, "low on disk space") != NULL);
	T_CHECK(ctl_metric(rp,
		    "graspd_relay_disk_refusals_total"
		    "{role=\"relayd\",what=\"push\"}") == 1);

	/* Reads go on, and everything acknowledged survives a restart. */
	wsc_close(fr.fr_ws);
	fr.fr_ws = NULL;
	T_CHECK(missing(rp, &fr.fr_a) == 0);
	T_CHECK(relayproc_restart(rp) == 0);
	T_CHECK(missing(rp, &fr.fr_a) == 0);

	/* Space comes back: accepted again, with no restart. */
	T_CHECK(unlink(fr.fr_filler) == 0);
	T_CHECK(accepted_within(rp, "floor", RECOVER_MS, msg, sizeof(msg)));
	T_CHECK(ctl_metric(rp, "graspd_relay_disk_low{role=\"relayd\"}") == 0);
	free(out);
	out = NULL;
	rc = push_more("floor", "floor", rp, 1, &out);
	T_CHECK(rc == 0);
	if (rc != 0)
		printf("# push after recovery: %s\n", out ? out : "");
done:
	fill_end(&fr);
	free(out);
}

static void
test_full_disk_never_acknowledges_an_unstored_event(void)
{
	struct fill_run	  fr;
	struct relayproc *rp;
	char		  msg[512], *log;
	int		  rc;

	/* No floor: SQLite itself meets the full file system. */
	if (fill_start(&fr, "full", "12m", "0", 3) == -1)
		goto done;
	rp = fr.fr_rp;
	rc =
	    fill_until_refused(fr.fr_ws, "full", 0, &fr.fr_a, msg, sizeof(msg));
	printf("# %zu events accepted before the disk was full: %s\n",
	    fr.fr_a.n, msg);
	T_CHECK(rc == 0);
	T_CHECK(strncmp(msg, "error:", 6) == 0);
	wsc_close(fr.fr_ws);
	fr.fr_ws = NULL;
	/* SQLite did meet the full disk; relayd still runs, serves reads,
	 * and lost nothing it acknowledged. */
	log = t_slurp(relayproc_log_path(rp), NULL);
	T_CHECK(log != NULL && strstr(log, "disk is full") != NULL);
	T_CHECK(log != NULL && strstr(log, "refusing a batch") != NULL);
	free(log);
	T_CHECK(relayproc_wait(rp, 0) == -1);
	T_CHECK(missing(rp, &fr.fr_a) == 0);

	T_CHECK(unlink(fr.fr_filler) == 0);
	T_CHECK(accepted_within(rp, "full", RECOVER_MS, msg, sizeof(msg)));
	T_CHECK(relayproc_restart(rp) == 0);
	T_CHECK(missing(rp, &fr.fr_a) == 0);
done:
	fill_end(&fr);
}

/* A file of mib MiB of pseudo-random bytes (git cannot compress it). */
static int
noise(const char *path, int mib)
{
	unsigned char buf[65536];
	uint32_t      x = 2463534242u;
	size_t	      i;
	FILE	     *f;
	int	      n, rc = 0;

	if ((f = fopen(path, "w")) == NULL)
		return -1;
	for (n = 0; n < mib * 16 && rc == 0; n++) {
		for (i = 0; i < sizeof(buf); i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			buf[i] = (unsigned char)x;
		}
		if (fwrite(buf, 1, sizeof(buf), f) != sizeof(buf))
			rc = -1;
	}
	return fclose(f) == EOF ? -1 : rc;
}

/*
 * relayd on a tmpfs of size (start_on_tmpfs(), repository name) with the
 * floor floor_mb and a WAL room of
 * room_mb MiB, which it must stop short of, with keep_mb MiB left free:
 * it says where it stopped and accepts events after it.
 */
static void
room_stops_at(const char *name, const char *size, const char *floor_mb,
    int room_mb, int keep_mb)
{
	struct relayproc *rp;
	struct statvfs	  sv;
	struct stat	  sb;
	struct event	 *ev;
	char		  wal[400], msg[256], room[64];
	long long	  wsize = -1, avail = -1;
	int64_t		  end;

	snprintf(room, sizeof(room), "NGIT_WAL_ROOM_MB=%d", room_mb);
	if ((rp = start_on_tmpfs(name, size, floor_mb, room, name)) == NULL) {
		T_CHECK(!"relayd on a tmpfs");
		goto done;
	}
	snprintf(wal, sizeof(wal), "%s/relay/graspd.db-wal", mnt);
	for (end = wsc_now_ms() + RECOVER_MS;
	     relayproc_log_count(rp, "WAL file kept at") == 0 &&
	     wsc_now_ms() < end;)
		relayproc_sleep_ms(100);
	T_CHECK(relayproc_log_count(rp, "WAL file kept at") == 1);
	if (stat(wal, &sb) == 0)
		wsize = (long long)sb.st_size;
	if (statvfs(mnt, &sv) == 0)
		avail = (long long)sv.f_bavail * (long long)sv.f_frsize;
	printf("# %s, floor %s MiB: a WAL file of %lld MiB, %lld MiB free\n",
	    size, floor_mb, wsize >> 20, avail >> 20);
	/* Most of what was free beyond keep_mb went to the room. */
	T_CHECK(wsize >= 16LL << 20 && wsize < (long long)room_mb << 20);
	T_CHECK(avail >= (long long)keep_mb << 20 &&
	    avail < ((long long)keep_mb + 12) << 20);
	ev = issue(name);
	T_CHECK(ev != NULL && client_publish(rp, ev, msg, sizeof(msg)) == 1);
	event_destroy(ev);
done:
	if (t_case_failed && rp != NULL)
		relayproc_dump_log(rp, 30);
	relayproc_free(rp);
	unmount_all();
}

/*
 * The WAL file's room (wal_room_mb) never takes what the floor keeps for
 * events: relayd writes it only while the file system keeps twice the
 * floor, and 64 MiB (RELAY_WAL_ROOM_SPARE_MB) with no floor.
 */
static void
test_wal_room_stops_short_of_the_floor(void)
{
	room_stops_at("room", "128m", "40", 120, 80);
	room_stops_at("room0", "100m", "0", 120, 64);
}

static void
test_push_that_fills_the_disk_changes_no_ref(void)
{
	struct relayproc *rp;
	uint8_t		  sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char		  work[400], path[600], url[600], oid[41];
	char		  tags[300], msg[256], before[41] = "", *out = NULL;
	char		  cmd[800], *p, *nl;
	struct event	 *ev;
	int		  rc;

	/* No floor: git itself meets the full file system. */
	if ((rp = start_on_tmpfs("pack", "12m", "0", NULL, "pack")) == NULL) {
		T_CHECK(!"relayd on a tmpfs");
		goto done;
	}
	tuser_sk(FILL, 1, sk);
	event_pubkey_of(sk, pk);
	snprintf(work, sizeof(work), "%s/work-pack", tmp);
	T_CHECK(gt_rev(work, "HEAD", before) == 0);
	snprintf(path, sizeof(path), "%s/noise", work);
	T_CHECK(noise(path, 16) == 0);
	T_CHECK(gt_git(work, NULL, "add", "noise", NULL) == 0);
	T_CHECK(gt_git(work, NULL, "commit", "-q", "-m", "noise", NULL) == 0);
	T_CHECK(gt_rev(work, "HEAD", oid) == 0);
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"pack\"],[\"refs/heads/main"
	    "\",\"%s\"],[\"HEAD\",\"ref: refs/heads/main\"]]",
	    oid);
	ev = tuser_event(FILL, 1, time(NULL), 30618, tags, "");
	T_CHECK(client_publish(rp, ev, msg, sizeof(msg)) == 1);
	event_destroy(ev);
	gt_url(url, sizeof(url), relayproc_domain(rp), pk, "pack");
	rc = gt_git(work, &out, "push", url, "main", NULL);
	printf("# push of 16 MiB into 12: exit %d\n", rc);
	for (p = out; p != NULL && *p != '\0'; p = nl + (*nl != '\0')) {
		nl = p + strcspn(p, "\n");
		printf("#   %.*s\n", (int)(nl - p), p);
	}
	T_CHECK(rc != 0);
	/* relayd runs on; the branch is what it was, no quarantine left. */
	T_CHECK(relayproc_wait(rp, 0) == -1);
	free(out);
	out = NULL;
	T_CHECK(
	    gt_git(work, &out, "ls-remote", url, "refs/heads/main", NULL) == 0);
	T_CHECK(out != NULL && strncmp(out, before, 40) == 0);
	snprintf(path, sizeof(path), "%s/git", mnt);
	free(out);
	out = NULL;
	snprintf(cmd, sizeof(cmd),
	    "test -z \"$(find %s -name "
	    "'incoming-*')\"",
	    path);
	T_CHECK(system(cmd) == 0);
	snprintf(path, sizeof(path), "%s/clone-pack", tmp);
	T_CHECK(gt_git(NULL, NULL, "clone", "-q", url, path, NULL) == 0);
	T_CHECK(gt_git(path, NULL, "fsck", NULL) == 0);
done:
	if (t_case_failed && rp != NULL)
		relayproc_dump_log(rp, 30);
	relayproc_free(rp);
	unmount_all();
	free(out);
}

int
main(void)
{
	static const char *const cases[] = {
		"test_floor_refuses_events_and_pushes_then_recovers",
		"test_full_disk_never_acknowledges_an_unstored_event",
		"test_push_that_fills_the_disk_changes_no_ref",
		"test_wal_room_stops_short_of_the_floor",
	};
	char   probe[300], home[300];
	size_t i;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tdir_make(tmp, sizeof(tmp), "disk") == -1)
		return 1;
	snprintf(probe, sizeof(probe), "%s/probe", tmp);
	if (mount_tmpfs(probe, "1m") == -1) {
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			printf("ok - %s # SKIP cannot mount a tmpfs: %s\n",
			    cases[i], strerror(errno));
		tdir_remove(tmp);
		return 0;
	}
	umount2(probe, MNT_DETACH);
	signal(SIGINT, on_fatal_signal);
	signal(SIGTERM, on_fatal_signal);
	signal(SIGABRT, on_fatal_signal);
	signal(SIGSEGV, on_fatal_signal);
	atexit(unmount_all);
	snprintf(home, sizeof(home), "%s/home", tmp);
	if (gt_setup(home) == -1 || (big = malloc(BIG + 1)) == NULL)
		return 1;
	memset(big, 'z', BIG);
	big[BIG] = '\0';

	T_RUN(test_floor_refuses_events_and_pushes_then_recovers);
	T_RUN(test_full_disk_never_acknowledges_an_unstored_event);
	T_RUN(test_push_that_fills_the_disk_changes_no_ref);
	T_RUN(test_wal_room_stops_short_of_the_floor);
	free(big);
	tdir_remove(tmp);
	return t_done();
}
