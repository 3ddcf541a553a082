/*
 * relay_ckpt.c: relayd's WAL checkpoints, on a thread of their own with a
 * connection of their own, so that copying the WAL into the database
 * file and syncing it never holds the loop.
 *
 * In the loop a checkpoint stalled every client: SQLite's automatic one
 * at DB_WAL_AUTOCHECKPOINT frames ran inside a commit (121-149 ms in the
 * ingest benchmark, every 7,000 events), and the idle one 50 ms after
 * the last commit held the REQs that came right after a burst (56-74
 * ms).  A passive checkpoint on another connection takes no lock the
 * writer needs: commits go on while it copies, and the writer's next
 * transaction starts the WAL over once everything in it was copied.
 *
 * After each commit the loop tells the thread how large the WAL is.  Once
 * it holds RELAY_CKPT_MIN_FRAMES, the thread makes a pass each time
 * RELAY_CKPT_STEP_FRAMES more came (one pass for any number of calls
 * meanwhile): a pass copies each page once however often it changed, and
 * back-to-back passes copied nearly every frame.  Under a steady ingest
 * the passes lag the writer and the WAL never starts over by itself, so
 * at RELAY_CKPT_MAX_FRAMES the loop holds its commits (relay_ckpt_hold())
 * from the end of the thread's pass under way (the hold's pass then has
 * the least to copy) until a pass has copied the whole WAL and synced,
 * and the first commit after that starts the WAL over.  The loop goes
 * on serving meanwhile: the writer checkpointing in its own commit, as
 * before, stalled every REQ for the two fsyncs (100-140 ms each time on a
 * 200,000-event load).
 * The last RELAY_CKPT_NEAR_FRAMES before that limit are copied by
 * back-to-back passes, so that little is left when the hold comes.
 *
 * SQLite keeps a WAL file at the largest size it reached.  After a quiet
 * period (RELAY_CKPT_QUIET_S) the loop says so (relay_ckpt_idle()), and a
 * file left larger than RELAY_CKPT_KEEP_FRAMES by a burst is copied by a
 * pass and then truncated by a TRUNCATE checkpoint.  That one takes the
 * writer's lock, and freeing the file's blocks took 160-250 ms for 450-570
 * MB (ext4 mounted with discard), so it begins only between two commits,
 * and the loop holds its commits meanwhile as it does for a hold, rather
 * than wait for the lock with every client.  It does not wait for
 * readers: while one still reads an older snapshot it tries again later.
 *
 * A WAL file that grows costs the writer: each new block is allocated as
 * its frame is written, and each sync then commits the file system's
 * journal too.  So the thread writes the file out ahead of time, with
 * zeros, to the room wal_room_mb asks (at most RELAY_CKPT_MAX_FRAMES):
 * RELAY_WAL_FILL_STEP at a time, each synced, and only once no commit
 * came for RELAY_WAL_FILL_QUIET_US, at relayd's start and after a
 * truncation.  Zeros written beside a burst's commits cost the thread
 * more than they saved the loop (kept 16,384 frames ahead of the
 * writer's: 7-12% fewer events a second); written before it,
 * the 20,000-event load took 4.6-11% more, the loop 2-4 us less an event.
 * The zeros go only past the file's end, kept apart from the writer's
 * frames by walbuf_fill(); the room stops where the file system would
 * keep less than twice min_free_disk_mb, or than RELAY_WAL_ROOM_SPARE_MB.
 * SQLite removes the WAL file when the database closes, so a clean stop
 * keeps it in SQLite's persistent-WAL mode (relay_ckpt_keep_room()),
 * once the WAL started over at its head: the next open then reads back
 * one frame, where a kept WAL of 160,000 valid frames would all be read
 * and copied again.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include <sqlite3.h>

#include "db.h"
#include "log.h"
#include "relayd.h"
#include "walbuf.h"

static pthread_t       ck_thread;
static int	       ck_started;
static pthread_mutex_t ck_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  ck_cond = PTHREAD_COND_INITIALIZER;
static int	       ck_want; /* a pass is due */
static int	       ck_stop;
static int	       ck_idle;	      /* commits paused: truncate a large WAL */
static int	       ck_idle_job;   /* from that call until it is done */
static int	       ck_idle_tries; /* since the loop's last call */
static int	       ck_truncating; /* the loop holds its commits */
static int	       ck_committing; /* the loop commits during ck_idle_job */
static int	       ck_hold_wanted;	 /* the WAL reached its limit */
static int	       ck_hold;		 /* the loop holds its commits */
static int	       ck_caught;	 /* a pass under the hold copied all */
static int	       ck_caught_frames; /* of a WAL this long */
static sqlite3	      *ck_db;		 /* the thread's alone */
static char	       ck_wal[PATH_MAX]; /* the WAL file's path */
static long long       ck_frame_bytes;	 /* a WAL frame's size */
static long long       ck_room;		 /* bytes the WAL file keeps */
static int	       ck_fill_want;	 /* the room is not whole */
static unsigned	       ck_fill_seen;	 /* ck_commits when last looked */
static unsigned	       ck_commits;	 /* the loop's, read atomically */
/* The loop's alone: */
static int	       ck_idle_seen; /* ck_idle_job may still be on */
static int	       ck_last;	   /* WAL frames when the last pass was asked */
static int64_t	       ck_hold_ms; /* when the WAL reached its limit */
static int64_t	       ck_held_ms; /* when the loop began to hold, or 0 */
static int64_t	       ck_nholds;  /* holds so far, and */
static int64_t	       ck_hold_sum; /* their ms, for the debug log */

