/*
 * relay_metrics.c: relayd's /metrics, the Prometheus text exposition of
 * relayd's own counters, the supervisor's role figures, each role's last
 * stats snapshot while it is fresh, relayd's latency histograms and a
 * build_info sample.  Samples of one family are written together under
 * one "# HELP" and one "# TYPE" line, as the format requires.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "role.h"
#include "relayd.h"
#include "version.h"

/* Upper bounds of the histogram buckets, in seconds (+Inf is implied). */
static const double hist_le[RELAY_HIST_BUCKETS] = { 0.001, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };

/* Families whose meaning a derived help would not say, for samples
 * that bring no help of their own (counters_metrics() rows do). */
static const struct {
	const char *name;
	const char *help;
} helps[] = {
	{ "graspd_build_info", "graspd's version, value 1" },
	{ "graspd_role_ready",
	    "1 if the role reported itself ready in its "
	    "last stats snapshot, 0 when none came for three periods" },
	{ "graspd_role_uptime_seconds", "Seconds the role's process has run" },
	{ "graspd_relay_ok_latency_seconds",
	    "From an EVENT message to its "
	    "OK answer" },
	{ "graspd_relay_req_eose_seconds", "From a REQ message to its EOSE" },
	{ "graspd_git_request_duration_seconds",
	    "From a git smart HTTP "
	    "request to the end of its git process, by operation" },
	{ "graspd_git_maintenance_total",
	    "Background repacks of hosted repositories, by result" },
	{ "graspd_git_maintenance_deferred_total",
	    "Background repacks put off because a push ran in the repository" },
	{ "graspd_git_maintenance_running",
	    "1 while a background repack runs" },
	{ "graspd_git_maintenance_seconds_total",
	    "Seconds background repacks took, all together" },
	{ "graspd_git_maintenance_waiting",
	    "Repositories with pushes not yet repacked" },
};

void
relay_hist_observe(struct relay_hist *h, int64_t ms)
{
	double s = ms < 0 ? 0 : (double)ms / 1000.0;
	int    i;

	for (i = 0; i < RELAY_HIST_BUCKETS; i++)
		if (s <= hist_le[i])
			h->rh_bucket[i]++;
	h->rh_count++;
	h->rh_sum += s;
}

/* The family of a sample name: up to its '{'. */
static size_t
family_len(const char *name)
{
	return strcspn(name, "{");
}

/*
 * "# HELP" and "# TYPE" of the family of len bytes at name; help NULL:
 * from helps[], or else made from the name.
 */
static void
family_head(struct buf *b, const char *name, size_t len, const char *type,
    const char *help)
{
	const char *p, *role_end;
	size_t	    i;

	buf_printf(b, "# HELP %.*s ", (int)len, name);
	for (i = 0; help == NULL && i < sizeof(helps) / sizeof(helps[0]); i++)
		if (strlen(helps[i].name) == len &&
		    memcmp(helps[i].name, name, len) == 0)
			help = helps[i].help;
	if (help != NULL)
		buf_adds(b, help);
	else {
		/* graspd_syncd_git_fetches_total: "syncd git fetches". */
		p = name + (strncmp(name, "graspd_", 7) == 0 ? 7 : 0);
		role_end = name + len;
		if (len > 6 && memcmp(name + len - 6, "_total", 6) == 0)
			role_end -= 6;
		for (; p < role_end; p++)
			buf_addc(b, *p == '_' ? ' ' : *p);
	}
	buf_printf(b, "\n# TYPE %.*s %s\n", (int)len, name, type);
}

/* One sample: name with the labels role="role" (if role) and its own. */
static void
sample(struct buf *b, const char *name, const char *role, double v)
{
	const char *brace = strchr(name, '{');

	if (role == NULL)
		buf_adds(b, name);
	else if (brace) {
		buf_add(b, name, (size_t)(brace - name));
		buf_printf(b, "{role=\"%s\",%s", role, brace + 1);
	} else
		buf_printf(b, "%s{role=\"%s\"}", name, role);
	buf_printf(b, " %.17g\n", v);
}

struct sample_src {
	const cJSON *ss_metrics; /* [[name, value], ...] */
	const char  *ss_role;	 /* the role label, NULL: none added */
};

/* The fresh stats snapshots and relayd's own, as sources. */
static int
gather(struct sample_src *src, cJSON *own, int64_t now)
{
	const cJSON *rs;
	int64_t	     at, max_age;
	unsigned     r;
	int	     n = 0;

	max_age = (int64_t)(ROLE_STATS_EXPIRE_PERIODS * 1000 *
	    (relayd->cfg.test ? ROLE_STATS_PERIOD_TEST : ROLE_STATS_PERIOD));
	src[n].ss_metrics = own;
	src[n++].ss_role = "relayd";
	for (r = 0; r < ROLE_COUNT; r++) {
		if (r == ROLE_RELAYD ||
		    (rs = relay_chan_role_stats(r, &at)) == NULL ||
		    now - at > max_age)
			continue;
		src[n].ss_metrics = cJSON_GetObjectItem(rs, "metrics");
		/* The supervisor's samples name their role themselves. */
		src[n++].ss_role = r == ROLE_SUPERVISOR ? NULL : role_name(r);
	}
	return n;
}

/* 1 if some source has a fresh snapshot of role. */
static int
has_source(const struct sample_src *src, int n, const char *role)
{
	int i;

	for (i = 0; i < n; i++)
		if (src[i].ss_role != NULL && strcmp(src[i].ss_role, role) == 0)
			return 1;
	return 0;
}

/*
 * graspd_role_ready 0 for each role without a fresh snapshot, under the
 * family's TYPE line when no source wrote it (head).
 */
