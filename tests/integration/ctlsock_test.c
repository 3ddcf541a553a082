/*
 * ctlsock_test.c: every process's control socket against a bad client
 * (style.md, "the trust boundary decides"; issue 19).  graspctl and any
 * local program are clients of a control socket, not siblings: garbage,
 * a truncated or lying header, a well-formed message of the wrong type,
 * a request that is not JSON, an unknown command and a GIT_DATA request
 * (syncd's, which has a channel of its own, msg.h) each get an
 * {"ok":false,"error":"..."} answer, and the process keeps its pid;
 * "git-data" is no longer a control command anywhere.
 * Also: "log brief" means the same thing in every process (graspctl(8):
 * the configured level, at most info).
 *
 * One whole graspd (gdproc.h), started at log level debug.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "gdproc.h"
#include "msg.h"
#include "t.h"

/* Ours: how long a process may take to answer one request. */
#define TMO 3000

/* The processes with a control socket, graspd first. */
static const enum role procs[] = { ROLE_SUPERVISOR, ROLE_RELAYD, ROLE_SYNCD,
	ROLE_DISCOVERYD, ROLE_HISTORYD };
#define NPROCS (sizeof(procs) / sizeof(procs[0]))

static struct gdproc *g;
static char	      run[PATH_MAX];

/* Every process's pid now: graspd's own, the roles' from graspctl. */
static int
pids_now(long pids[NPROCS])
{
	char   states[GD_NROLES][16];
	long   rp[GD_NROLES];
	size_t i;
	int    r;

	if (gd_roles_now(g, states, rp) == -1)
		return -1;
	pids[0] = (long)gd_pid(g);
	for (i = 1; i < NPROCS; i++) {
		if ((r = gd_role_index(role_name(procs[i]))) == -1 ||
		    strcmp(states[r], "running") != 0)
			return -1;
		pids[i] = rp[r];
	}
	return 0;
}

/* A header as msg_send() writes it, with the given type and length. */
static void
hdr(struct msg_hdr *h, unsigned type, uint32_t len)
{
	memset(h, 0, sizeof(*h));
	h->mh_magic = MSG_MAGIC;
	h->mh_version = MSG_VERSION;
	h->mh_type = (uint16_t)type;
	h->mh_len = len;
	h->mh_pid = (uint32_t)getpid();
}

/* 1 if rep is {"ok":false,"error":"<something>"}; prints it. */
static int
refused(enum role p, const char *what, cJSON *rep)
{
	int ok;

	ok = rep != NULL && ctl_bool(rep, "ok") == 0 &&
	    ctl_str(rep, "error")[0] != '\0';
	printf("# %s, %s: %s\n", role_name(p), what,
	    rep == NULL ? "no answer" : ctl_str(rep, "error"));
	cJSON_Delete(rep);
	return ok;
}

/* 1 if p answers a status request with ok and pid. */
static int
answers_status(enum role p, long pid)
{
	cJSON *rep;
	int    ok;

	rep = ctl_role(run, p, MSG_CONTROL, "{\"cmd\":\"status\"}", TMO);
	ok = rep != NULL && ctl_bool(rep, "ok") == 1 &&
	    (long)ctl_num(rep, "pid") == pid;
	cJSON_Delete(rep);
	return ok;
}