/* Under ck_mu: waits us microseconds, or less if signalled or stopping. */
static void
wait_us(long us)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += us / 1000000;
	ts.tv_nsec += us % 1000000 * 1000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	if (!ck_stop)
		pthread_cond_timedwait(&ck_cond, &ck_mu, &ts);
}

/*
 * The thread's step of the WAL's room (relay_ckpt_init()): the next
 * RELAY_WAL_FILL_STEP of zeros past the file's end, synced, so that
 * their blocks and the file's size are on disk before the writer's
 * frames come over them: its syncs then write pages, not the file
 * system's journal.  1 once the room is whole or cannot grow (a full
 * disk, an error: said once), else 0.  Not under ck_mu.
 */
static int
fill_step(void)
{
	struct stat st;
	uint64_t    avail;
	long long   to, size = -1, floor;
	int	    fd;

	/*
	 * Opened each time: SQLite makes the file anew after a close.  Only
	 * the file itself, never what a link there would point to.
	 */
	if ((fd = open(ck_wal, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)) == -1 ||
	    fstat(fd, &st) == -1)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	if (st.st_size >= ck_room) {
		close(fd);
		return 1;
	}
	to = st.st_size + RELAY_WAL_FILL_STEP < ck_room ?
	    st.st_size + RELAY_WAL_FILL_STEP :
	    ck_room;
	/* The room never takes what events and pushes need. */
	floor = 2 * ((long long)relayd->cfg.min_free_disk_mb << 20);
	if (floor < ((long long)RELAY_WAL_ROOM_SPARE_MB << 20))
		floor = (long long)RELAY_WAL_ROOM_SPARE_MB << 20;
	if (relay_disk_avail(ck_wal, &avail) == 0 &&
	    (long long)avail - (to - st.st_size) < floor) {
		log_info("WAL file kept at %lld MiB: the disk keeps twice "
			 "min_free_disk_mb (or %d MiB) free",
		    (long long)(st.st_size >> 20), RELAY_WAL_ROOM_SPARE_MB);
		close(fd);
		return 1;
	}
	if ((size = walbuf_fill(fd, to)) == -1 || fdatasync(fd) == -1)
		goto fail;
	close(fd);
	if (size < ck_room)
		return 0;
	log_debug("checkpoint: the WAL file keeps %lld MiB written",
	    size >> 20);
	return 1;
fail:
	log_warnx("checkpoint: cannot write the WAL file's room %s: %s", ck_wal,
	    strerror(errno));
	if (fd != -1)
		close(fd);
	return 1;
}

/*
 * Under ck_mu: a step of the room once no commit came for
 * RELAY_WAL_FILL_QUIET_US, so that zeros never compete with a burst's
 * own frames (filling beside them cost the loop more than it saved).
 */
static void
fill_room(void)
{
	unsigned c = __atomic_load_n(&ck_commits, __ATOMIC_RELAXED);
	int	 done;

	if (c != ck_fill_seen) {
		ck_fill_seen = c;
		wait_us(RELAY_WAL_FILL_QUIET_US);
		return;
	}
	pthread_mutex_unlock(&ck_mu);
	done = fill_step();
	pthread_mutex_lock(&ck_mu);
	if (done)
		ck_fill_want = 0;
}

