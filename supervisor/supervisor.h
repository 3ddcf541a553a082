/*
 * supervisor.h: private header of graspd, the supervisor.  graspd
 * fork+execs the roles (relayd, syncd, discoveryd, historyd), restarts
 * them when they die, and answers graspctl on its control socket.  It
 * parses no network input and writes no events.
 *
 * graspd.c       main, options, daemon mode, pid file, signals, the loop,
 *                start-up and shutdown sequencing, reload, readiness
 *                towards whoever started graspd (daemon parent, systemd)
 * sup_role.c     the role table: fork+exec, readiness pipes, reaping,
 *                stopping a role; applies sup_policy.c's decisions
 * sup_fsm.c      the role life cycle, pure: one table of state x event
 *                giving the next state and the action sup_role.c applies
 * sup_policy.c   the restart policy, pure: the caller passes the clock
 * sup_control.c  the control socket: graspctl's requests
 * sup_priv.c     the privilege drop: roles exec'ed as NGIT_USER, the run
 *                and data directories made theirs without following links
 * sup_stats.c    the supervisor's figures, for graspctl stats and /metrics
 */
#ifndef GRASPD_SUPERVISOR_H
#define GRASPD_SUPERVISOR_H

#include <sys/types.h>

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdarg.h>

#include "config.h"
#include "msg.h"
#include "ready.h"

struct event;
struct event_base;

/*
 * Restart policy, after s6-supervise and nginx's master (aesthetics
 * anchors A3, A4 and section 2).  Ours, not from a NIP or GRASP text.
 */
/* First delay after a fast death; it doubles with each one in a row. */
#define SUP_BACKOFF_MIN	       1.0
/* Longest delay between two automatic starts of a role. */
#define SUP_BACKOFF_MAX	       60.0
/* s6: never two starts of one role closer than this. */
#define SUP_START_GAP	       1.0
/* A role that was ready this long before it died restarts at once. */
#define SUP_STABLE_SECS	       10.0
/* A role that dies sooner after its start (or before ready) died fast. */
#define SUP_FAST_DEATH_SECS    10.0
/* This many fast deaths in a row mark a role failed (s6-permafailon). */
#define SUP_MAX_FAST_DEATHS    5
/* s6 timeout-kill: SIGTERM, then SIGKILL after this many seconds. */
#define SUP_STOP_TIMEOUT       5.0
/* A role neither ready nor making progress this long after its start or
 * its last progress line is stopped (a fast death) ... */
#define SUP_READY_TIMEOUT      60.0
/* ... and one still not ready this many timeouts after its start, whatever
 * its progress (30 minutes: a store too large to rebuild is a fault). */
#define SUP_READY_MAX_TIMEOUTS 30
/* Tests only: the readiness timeout in seconds instead of 60. */
#define SUP_READY_TIMEOUT_ENV  "GRASPD_READY_TIMEOUT"
/* Linux: ports below this need CAP_NET_BIND_SERVICE (by default). */
#define PRIV_PORT_FIRST_FREE   1024

/*
 * Readiness (s6 notification-fd, common/ready.h): a role finds the write
 * end of a pipe in descriptor READY_ENV, writes READY_EXTEND lines while
 * its start-up makes progress and READY_MSG once it has opened the
 * database, rebuilt its state and bound or connected its channels.
 */
#define SUP_READY_FD	3
/* Where the role binaries are, when set (tests, odd installs). */
#define SUP_LIBEXEC_ENV "GRASPD_LIBEXEC"
/* sd_notify(3): the datagram socket of systemd's Type=notify. */
#define SUP_NOTIFY_ENV	"NOTIFY_SOCKET"
/* sysexits(3): a command line error. */
#define SUP_USAGE_EXIT	64

/* The roles, in start order; relayd binds the channels the others use. */
#define SUP_NROLES 4

/*
 * A role's life cycle, one state machine (sup_fsm.c), after s6-supervise's
 * actions[state][event] table.  The state alone says whether the role has
 * a process, whether it is wanted up and which timer runs; sup_fsm.c's
 * table lists every legal transition.
 */
