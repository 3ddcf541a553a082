/*
 * relay_disk.c: relayd's disk-space floor (NGIT_MIN_FREE_DISK_MB).  While
 * the file system of the database (relay_data_path) or of the git data
 * (git_data_path) has less than the floor available, relayd refuses new
 * EVENTs (OK false "error: ...") and pushes (pkt-line ERR), and keeps
 * serving reads; once space returns it accepts again by itself.  Free
 * space comes from statvfs(2), at most once per RELAY_DISK_CHECK_MS and
 * again right after a write failed, never once per event.  Entering and
 * leaving the low state are logged once each.
 */
#include <sys/statvfs.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "relayd.h"

/* The two file systems watched; they may be one. */
enum {
	DISK_DB,
	DISK_GIT,
	DISK_N
};

static const char *const disk_name[DISK_N] = { "database", "git data" };

static struct {
	int	 low;		/* below the floor now */
	int	 checked;	/* at least once */
	int64_t	 at;		/* relay_now_ms() of the check */
	uint64_t avail[DISK_N]; /* bytes, at that check */
	uint64_t refused[2];	/* [0] events, [1] pushes */
} disk;

int
relay_disk_avail(const char *path, uint64_t *out)
{
	struct statvfs sv;

	if (statvfs(path, &sv) == -1)
		return -1;
	*out = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
	return 0;
}

static void
refresh(void)
{
	const char *path[DISK_N] = { relayd->cfg.relay_data_path,
		relayd->cfg.git_data_path };
	uint64_t    floor = (uint64_t)relayd->cfg.min_free_disk_mb << 20;
	int	    i, low = 0, which = -1;

	disk.at = relay_now_ms();
	disk.checked = 1;
	for (i = 0; i < DISK_N; i++) {
		if (relay_disk_avail(path[i], &disk.avail[i]) == -1) {
			/* Unknown is not low: the writes themselves tell. */
			log_debug("statvfs %s: %s", path[i], strerror(errno));
			continue;
		}
		if (floor > 0 && disk.avail[i] < floor && !low) {
			low = 1;
			which = i;
		}
	}
	if (low && !disk.low)
		log_warnx(
		    "low on disk space: the %s file system has %llu MiB free, under the floor of %d MiB; refusing new events and pushes",
		    disk_name[which],
		    (unsigned long long)(disk.avail[which] >> 20),
		    relayd->cfg.min_free_disk_mb);
	else if (!low && disk.low)
		log_info(
		    "disk space is back above %d MiB; accepting events and pushes again",
		    relayd->cfg.min_free_disk_mb);
	disk.low = low;
}

/* 1 if the last look is older than RELAY_DISK_CHECK_MS, or none was. */
static int
stale(void)
{
	return !disk.checked || relay_now_ms() - disk.at >= RELAY_DISK_CHECK_MS;
}

int
relay_disk_low(void)
{
	if (relayd->cfg.min_free_disk_mb == 0)
		return 0;
	if (stale())
		refresh();
	return disk.low;
}

void
relay_disk_recheck(void)
{
	disk.checked = 0;
}

void
relay_disk_refused(int push)
{
	disk.refused[push != 0]++;
}

void
relay_disk_metrics(cJSON *arr)
{
	static const char *const name[DISK_N] = {
		"graspd_relay_disk_free_bytes{path=\"database\"}",
		"graspd_relay_disk_free_bytes{path=\"git\"}",
	};
	int i;

	/* Free space is shown with the floor off too. */
	if (stale())
		refresh();
	relay_metric(arr, "graspd_relay_disk_low", disk.low);
	for (i = 0; i < DISK_N && disk.checked; i++)
		relay_metric(arr, name[i], (double)disk.avail[i]);
	relay_metric(arr, "graspd_relay_disk_refusals_total{what=\"event\"}",
	    (double)disk.refused[0]);
	relay_metric(arr, "graspd_relay_disk_refusals_total{what=\"push\"}",
	    (double)disk.refused[1]);
}