/*
 * The thread's part of relay_ckpt_idle(), not under ck_mu.  1 when a
 * commit or a reader was in the way, so that trying later may do.
 */
static int
truncate_wal(void)
{
	struct stat st;
	int64_t	    t0;
	int	    rc, busy, nlog = -1, nckpt = -1;

	if (stat(ck_wal, &st) == -1 ||
	    st.st_size <= RELAY_CKPT_KEEP_FRAMES * ck_frame_bytes ||
	    st.st_size <= ck_room)
		return 0;
	/* Copy first without the writer's lock, which TRUNCATE takes. */
	rc = sqlite3_wal_checkpoint_v2(ck_db, NULL, SQLITE_CHECKPOINT_PASSIVE,
	    &nlog, &nckpt);
	if (rc != SQLITE_OK || nlog < 0 || nckpt != nlog)
		goto out;
	pthread_mutex_lock(&ck_mu);
	/* The next relay_ckpt_hold() holds; a commit under way goes first. */
	ck_truncating = !ck_committing && !ck_stop;
	busy = !ck_truncating;
	pthread_mutex_unlock(&ck_mu);
	if (busy)
		return 1;
	t0 = relay_now_ms();
	/* Without waiting: the loop commits no more, a reader might. */
	sqlite3_busy_timeout(ck_db, 0);
	rc = sqlite3_wal_checkpoint_v2(ck_db, NULL, SQLITE_CHECKPOINT_TRUNCATE,
	    NULL, NULL);
	sqlite3_busy_timeout(ck_db, DB_BUSY_TIMEOUT_MS);
	t0 = relay_now_ms() - t0;
	pthread_mutex_lock(&ck_mu);
	ck_truncating = 0;
	pthread_mutex_unlock(&ck_mu);
	/* The loop flushes what it held (relay_ws.c). */
	lws_cancel_service(relayd->ctx);
	if (rc == SQLITE_OK) {
		log_debug(
		    "checkpoint: WAL file of %lld MB truncated after a burst, commits held %lld ms",
		    (long long)(st.st_size >> 20), (long long)t0);
		/* The room again, for the next burst. */
		pthread_mutex_lock(&ck_mu);
		ck_fill_want = ck_room > 0;
		pthread_mutex_unlock(&ck_mu);
		return 0;
	}
out:
	if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
		if (rc != SQLITE_INTERRUPT)
			log_warnx("checkpoint: %s", sqlite3_errmsg(ck_db));
		return 0;
	}
	log_debug("checkpoint: WAL file of %lld MB kept for now (%s)",
	    (long long)(st.st_size >> 20),
	    rc == SQLITE_OK ? "a reader's snapshot" : "busy");
	return 1;
}

static void *
ckpt_main(void *arg)
{
	int rc, hold, nlog, nckpt, again;

	(void)arg;
	pthread_mutex_lock(&ck_mu);
	for (;;) {
		while (!ck_want && !ck_idle && !ck_fill_want && !ck_stop)
			pthread_cond_wait(&ck_cond, &ck_mu);
		if (ck_stop)
			break;
		if (ck_idle && !ck_want) {
			ck_idle = 0;
			pthread_mutex_unlock(&ck_mu);
			again = truncate_wal();
			pthread_mutex_lock(&ck_mu);
			/* Again after a while, unless commits came back. */
			if (again && ++ck_idle_tries < RELAY_CKPT_IDLE_TRIES) {
				wait_us(RELAY_TRIM_IDLE_US);
				ck_idle = !ck_want;
			}
			ck_idle_job = ck_idle;
			continue;
		}
		if (!ck_want) {
			fill_room();
			continue;
		}
		ck_want = 0;
		hold = ck_hold;
		pthread_mutex_unlock(&ck_mu);
		nlog = nckpt = -1;
		rc = sqlite3_wal_checkpoint_v2(ck_db, NULL,
		    SQLITE_CHECKPOINT_PASSIVE, &nlog, &nckpt);
		/* BUSY: another checkpoint runs; INTERRUPT: stopping. */
		if (rc != SQLITE_OK && rc != SQLITE_BUSY &&
		    rc != SQLITE_INTERRUPT)
			log_warnx("checkpoint: %s", sqlite3_errmsg(ck_db));
		pthread_mutex_lock(&ck_mu);
		/*
		 * The loop asked for a hold: it begins now, right after a
		 * pass, so that the pass under it has the least to copy.
		 */
		if (ck_hold_wanted && !ck_hold) {
			ck_hold = 1;
			ck_caught = 0;
			ck_want = 1;
			continue;
		}
		if (!hold || !ck_hold)
			continue;
		if (rc == SQLITE_OK && nlog >= 0 && nckpt == nlog) {
			ck_caught = 1;
			ck_caught_frames = nlog;
			pthread_mutex_unlock(&ck_mu);
			/* The loop flushes what it held (relay_ws.c). */
			lws_cancel_service(relayd->ctx);
			pthread_mutex_lock(&ck_mu);
			continue;
		}
		/*
		 * A reader's snapshot kept frames back (the roles read for a
		 * moment at a time): try again shortly, not in a spin.
		 */
		wait_us(RELAY_CKPT_RETRY_US);
		ck_want = 1;
	}
	pthread_mutex_unlock(&ck_mu);
	return NULL;
}