static void
test_bad_requests_are_answered_and_nobody_exits(void)
{
	static const char   garbage[] = "\x17\xff garbage, no header \x01";
	struct msg_accepted ma;
	struct msg_hdr	    h;
	uint8_t		    raw[sizeof(struct msg_hdr) + 128];
	long		    before[NPROCS], after[NPROCS];
	size_t		    i;
	enum role	    p;

	T_ASSERT(pids_now(before) == 0);
	for (i = 0; i < NPROCS; i++) {
		p = procs[i];
		T_CHECK(refused(p, "garbage",
		    ctl_role_raw(run, p, garbage, sizeof(garbage) - 1, TMO)));
		T_CHECK(refused(p, "three bytes",
		    ctl_role_raw(run, p, "abc", 3, TMO)));
		/* A header that promises 64 bytes, then 10. */
		hdr(&h, MSG_CONTROL, 64);
		memcpy(raw, &h, sizeof(h));
		memcpy(raw + sizeof(h), "{\"cmd\":\"st", 10);
		T_CHECK(refused(p, "truncated",
		    ctl_role_raw(run, p, raw, sizeof(h) + 10, TMO)));
		/* The right length, a wrong magic. */
		hdr(&h, MSG_CONTROL, 2);
		h.mh_magic ^= 0x01010101u;
		memcpy(raw, &h, sizeof(h));
		memcpy(raw + sizeof(h), "{}", 2);
		T_CHECK(refused(p, "bad magic",
		    ctl_role_raw(run, p, raw, sizeof(h) + 2, TMO)));
		/* A type no revision defines. */
		hdr(&h, 0x7fff, 2);
		memcpy(raw, &h, sizeof(h));
		memcpy(raw + sizeof(h), "{}", 2);
		T_CHECK(refused(p, "unknown type",
		    ctl_role_raw(run, p, raw, sizeof(h) + 2, TMO)));
		/* Well-formed messages of the wrong type. */
		T_CHECK(refused(p, "STATS",
		    ctl_role(run, p, MSG_STATS,
			"{\"role\":\"syncd\",\"pid\":1,\"metrics\":[]}", TMO)));
		memset(&ma, 0, sizeof(ma));
		hdr(&h, MSG_ACCEPTED, sizeof(ma));
		memcpy(raw, &h, sizeof(h));
		memcpy(raw + sizeof(h), &ma, sizeof(ma));
		T_CHECK(refused(p, "ACCEPTED",
		    ctl_role_raw(run, p, raw, sizeof(h) + sizeof(ma), TMO)));
		T_CHECK(refused(p, "CONTROL_REPLY",
		    ctl_role(run, p, MSG_CONTROL_REPLY, "{\"ok\":true}", TMO)));
		/* Control requests that are not one. */
		T_CHECK(refused(p, "not JSON",
		    ctl_role(run, p, MSG_CONTROL, "{not json", TMO)));
		T_CHECK(refused(p, "no cmd",
		    ctl_role(run, p, MSG_CONTROL, "[\"status\"]", TMO)));
		T_CHECK(refused(p, "unknown command",
		    ctl_role(run, p, MSG_CONTROL,
			"{\"cmd\":\"frobnicate\",\"args\":[]}", TMO)));
		T_CHECK(refused(p, "args not strings",
		    ctl_role(run, p, MSG_CONTROL,
			"{\"cmd\":\"log\",\"args\":[1]}", TMO)));
		/* GIT_DATA payloads no encoder writes (relayd decodes
		 * them; the others refuse the type). */
		memset(raw, 0x11, sizeof(raw));
		T_CHECK(refused(p, "GIT_DATA truncated",
		    ctl_role_msg(run, p, MSG_GIT_DATA, raw, PUBKEY_LEN, TMO)));
		raw[PUBKEY_LEN] = 4;
		T_CHECK(refused(p, "GIT_DATA over-long",
		    ctl_role_msg(run, p, MSG_GIT_DATA, raw,
			MSG_GIT_DATA_HEAD + 5, TMO)));
		raw[PUBKEY_LEN] = 0;
		T_CHECK(refused(p, "GIT_DATA empty d",
		    ctl_role_msg(run, p, MSG_GIT_DATA, raw, MSG_GIT_DATA_HEAD,
			TMO)));
		raw[PUBKEY_LEN] = 3;
		raw[MSG_GIT_DATA_HEAD + 1] = '\0';
		T_CHECK(refused(p, "GIT_DATA NUL in d",
		    ctl_role_msg(run, p, MSG_GIT_DATA, raw,
			MSG_GIT_DATA_HEAD + 3, TMO)));
		T_CHECK(answers_status(p, before[i]));
	}
	/* Let a role that was going to die on one of them do so. */
	usleep(300 * 1000);
	T_ASSERT(pids_now(after) == 0);
	for (i = 0; i < NPROCS; i++) {
		if (after[i] != before[i])
			printf("# %s: pid %ld -> %ld\n", role_name(procs[i]),
			    before[i], after[i]);
		T_CHECK(after[i] == before[i]);
		T_CHECK(answers_status(procs[i], before[i]));
	}
}