static void
stale_ready_samples(struct buf *b, const struct sample_src *src, int n,
    int head)
{
	unsigned r;

	for (r = 0; r < ROLE_COUNT; r++) {
		if (r == ROLE_SUPERVISOR || r == ROLE_RELAYD ||
		    r == ROLE_GRASPCTL || has_source(src, n, role_name(r)))
			continue;
		if (head)
			family_head(b, "graspd_role_ready", 17, "gauge", NULL);
		head = 0;
		sample(b, "graspd_role_ready", role_name(r), 0);
	}
}

/*
 * The TYPE of the sample m, whose family is fl bytes long: its own
 * (counters_metrics()), or by the name: a family ending in "_total" is a
 * counter.
 */
static const char *
sample_type(const cJSON *m, size_t fl)
{
	const char *name = cJSON_GetArrayItem(m, 0)->valuestring;
	const char *type = cJSON_GetStringValue(cJSON_GetArrayItem(m, 2));

	if (type != NULL &&
	    (strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0))
		return type;
	return fl > 6 && strncmp(name + fl - 6, "_total", 6) == 0 ? "counter" :
								    "gauge";
}

/*
 * Every sample of the sources, grouped by family in the order the
 * families first appear.  A role without a fresh snapshot is not ready.
 */
static void
write_samples(struct buf *b, const struct sample_src *src, int n)
{
	const cJSON *m, *nm, *m2, *nm2, *v2;
	int	     i, j, seen, stale_ready = 0;
	size_t	     fl;

	for (i = 0; i < n; i++)
		cJSON_ArrayForEach(m, src[i].ss_metrics) {
			nm = cJSON_GetArrayItem(m, 0);
			if (!cJSON_IsString(nm))
				continue;
			fl = family_len(nm->valuestring);
			/* Written already with an earlier sample? */
			seen = 0;
			for (j = 0; j <= i && !seen; j++)
				cJSON_ArrayForEach(m2, src[j].ss_metrics) {
					if (j == i && m2 == m)
						break;
					nm2 = cJSON_GetArrayItem(m2, 0);
					if (cJSON_IsString(nm2) &&
					    family_len(nm2->valuestring) ==
						fl &&
					    strncmp(nm2->valuestring,
						nm->valuestring, fl) == 0) {
						seen = 1;
						break;
					}
				}
			if (seen)
				continue;
			family_head(b, nm->valuestring, fl, sample_type(m, fl),
			    cJSON_GetStringValue(cJSON_GetArrayItem(m, 3)));
			for (j = i; j < n; j++)
				cJSON_ArrayForEach(m2, src[j].ss_metrics) {
					nm2 = cJSON_GetArrayItem(m2, 0);
					v2 = cJSON_GetArrayItem(m2, 1);
					if (cJSON_IsString(nm2) &&
					    cJSON_IsNumber(v2) &&
					    family_len(nm2->valuestring) ==
						fl &&
					    strncmp(nm2->valuestring,
						nm->valuestring, fl) == 0)
						sample(b, nm2->valuestring,
						    src[j].ss_role,
						    v2->valuedouble);
				}
			/* The family's samples stay in one run. */
			if (fl == strlen("graspd_role_ready") &&
			    strncmp(nm->valuestring, "graspd_role_ready", fl) ==
				0) {
				stale_ready_samples(b, src, n, 0);
				stale_ready = 1;
			}
		}
	if (!stale_ready)
		stale_ready_samples(b, src, n, 1);
}

/* One histogram family; label is "" or `name="value"`. */
static void
write_hist(struct buf *b, const char *family, const char *label,
    const struct relay_hist *h, int head)
{
	const char *sep = *label ? "," : "";
	int	    i;

	if (head)
		family_head(b, family, strlen(family), "histogram", NULL);
	for (i = 0; i < RELAY_HIST_BUCKETS; i++)
		buf_printf(b, "%s_bucket{role=\"relayd\",%s%sle=\"%g\"} %llu\n",
		    family, label, sep, hist_le[i],
		    (unsigned long long)h->rh_bucket[i]);
	buf_printf(b, "%s_bucket{role=\"relayd\",%s%sle=\"+Inf\"} %llu\n",
	    family, label, sep, (unsigned long long)h->rh_count);
	buf_printf(b, "%s_sum{role=\"relayd\"%s%s} %.17g\n", family, sep, label,
	    h->rh_sum);
	buf_printf(b, "%s_count{role=\"relayd\"%s%s} %llu\n", family, sep,
	    label, (unsigned long long)h->rh_count);
}

char *
relay_metrics_text(size_t *len)
{
	static const char *const  op[] = { "upload-pack", "receive-pack",
		 "info-refs" };
	const struct relay_stats *st = &relayd->stats;
	struct sample_src	  src[ROLE_COUNT + 1];
	struct buf		  b = BUF_INIT;
	cJSON			 *own = relay_own_metrics();
	char			  label[64];
	int			  n, i;

	n = gather(src, own, relay_now_ms());
	family_head(&b, "graspd_build_info", 17, "gauge", NULL);
	buf_printf(&b, "graspd_build_info{version=\"%s\"} 1\n", GRASPD_VERSION);
	write_samples(&b, src, n);
	cJSON_Delete(own);
	write_hist(&b, "graspd_relay_ok_latency_seconds", "", &st->ok_latency,
	    1);
	write_hist(&b, "graspd_relay_req_eose_seconds", "", &st->req_eose, 1);
	for (i = 0; i < 3; i++) {
		snprintf(label, sizeof(label), "operation=\"%s\"", op[i]);
		write_hist(&b, "graspd_git_request_duration_seconds", label,
		    &st->git_duration[i], i == 0);
	}
	return buf_release(&b, len);
}
