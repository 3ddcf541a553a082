/*
 * relay_web_diff.h: the pure part of relayd's git pages
 * (relay_web_diff.c): the checks of a ref and a path from a URL, git
 * format-patch or unified diff text rendered as HTML, and text escaped
 * for a code view.  No globals, no
 * libwebsockets, no store: a function of its input, unit-tested alone
 * (tests/unit/webdiff_test.c).
 */
#ifndef GRASPD_RELAY_WEB_DIFF_H
#define GRASPD_RELAY_WEB_DIFF_H

#include <stddef.h>

#include "buf.h"

/* Ours: diff lines rendered; past them the rest is counted, not shown. */
#define RELAY_DIFF_LINES_MAX 20000
/* Ours: bytes of HTML the diff's lines may take (same). */
#define RELAY_DIFF_HTML_MAX  (8 * 1024 * 1024)
/* Ours: bytes of one line shown; the rest is cut with a note. */
#define RELAY_DIFF_LINE_MAX  1000
/* Ours: files listed and rendered; past them they are counted. */
#define RELAY_DIFF_FILES_MAX 1000
/* Ours: bytes of a file name kept. */
#define RELAY_DIFF_NAME_MAX  1024

/* What relay_web_diff() found, for a caller's own summary. */
struct relay_diff_stat {
	size_t ds_files;   /* files changed */
	size_t ds_added;   /* lines added */
	size_t ds_removed; /* lines removed */
	size_t ds_lines;   /* diff lines rendered */
	int    ds_cut;	   /* 1 if lines or files were left out */
};

/*
 * Appends to b the diff in the len bytes of text (format-patch mail,
 * "git show" or "git diff" output, or a plain unified diff; any bytes,
 * NULs and malformed hunks included) as HTML without script: a style
 * element, the text before the first file, a summary and the list of
 * files (each a link to #<id>-<n>, id a prefix of [A-Za-z0-9_-] chosen
 * by the caller so that several diffs can share a page; NULL is "d"),
 * then each file's hunks as a table whose rows have class "da" (added),
 * "dr" (removed), "dc" (context), "dh" (hunk header) or "dm" (other),
 * with the old and new line numbers.  Every byte of text is escaped;
 * output is bounded by RELAY_DIFF_LINES_MAX, RELAY_DIFF_HTML_MAX,
 * RELAY_DIFF_LINE_MAX and RELAY_DIFF_FILES_MAX, with a note where it was
 * cut.  Fills *st when st is not NULL.  Never fails (exits if memory
 * runs out).
 */
void relay_web_diff(struct buf *b, const char *text, size_t len, const char *id,
    struct relay_diff_stat *st);

/* Ours: longest ref name and path taken from a URL, in bytes. */
#define RELAY_WEB_REF_MAX  1024
#define RELAY_WEB_PATH_MAX 4096

/*
 * 1 if the n bytes of s are a ref name git check-ref-format accepts (and
 * do not start with '-'), at most RELAY_WEB_REF_MAX; else 0.
 */
int  relay_web_ref_ok(const char *s, size_t n);
/*
 * 1 if the n bytes of s are a path in a tree: "" or segments joined by
 * '/', none empty, "." or "..", no control byte, at most
 * RELAY_WEB_PATH_MAX; else 0.
 */
int  relay_web_path_ok(const char *s, size_t n);
/*
 * Appends the style element of the diff's classes (and of a code view in
 * a <div class="diff">: td.ln for line numbers).
 */
void relay_web_diff_style(struct buf *b);

/*
 * Appends len bytes of s to b for a code view: HTML-escaped, tabs and
 * newlines kept, a carriage return before a newline dropped, and every
 * other control byte (NUL too) shown as U+FFFD, so that what is shown
 * has as many characters as the file.
 */
void relay_web_code_escape(struct buf *b, const char *s, size_t len);

/*
 * 1 if the len bytes of s look binary: a NUL in the first
 * RELAY_DIFF_SNIFF bytes, as git decides (buffer_is_binary()).
 */
#define RELAY_DIFF_SNIFF 8000
int relay_web_is_binary(const char *s, size_t len);

#endif