enum sup_state {
	SUP_STOPPED = 0, /* no process, not wanted */
	SUP_HELD,	 /* wanted; start-up: waits for relayd ready */
	SUP_BACKOFF,	 /* wanted, no process; the start timer runs */
	SUP_STARTING,	 /* process, not ready; the readiness timer runs */
	SUP_RUNNING,	 /* process, ready */
	SUP_STOPPING,	 /* SIGTERM sent, not wanted; the kill timer runs */
	SUP_RESTARTING,	 /* SIGTERM sent, started again at its exit */
	SUP_TIMEDOUT,	 /* SIGTERM sent for the readiness timeout: its
			  * exit counts as a death (sup_policy_exit()) */
	SUP_FAILED,	 /* no process; not started until asked */
	SUP_NSTATES
};

/* What happens to a role; sup_role.c turns each into sup_fsm_step(). */
enum sup_event {
	SUP_EV_HOLD = 0,      /* start-up: wait for relayd, then start */
	SUP_EV_START,	      /* graspctl start, relayd ready, reload */
	SUP_EV_STOP,	      /* graspctl stop, shutdown */
	SUP_EV_RESTART,	      /* graspctl restart, reload */
	SUP_EV_START_TIMER,   /* the start timer fired (or a delay of 0) */
	SUP_EV_SPAWNED,	      /* fork+exec succeeded */
	SUP_EV_FORK_FAILED,   /* fork(2) failed: retry later */
	SUP_EV_EXEC_FAILED,   /* the binary cannot be executed */
	SUP_EV_PROGRESS,      /* a READY_EXTEND line */
	SUP_EV_READY,	      /* READY_MSG */
	SUP_EV_READY_TIMEOUT, /* the readiness timer fired */
	SUP_EV_KILL_TIMER,    /* the kill timer fired */
	SUP_EV_EXIT_SHUTDOWN, /* exited; verdict SUP_V_SHUTDOWN */
	SUP_EV_EXIT_STOPPED,  /* exited; verdict SUP_V_STOPPED */
	SUP_EV_EXIT_RESTART,  /* exited; verdict SUP_V_RESTART */
	SUP_EV_EXIT_RESPAWN,  /* exited; verdict SUP_V_RESPAWN */
	SUP_EV_EXIT_FAILED,   /* exited; SUP_V_FAIL_CONFIG or _FAIL_FAST */
	SUP_NEVENTS
};

/* What sup_role.c does on a transition (the table's second column). */
enum sup_action {
	SUP_A_ILLEGAL = 0, /* refused: the state stays, a warning is logged */
	SUP_A_NONE,	   /* nothing beyond the new state */
	SUP_A_HOLD,	   /* reason: waiting for relayd */
	SUP_A_START,	   /* reason cleared, SUP_A_SCHEDULE with no delay */
	SUP_A_SCHEDULE,	   /* start after rl_delay and the start gap */
	SUP_A_SPAWN,	   /* fork+exec; then SPAWNED or a *_FAILED event */
	SUP_A_WATCH,	   /* readiness timer armed */
	SUP_A_RETRY,	   /* start timer armed for SUP_BACKOFF_MAX */
	SUP_A_EXTEND,	   /* readiness timer armed again */
	SUP_A_READY,	   /* readiness timer stopped, ready time noted */
	SUP_A_TERM,	   /* SIGTERM, kill timer armed */
	SUP_A_TIMEOUT,	   /* reason: not ready in time; SUP_A_TERM */
	SUP_A_KILL,	   /* SIGKILL to its process group */
	SUP_A_CANCEL,	   /* start timer stopped, reason cleared */
	SUP_A_FAIL,	   /* start timer stopped, failure logged */
};