/* Commands a process does not answer are refused by name. */
static void
test_commands_of_another_process_are_refused(void)
{
	uint8_t owner[PUBKEY_LEN], req[MSG_GIT_DATA_MAX];
	cJSON  *rep;
	size_t	i;
	int	n;

	memset(owner, 0x5a, sizeof(owner));

	/* graspd's own, sent to a role. */
	for (i = 1; i < NPROCS; i++)
		T_CHECK(refused(procs[i], "reload",
		    ctl_role(run, procs[i], MSG_CONTROL, "{\"cmd\":\"reload\"}",
			TMO)));
	T_ASSERT((n = msg_git_data_encode(req, owner, "repo")) > 0);
	for (i = 0; i < NPROCS; i++) {
		/* syncd's GIT_DATA has its own channel: every control
		 * socket, relayd's included, refuses it. */
		rep = ctl_role_msg(run, procs[i], MSG_GIT_DATA, req, (size_t)n,
		    TMO);
		T_CHECK(rep != NULL &&
		    strstr(ctl_str(rep, "error"),
			"unexpected GIT_DATA message") != NULL);
		T_CHECK(refused(procs[i], "GIT_DATA", rep));
		/* No longer a control command, relayd's included. */
		T_CHECK(refused(procs[i], "git-data",
		    ctl_role(run, procs[i], MSG_CONTROL,
			"{\"cmd\":\"git-data\",\"args\":[\"a\","
			"\"b\"]}",
			TMO)));
	}
	rep =
	    ctl_role(run, ROLE_RELAYD, MSG_CONTROL, "{\"cmd\":\"show\"}", TMO);
	T_CHECK(ctl_bool(rep, "ok") == 1);
	cJSON_Delete(rep);
}

/* graspctl(8): brief is the configured level (debug here), at most info. */
static void
test_log_brief_means_the_same_everywhere(void)
{
	cJSON *rep;
	size_t i;

	for (i = 0; i < NPROCS; i++) {
		rep = ctl_role(run, procs[i], MSG_CONTROL,
		    "{\"cmd\":\"log\",\"args\":[\"verbose\"]}", TMO);
		T_CHECK(ctl_bool(rep, "ok") == 1);
		T_CHECK(strcmp(ctl_str(rep, "level"), "debug") == 0);
		cJSON_Delete(rep);
		rep = ctl_role(run, procs[i], MSG_CONTROL,
		    "{\"cmd\":\"log\",\"args\":[\"brief\"]}", TMO);
		T_CHECK(ctl_bool(rep, "ok") == 1);
		printf("# %s: log brief -> %s\n", role_name(procs[i]),
		    ctl_str(rep, "level"));
		T_CHECK(strcmp(ctl_str(rep, "level"), "info") == 0);
		cJSON_Delete(rep);
	}
}

int
main(void)
{
	static const char *const env[] = { "NGIT_LOG_LEVEL=debug", NULL };

	signal(SIGPIPE, SIG_IGN);
	if ((g = gd_start(env)) == NULL) {
		printf("not ok - graspd starts\n# 0 passed, 1 failed\n");
		return 1;
	}
	snprintf(run, sizeof(run), "%s/run", gd_dir(g));
	T_RUN(test_bad_requests_are_answered_and_nobody_exits);
	T_RUN(test_commands_of_another_process_are_refused);
	T_RUN(test_log_brief_means_the_same_everywhere);
	gd_free(g);
	return t_done();
}