int
relay_ckpt_init(const char *path)
{
	long long room;
	int	  rc;

	/*
	 * The default VFS, not walbuf's: this connection only reads the
	 * WAL, which walbuf wrote out before each commit became visible.
	 */
	if (sqlite3_open_v2(path, &ck_db,
		SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
		NULL) != SQLITE_OK) {
		log_warnx("checkpoint connection %s: %s", path,
		    ck_db ? sqlite3_errmsg(ck_db) : "out of memory");
		goto fail;
	}
	snprintf(ck_wal, sizeof(ck_wal), "%s-wal", path);
	if ((ck_frame_bytes = db_page_size(ck_db)) <= 0) {
		log_warnx("checkpoint connection: %s", sqlite3_errmsg(ck_db));
		goto fail;
	}
	ck_frame_bytes += DB_WAL_FRAME_HDR;
	room = (long long)relayd->cfg.wal_room_mb << 20;
	if (room > (long long)RELAY_CKPT_MAX_FRAMES * ck_frame_bytes)
		room = (long long)RELAY_CKPT_MAX_FRAMES * ck_frame_bytes;
	ck_room =
	    room > 0 ? db_wal_room(room, ck_frame_bytes - DB_WAL_FRAME_HDR) : 0;
	ck_fill_want = ck_room > 0;
	/*
	 * It never writes a page of its own, so it needs no cache.  A
	 * checkpoint syncs with its connection's setting: the WAL before it
	 * copies, the database file before the WAL may start over, under
	 * FULL and NORMAL alike (not under OFF); said here, not left to the
	 * library's compiled-in default.
	 */
	if (sqlite3_exec(ck_db,
		"PRAGMA cache_size=-64; PRAGMA synchronous=FULL", NULL, NULL,
		NULL) != SQLITE_OK) {
		log_warnx("checkpoint connection: %s", sqlite3_errmsg(ck_db));
		goto fail;
	}
	sqlite3_busy_timeout(ck_db, DB_BUSY_TIMEOUT_MS);
	if ((rc = proc_thread(&ck_thread, NULL, ckpt_main, NULL,
		 RELAY_CKPT_THREAD)) != 0) {
		log_warnx("cannot start the checkpoint thread: %s",
		    strerror(rc));
		goto fail;
	}
	ck_started = 1;
	return 0;
fail:
	sqlite3_close(ck_db);
	ck_db = NULL;
	return -1;
}

/* Asks the thread for a pass; under ck_mu. */
static void
want_pass(void)
{
	if (!ck_want) {
		ck_want = 1;
		pthread_cond_signal(&ck_cond);
	}
}

void
relay_ckpt_kick(int frames)
{
	if (ck_committing) {
		pthread_mutex_lock(&ck_mu);
		ck_committing = 0;
		pthread_mutex_unlock(&ck_mu);
	}
	if (frames < ck_last)
		ck_last = 0; /* the WAL started over */
	/* Only the loop writes it; the thread reads it for a pause. */
	__atomic_store_n(&ck_commits, ck_commits + 1, __ATOMIC_RELAXED);
	if (!ck_started || frames < RELAY_CKPT_MIN_FRAMES ||
	    (frames - ck_last < RELAY_CKPT_STEP_FRAMES &&
		frames < RELAY_CKPT_MAX_FRAMES - RELAY_CKPT_NEAR_FRAMES))
		return;
	ck_last = frames;
	pthread_mutex_lock(&ck_mu);
	want_pass();
	pthread_mutex_unlock(&ck_mu);
}