struct sup_role {
	const char    *rl_name;
	enum role      rl_id;
	enum sup_state rl_state;       /* changed by sup_fsm_step() only */
	pid_t	       rl_pid;	       /* -1 when no process */
	double	       rl_started;     /* monotonic time of the last start */
	double	       rl_ready;       /* ... of its readiness, 0 if none */
	double	       rl_delay;       /* SUP_A_SCHEDULE: seconds to wait */
	unsigned       rl_starts;      /* processes started */
	unsigned       rl_fast_deaths; /* in a row */
	int	       rl_ready_fd;    /* our end of the readiness pipe */
	char	       rl_ready_buf[READY_ERROR_MAX + 1];
	char	       rl_error[READY_ERROR_MAX]; /* its ERROR= line */
	size_t	       rl_ready_len;
	struct event  *rl_ready_ev;
	struct event  *rl_start_timer; /* backoff, start gap */
	struct event  *rl_ready_timer; /* SUP_READY_TIMEOUT */
	struct event  *rl_kill_timer;  /* SUP_STOP_TIMEOUT */
	int	       rl_last_status; /* waitpid(2)'s, -1 before an exit */
	char	       rl_reason[256]; /* why it is in its state */
};

struct supervisor {
	struct config	   sv_cfg;
	char		  *sv_conffile; /* absolute path, or NULL */
	int		   sv_foreground;
	char		   sv_libexec[PATH_MAX];
	struct event_base *sv_base;
	struct sup_role	   sv_roles[SUP_NROLES];
	int		   sv_devnull; /* roles' standard input */
	int		   sv_ctl;     /* nanomsg REP, -1 if none */
	struct event	  *sv_ctl_ev;
	struct event	  *sv_progress_ev;
	double		   sv_started;	     /* monotonic */
	int		   sv_booting;	     /* until readiness reported */
	int		   sv_shutdown;	     /* stopping everything */
	int		   sv_exit;	     /* status when the loop ends */
	int		   sv_report_fd;     /* daemon mode: the parent */
	char		  *sv_notify;	     /* NOTIFY_SOCKET, or NULL */
	double		   sv_ready_timeout; /* SUP_READY_TIMEOUT */
	char		   sv_pidfile[PATH_MAX];
	int		   sv_pidfd;
};

extern struct supervisor *sv;

/* graspd.c */
/* Seconds on the monotonic clock. */
double	      sup_now(void);
/*
 * libevent's event_new() and event_free() on the supervisor's base:
 * sup_event_new() never returns NULL (allocation failure is fatal);
 * sup_event_free() deletes the event and frees it, and takes NULL.
 */
struct event *sup_event_new(int fd, short events,
    void (*cb)(int, short, void *), void *arg);
void	      sup_event_free(struct event *);
/*
 * Asks for the start-up and shutdown sequencing to be looked at again
 * from the event loop, after a role changed state.  Never recurses.
 */
void	      sup_progress(void);
/*
 * Stops every role (relayd last) and then leaves the loop; graspd exits
 * with status.  Calling it again only keeps the first status.
 */
void	      sup_shutdown(int status);
/*
 * Re-reads the configuration (same file, same environment).  On an error
 * keeps everything as it is and returns -1 with the reason in err.  On
 * success returns 0 and sets *changed: when the effective configuration
 * differs, the roles its changed keys need (config_key_roles()) are
 * restarted, wanted or failed ones; a changed log_level alone is sent to
 * the running roles with SIGHUP, which re-read it without a restart.
 */
int	      sup_reload(int *changed, char *err, size_t errlen);

/* sup_role.c */
/* Sets up the table: every role stopped, its timers created. */
void		 sup_roles_init(void);
/* Releases the table's events and descriptors (processes are gone). */
void		 sup_roles_free(void);
/* The role called name, or NULL. */
struct sup_role *sup_role_find(const char *name);
struct sup_role *sup_role_get(enum role);
/* Starts after the first, as graspctl and /metrics show them. */
unsigned	 sup_role_restarts(const struct sup_role *);
/*
 * Start-up: the role waits for relayd's readiness (SUP_HELD); the first
 * sup_role_start() then starts it.
 */
void		 sup_role_hold(struct sup_role *);
/*
 * Wants the role up: starts it now, or after the start gap.  Clears a
 * failed state and the fast-death count.  Nothing if it runs already; a
 * stop in progress turns into a restart.
 */
