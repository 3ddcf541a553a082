/*
 * proc.h: the process skeleton every role is built on (relayd, syncd,
 * discoveryd, historyd): the options (-d, -f FILE, -h, -V), logging, the
 * configuration (exit 78 on an error, through ready.h), the signals, the
 * libwebsockets log, nanomsg descriptors adopted into the loop, the
 * role's control socket and the service loop with the supervisor's
 * reload.  Each role keeps its own libwebsockets context (relayd's
 * serves clients, the others' only dial out) and hands it to the
 * skeleton in p_lws.
 *
 * Life of a process:
 *   proc_start()		options, log, configuration
 *   proc_signals()		TERM/INT stop, HUP reload, PIPE ignored
 *   (the role's context)	p_lws set by the role
 *   proc_control_open()	the control REP socket, bound
 *   proc_run()		the loop, until proc_stop() or a signal
 */
#ifndef GRASPD_PROC_H
#define GRASPD_PROC_H

#include <cjson/cJSON.h>
#include <libwebsockets.h>
#include <pthread.h>
#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ctlcmd.h"
#include "msg.h"

/* One process; one per program, the signal handlers point at it. */
struct proc {
	enum role	    p_role;
	const char	   *p_name;	    /* "relayd", ... */
	const char	   *p_file;	    /* -f FILE, or NULL */
	struct config	   *p_cfg;	    /* the role's, loaded here */
	struct lws_context *p_lws;	    /* set by the role */
	int		    p_sock_control; /* REP, or -1 */
	const ctl_fn	   *p_ctl_fns;	    /* the role's column */
	void		   *p_ctl_arg;
	volatile int	    p_stop;
	int64_t		    p_started_ms; /* monotonic */
};

/*
 * Parses the options (-d foreground, log to stderr, otherwise syslog;
 * -f FILE the configuration; -h; -V), starts the log as the role's name,
 * loads the configuration into cfg and sets its log level.  Exits 0
 * after -h or -V and 78 on a usage or configuration error (the
 * supervisor does not respawn).  p and cfg must stay valid while the
 * process runs.
 */
void proc_start(struct proc *p, int argc, char **argv, enum role role,
    struct config *cfg);

/*
 * Installs the handlers: SIGTERM and SIGINT stop the loop, SIGHUP (the
 * supervisor's reload) re-reads the log level in proc_run(), SIGPIPE is
 * ignored, and SIGCHLD, when chld is not NULL, runs chld.  sa_flags go
 * to sigaction() (SA_RESTART or 0).
 */
void proc_signals(struct proc *p, void (*chld)(int), int sa_flags);

/* Sends libwebsockets' errors and warnings to our log. */
void proc_lws_log(void);

/*
 * Adopts a copy of the nanomsg descriptor fd (NN_RCVFD) into vhost's
 * loop as a raw file of the given protocol, with tag as its wsi's opaque
 * data.  A copy, because libwebsockets closes what it adopted and the
 * original belongs to nanomsg.  Exits 1 on failure.
 */
void proc_adopt(struct lws_vhost *vhost, int fd, const char *protocol,
    intptr_t tag, const char *what);

/*
 * Binds the role's control socket (REP) under the run path and keeps it
 * in p_sock_control; its endpoint goes to ep.  Requests will be answered
 * by fns (the role's column of ctlcmd.h's list, kept by pointer) with
 * arg.  Returns the socket; exits 1 on failure.
 */
int proc_control_open(struct proc *p, const ctl_fn fns[CTL_NCMDS], void *arg,
    char *ep, size_t eplen);

/*
 * Answers the requests waiting on the control socket, at most max (0:
 * no bound), with ctl_serve().  Returns how many were answered; nothing
 * a client sends ends the process.
 */
int proc_control_serve(struct proc *p, int max);

/*
 * The database's path, <NGIT_RELAY_DATA_PATH>/graspd.db, into out.
 * Exits 78 when it does not fit.
 */
void proc_db_path(const struct proc *p, char *out, size_t outlen);

/*
 * Services p_lws until p_stop (a signal or proc_stop()), re-reading the
 * log level after a SIGHUP.  Returns when the loop ends.
 */
void proc_run(struct proc *p);

/* Ends proc_run() after the current pass. */
void proc_stop(struct proc *p);

/*
 * The members every role's `status` answer starts with: role, pid,
 * uptime (s), ready.
 */
void proc_status(const struct proc *p, int ready, cJSON *rep);

/* Seconds since proc_start(). */
int64_t proc_uptime(const struct proc *p);

/* Monotonic milliseconds. */
int64_t proc_now_ms(void);

/*
 * Starts fn(arg) on a thread (attr may be NULL) with every signal blocked,
 * since signals are the loop's, and names it name when not NULL (at most
 * 15 characters).  0, or pthread_create()'s error.
 */
int proc_thread(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
    void *arg, const char *name);

/*
 * 1 while process pid exists and is not a zombie (read from Linux's
 * /proc), else 0; 0 for a pid <= 0.  Never exits.
 */
int proc_alive(pid_t pid);

#endif
