/*
 * counter.h: a role's figures declared once.  One row of a role's table
 * gives a figure's key in `graspctl show`, its sample name in the metrics
 * (the STATS snapshot, `graspctl stats` and relayd's /metrics), its type
 * and its help; counters_show() and counters_metrics() write both from
 * the same row, so that the two cannot drift apart.
 */
#ifndef GRASPD_COUNTER_H
#define GRASPD_COUNTER_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* The Prometheus TYPE of a figure: a counter only grows (its family ends
 * in "_total", as the exposition format's naming asks); a gauge moves. */
enum counter_type {
	COUNTER,
	GAUGE,
};

/*
 * One figure: a uint64_t at offset off in the struct a role passes as
 * base.  show is its key in the view (NULL: metrics only), metric its
 * sample name with its labels, as role_metric() takes it (NULL: show
 * only), help the family's "# HELP" text (NULL: relayd makes one from
 * the name).
 */
struct counter {
	const char	 *ct_show;
	const char	 *ct_metric;
	enum counter_type ct_type;
	const char	 *ct_help;
	size_t		  ct_off;
};

/* The number of rows of a static table. */
#define COUNTERS_N(t) (sizeof(t) / sizeof((t)[0]))

/* "counter" or "gauge", as a "# TYPE" line says it. */
const char *counter_type_name(enum counter_type);

/*
 * Adds show:value to the object view for each of the n rows of t that has
 * a show key, in the table's order, reading the values in base.  Exits
 * (fatalx) when out of memory.
 */
void counters_show(cJSON *view, const struct counter *t, size_t n,
    const void *base);

/*
 * Appends [metric, value, type] (and help, when the row has one) to the
 * metrics array for each of the n rows of t that has a metric name, in
 * the table's order, reading the values in base.  label, when not NULL,
 * is one more label put first in each name (`role="relayd"`).  Exits
 * (fatalx) when out of memory.
 */
void counters_metrics(cJSON *metrics, const struct counter *t, size_t n,
    const void *base, const char *label);

#endif