void		 sup_role_start(struct sup_role *);
/* Wants the role down: SIGTERM, SIGKILL after SUP_STOP_TIMEOUT. */
void		 sup_role_stop(struct sup_role *);
/* Stops the role if it runs, then starts it without backoff. */
void		 sup_role_restart(struct sup_role *);
/* Reaps every exited child (SIGCHLD) and applies the restart policy. */
void		 sup_reap(void);
/* Number of roles with a live process. */
int		 sup_roles_alive(void);
/* Seconds the role's current process has run, 0 if none. */
double		 sup_role_uptime(const struct sup_role *);

/* sup_policy.c */
/* What a role's exit leads to (sup_policy_exit()). */
enum sup_verdict {
	SUP_V_SHUTDOWN,	   /* graspd stops everything: stays stopped */
	SUP_V_STOPPED,	   /* not wanted: stopped on request */
	SUP_V_RESTART,	   /* an asked-for restart: start it now */
	SUP_V_RESPAWN,	   /* it died: start it after sd_delay */
	SUP_V_FAIL_CONFIG, /* exited CONFIG_EXIT: failed, not restarted */
	SUP_V_FAIL_FAST,   /* SUP_MAX_FAST_DEATHS fast deaths: failed */
};

/* A role's history at the exit of its process; times on sup_now()'s clock. */
struct sup_exit {
	int	 se_status;	 /* waitpid(2)'s status */
	double	 se_started;	 /* its last start */
	double	 se_ready;	 /* its readiness, 0 if never ready */
	unsigned se_fast_deaths; /* fast deaths in a row before this */
	int	 se_want;	 /* keep it running (sup_fsm_wanted()) */
	int	 se_restart;	 /* this exit is a restart (SUP_RESTARTING) */
	int	 se_shutdown;	 /* graspd is shutting down */
};

struct sup_decision {
	enum sup_verdict sd_verdict;
	double		 sd_delay;	 /* SUP_V_RESPAWN: seconds, 0 = now */
	unsigned	 sd_fast_deaths; /* the role's count from now on */
};

/*
 * The restart policy for a role whose process exited at now: shutdown
 * and stop requests first, then an asked-for restart (at once, count
 * cleared), then exit CONFIG_EXIT (failed).  Otherwise a role ready for
 * SUP_STABLE_SECS restarts at once with its count cleared; one that died
 * before ready or within SUP_FAST_DEATH_SECS of its start died fast: the
 * delay is SUP_BACKOFF_MIN doubled for each earlier fast death in a row,
 * at most SUP_BACKOFF_MAX, and the SUP_MAX_FAST_DEATHS-th marks it
 * failed; any other death restarts after SUP_BACKOFF_MIN with the count
 * cleared.  Pure; the start gap is sup_policy_start_delay()'s.
 */
void   sup_policy_exit(const struct sup_exit *, double now,
      struct sup_decision *);
/* 1 if the waitpid(2) status is exit CONFIG_EXIT (never respawned). */
int    sup_policy_config_exit(int status);
/*
 * The waitpid(2) status as graspctl shows a last exit: "exited 1",
 * "killed by signal 9", "" for -1 (no exit yet), in out (outlen bytes).
 */
void   sup_policy_exit_text(int status, char *out, size_t outlen);
/*
 * The delay before a start wanted after delay seconds: never within
 * SUP_START_GAP of the role's last start at started (s6), when it was
 * spawned at all.  <= 0 means now.
 */
double sup_policy_start_delay(int spawned, double started, double now,
    double delay);
/*
 * After a progress line of a role started at started and not ready yet:
 * seconds until its next readiness timeout (timeout, less when fewer
 * than that are left of SUP_READY_MAX_TIMEOUTS timeouts after its
 * start), or 0 when none are left and the running timeout stands.
 */
double sup_policy_ready_wait(double started, double now, double timeout);

/* sup_fsm.c */
/*
 * The life cycle's table: event ev in state *s.  Sets *s to the next
 * state and returns the action to apply, or returns SUP_A_ILLEGAL and
 * leaves *s alone when the table refuses ev in *s.  Pure.
 */