/*
 * relay_ckpt_hold()'s part while the thread may still truncate the WAL
 * after a quiet period: 1 while it does, else 0, and then the thread
 * waits for the end of the commit that follows (relay_ckpt_kick()).
 */
static int
idle_hold(void)
{
	pthread_mutex_lock(&ck_mu);
	ck_idle_seen = ck_idle_job;
	ck_committing = ck_idle_job && !ck_truncating;
	pthread_mutex_unlock(&ck_mu);
	return ck_idle_seen && !ck_committing;
}

int
relay_ckpt_hold(int frames)
{
	int64_t now;
	int	held = 0;

	if (!ck_started)
		return 0;
	if (ck_idle_seen && idle_hold())
		return 1;
	if (frames < RELAY_CKPT_MAX_FRAMES && !ck_hold_wanted)
		return 0;
	now = relay_now_ms();
	pthread_mutex_lock(&ck_mu);
	if (!ck_hold_wanted) {
		/* Commits go on until the thread's pass under way ends. */
		ck_hold_wanted = 1;
		ck_hold_ms = now;
		want_pass();
	}
	/* A commit that landed during that pass is not copied yet. */
	if (ck_hold && ck_caught && ck_caught_frames < frames) {
		ck_caught = 0;
		want_pass();
	}
	if (ck_hold) {
		held = !ck_caught && now - ck_hold_ms < RELAY_CKPT_HOLD_MAX_MS;
		if (held && ck_held_ms == 0)
			ck_held_ms = now;
	} else if (now - ck_hold_ms >= RELAY_CKPT_HOLD_MAX_MS)
		ck_caught = 0; /* the thread never began: give up too */
	else
		goto done;
	if (!held) {
		if (!ck_caught)
			log_warnx(
			    "checkpoint: the WAL was not copied in %d ms; committing anyway (%d frames)",
			    RELAY_CKPT_HOLD_MAX_MS, frames);
		ck_hold = ck_hold_wanted = 0;
		ck_nholds++;
		if (ck_held_ms != 0)
			ck_hold_sum += now - ck_held_ms;
		log_debug(
		    "checkpoint: commits held %lld ms, %lld ms after the limit (%lld holds, %lld ms held in all)",
		    (long long)(ck_held_ms ? now - ck_held_ms : 0),
		    (long long)(now - ck_hold_ms), (long long)ck_nholds,
		    (long long)ck_hold_sum);
		ck_held_ms = 0;
	}
done:
	pthread_mutex_unlock(&ck_mu);
	return held;
}

void
relay_ckpt_idle(void)
{
	if (!ck_started)
		return;
	pthread_mutex_lock(&ck_mu);
	ck_idle = ck_idle_job = ck_idle_seen = 1;
	ck_idle_tries = 0;
	pthread_cond_signal(&ck_cond);
	pthread_mutex_unlock(&ck_mu);
}

void
relay_ckpt_keep_room(sqlite3 *db)
{
	int one = 1, nlog = -1, nckpt = -1;

	if (ck_room <= 0)
		return;
	/* The roles' reads are short: wait a little for them, not more. */
	sqlite3_busy_timeout(db, RELAY_ROOM_CLOSE_WAIT_MS);
	if (sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_RESTART,
		&nlog, &nckpt) != SQLITE_OK ||
	    nckpt != nlog)
		goto out;
	/* The WAL starts over at its head, under a new salt. */
	if (db_rewrite_version(db) == -1 ||
	    sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE,
		&nlog, &nckpt) != SQLITE_OK ||
	    nlog < 0 || nlog > RELAY_ROOM_CLOSE_FRAMES)
		goto out;
	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &one) ==
	    SQLITE_OK)
		log_debug("checkpoint: the WAL file and its room kept for the "
			  "next start (%d frames in it)",
		    nlog);
out:
	sqlite3_busy_timeout(db, DB_BUSY_TIMEOUT_MS);
}

void
relay_ckpt_stop(void)
{
	if (!ck_started)
		return;
	pthread_mutex_lock(&ck_mu);
	ck_stop = 1;
	pthread_cond_signal(&ck_cond);
	pthread_mutex_unlock(&ck_mu);
	/* A pass under way ends early: the store's close checkpoints. */
	sqlite3_interrupt(ck_db);
	pthread_join(ck_thread, NULL);
	ck_started = 0;
	sqlite3_close(ck_db);
	ck_db = NULL;
}