enum sup_action sup_fsm_step(enum sup_state *s, enum sup_event ev);
/* "starting", "running", ... as graspctl shows them ("unknown" if bad). */
const char     *sup_state_name(enum sup_state);
/* "start", "exit-respawn", ... for logs and tests ("unknown" if bad). */
const char     *sup_event_name(enum sup_event);
/* 1 if a role in state s has a process. */
int		sup_fsm_has_process(enum sup_state s);
/* 1 if a role in state s is wanted up (kept running, restarted). */
int		sup_fsm_wanted(enum sup_state s);
/* 1 if a role in state s was sent SIGTERM and is waited for. */
int		sup_fsm_terminating(enum sup_state s);
/* The exit event of a verdict of sup_policy_exit(). */
enum sup_event	sup_fsm_exit_event(enum sup_verdict v);
/*
 * The restart policy's view of a role in state s at its exit: se_want
 * and se_restart of struct sup_exit.
 */
void		sup_fsm_exit_input(enum sup_state s, struct sup_exit *e);

/* sup_control.c */
/*
 * Binds the control socket at chan_control_endpoint(run_path,
 * ROLE_SUPERVISOR), adds it to the loop and opens the stats push
 * (sup_stats_open()).  Returns 0, or -1 with the reason in err.
 */
int  sup_control_open(char *err, size_t errlen);
/* Closes the control socket and the stats push (sup_stats_close()). */
void sup_control_close(void);

/* sup_stats.c */
/*
 * Appends the supervisor's samples (counter.h) to the array metrics.
 * Exits (fatalx) when out of memory.
 */
void	    sup_stats_metrics(cJSON *metrics);
/* Adds the supervisor's figures that show and status list to obj. */
void	    sup_stats_show(cJSON *obj);
/* Adds the figures of role r that status lists to obj. */
void	    sup_stats_role_show(const struct sup_role *r, cJSON *obj);
/*
 * Connects the stats push to relayd's stats channel and sends a snapshot
 * now and every ROLE_STATS_PERIOD.  0, or -1 with the reason in err.
 */
int	    sup_stats_open(char *err, size_t errlen);
/* Stops the snapshots and closes the push; safe to call twice. */
void	    sup_stats_close(void);
/* sup_priv.c */
/*
 * Decides whether the roles drop privileges (graspd started as root,
 * NGIT_USER an existing user other than root) and, if so, makes the run
 * directory the user's with mode 0700 and the data directories the
 * user's (created if missing; owner and mode set on a descriptor opened
 * without following links), then checks from a child running as the
 * user that relay_data_path, its database and key files, git_data_path
 * and the repositories in it (their objects and refs directories, a
 * bounded scan) are the user's to read and write.  Call once, before the
 * control socket and the first role.  Returns 0, or -1 with the reason
 * in err: an unknown user other than the default, a chown that failed,
 * a path the user cannot use (its owner and the chown to run).
 */
int	    sup_priv_init(char *err, size_t errlen);
/*
 * Around the bind of graspd's socket in the run directory, which the
 * roles' user owns: until sup_priv_bind_end(old), files this thread
 * creates are the user's (setfsuid(2)) with mode 0600, or, without a
 * privilege drop, graspd's with mode 0660, so that no chown or chmod
 * by name follows a link planted there.  Returns the umask to restore.
 */
mode_t	    sup_priv_bind_begin(void);
void	    sup_priv_bind_end(mode_t old);
/* The uid that owns graspd's socket: the roles' user, or graspd's. */
uid_t	    sup_priv_uid(void);
/* "HOME=<the user's home>" for the roles' environment, or NULL. */
const char *sup_priv_home(void);
/*
 * In a forked child before exec: umask 077 and the roles' user, keeping
 * only CAP_NET_BIND_SERVICE (ambient, so that it survives exec) when
 * bind_cap is set.  Async-signal-safe.  0, or -1 with errno; nothing
 * when privileges are not dropped.
 */
int	    sup_priv_child(int bind_cap);

#endif
