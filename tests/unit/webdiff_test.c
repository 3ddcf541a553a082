/*
 * webdiff_test.c: relayd's diff renderer (relayd/relay_web_diff.c,
 * compiled in) on what git writes (format-patch mail, git show, renames,
 * binary patches, a plain unified diff) and on what a hostile patch
 * author writes: markup in names and lines, hunk counts that lie or do
 * not parse, NULs and control bytes, a line of megabytes, a million
 * lines, thousands of files.  The output must be escaped, bounded and
 * say where it was cut.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../relayd/relay_web_diff.c"
#include "t.h"

static const char patch[] =
    "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n"
    "From: A <a@example.org>\n"
    "Subject: [PATCH] Fix <b>it</b>\n"
    "\n"
    "Body & more.\n"
    "---\n"
    " src/a.c | 3 ++-\n"
    " 1 file changed, 2 insertions(+), 1 deletion(-)\n"
    "\n"
    "diff --git a/src/a.c b/src/a.c\n"
    "index 1234567..89abcde 100644\n"
    "--- a/src/a.c\n"
    "+++ b/src/a.c\n"
    "@@ -10,3 +10,4 @@ int main(void)\n"
    " context\n"
    "-old line\n"
    "+new line\n"
    "+another\n"
    " tail\n"
    "diff --git a/new.txt b/new.txt\n"
    "new file mode 100644\n"
    "--- /dev/null\n"
    "+++ b/new.txt\n"
    "@@ -0,0 +1 @@\n"
    "+hello\n"
    "\\ No newline at end of file\n"
    "-- \n"
    "2.39.5\n";

static char *
render(const char *text, size_t len, struct relay_diff_stat *st)
{
	struct buf b = BUF_INIT;

	relay_web_diff(&b, text, len, "p", st);
	return buf_release(&b, NULL);
}

static int
count(const char *s, const char *what)
{
	int n = 0;

	while ((s = strstr(s, what)) != NULL) {
		n++;
		s += strlen(what);
	}
	return n;
}

/* Only the tags the renderer writes: none of the text's own. */
static int
inert(const char *s)
{
	return strstr(s, "<script") == NULL && strstr(s, "<img") == NULL &&
	    strstr(s, "<b>") == NULL && strstr(s, "href=\"j") == NULL &&
	    strstr(s, "</td></tr></table><") == NULL;
}

static void
format_patch_gives_files_hunks_and_numbers(void)
{
	struct relay_diff_stat st;
	char		      *h = render(patch, sizeof(patch) - 1, &st);

	T_EQ_INT(st.ds_files, 2);
	T_EQ_INT(st.ds_added, 3);
	T_EQ_INT(st.ds_removed, 1);
	T_EQ_INT(st.ds_cut, 0);
	T_CHECK(
	    strstr(h, "2 files changed, <span class=\"ad\">+3</span>") != NULL);
	T_CHECK(strstr(h,
		    "<a href=\"#p-1\">src/a.c</a> <span class=\"ad\">+2"
		    "</span> <span class=\"rm\">&minus;1</span>") != NULL);
	T_CHECK(strstr(h, "<a href=\"#p-2\">new.txt</a>") != NULL);
	T_CHECK(
	    strstr(h, "<div class=\"dfn\" id=\"p-1\">src/a.c</div>") != NULL);
	/* The mail before the first file, escaped. */
	T_CHECK(
	    strstr(h, "Subject: [PATCH] Fix &lt;b&gt;it&lt;/b&gt;") != NULL);
	T_CHECK(strstr(h, "Body &amp; more.") != NULL);
	/* Line numbers from the hunk header. */
	T_CHECK(strstr(h,
		    "<tr class=\"dc\"><td class=\"ln\">10</td><td "
		    "class=\"ln\">10</td><td> context</td></tr>") != NULL);
	T_CHECK(strstr(h,
		    "<tr class=\"dr\"><td class=\"ln\">11</td><td "
		    "class=\"ln\"></td><td>-old line</td></tr>") != NULL);
	T_CHECK(strstr(h,
		    "<tr class=\"da\"><td class=\"ln\"></td><td "
		    "class=\"ln\">12</td><td>+another</td></tr>") != NULL);
	T_CHECK(strstr(h, "<td class=\"ln\">1</td><td>+hello</td>") != NULL);
	T_CHECK(strstr(h,
		    "<tr class=\"dm\"><td class=\"ln\"></td><td class="
		    "\"ln\"></td><td>\\ No newline at end of file") != NULL);
	/* The signature is text again, not a removed line. */
	T_CHECK(strstr(h, "<pre class=\"dmsg\">-- \n2.39.5\n</pre>") != NULL);
	T_EQ_INT(count(h, "class=\"dr\""), 1);
	free(h);
}

static void
plain_unified_diff_and_renames(void)
{
	static const char      u[] = "--- old/x.c\t2020-01-01\n"
				     "+++ new/x.c\t2020-01-02\n"
				     "@@ -1 +1 @@\n"
				     "-a\n"
				     "+b\n";
	static const char      r[] = "diff --git a/one b/two\n"
				     "similarity index 100%\n"
				     "rename from one\n"
				     "rename to two\n";
	struct relay_diff_stat st;
	char		      *h = render(u, sizeof(u) - 1, &st);

	T_EQ_INT(st.ds_files, 1);
	T_EQ_INT(st.ds_added, 1);
	T_CHECK(strstr(h, ">new/x.c</a>") != NULL);
	free(h);
	h = render(r, sizeof(r) - 1, &st);
	T_EQ_INT(st.ds_files, 1);
	T_CHECK(strstr(h, ">two</a>") != NULL);
	T_CHECK(strstr(h, "<td>rename to two</td>") != NULL);
	free(h);
}

static void
markup_in_names_and_lines_is_escaped(void)
{
	static const char evil[] =
	    "diff --git a/<script>alert(1)</script> b/<img src=x "
	    "onerror=alert(1)>\"'.c\n"
	    "--- a/x\n"
	    "+++ b/<img src=x onerror=alert(1)>\"'.c\n"
	    "@@ -1 +1 @@ <script>ctx</script>\n"
	    "-</td></tr></table><script>alert(2)</script>\n"
	    "+<a href=\"javascript:alert(3)\">x</a>&amp;\n";
	char *h = render(evil, sizeof(evil) - 1, NULL);

	T_CHECK(inert(h));
	T_CHECK(strstr(h, "&lt;img src=x onerror=alert(1)&gt;&quot;&#39;.c") !=
	    NULL);
	T_CHECK(strstr(h,
		    "-&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;&lt;script&gt;"
		    "alert(2)") != NULL);
	T_CHECK(strstr(h,
		    "+&lt;a href=&quot;javascript:alert(3)&quot;&gt;x"
		    "&lt;/a&gt;&amp;amp;") != NULL);
	/* The rows are the renderer's own: one table, closed once. */
	T_EQ_INT(count(h, "<table>"), 1);
	T_EQ_INT(count(h, "</table>"), 1);
	free(h);
	/* An id prefix that is not plain is replaced. */
	{
		struct buf b = BUF_INIT;

		relay_web_diff(&b, evil, sizeof(evil) - 1, "\"><script>", NULL);
		T_CHECK(inert(b.b_data));
		T_CHECK(strstr(b.b_data, "id=\"d-1\"") != NULL);
		buf_free(&b);
	}
}

static void
nul_and_control_bytes_are_shown_not_passed(void)
{
	static const char      t[] = "diff --git a/b b/b\n"
				     "--- a/b\n"
				     "+++ b/b\n"
				     "@@ -1,2 +1,2 @@\n"
				     "-a\0b\x01\x1b[31m\x7f\r\n"
				     "+c\td\r\n"
				     " e\r\n";
	struct relay_diff_stat st;
	char		      *h;
	struct buf	       b = BUF_INIT;

	buf_add(&b, "x", 1);
	relay_web_diff(&b, t, sizeof(t) - 1, NULL, &st);
	h = b.b_data;
	T_EQ_INT(st.ds_added, 1);
	T_EQ_INT(st.ds_removed, 1);
	T_EQ_INT(strlen(h), b.b_len); /* no NUL went out */
	T_CHECK(strstr(h, "-a" FFFD "b" FFFD FFFD "[31m" FFFD "</td>") != NULL);
	T_CHECK(strstr(h, "+c\td</td>") != NULL);
	T_CHECK(strstr(h, "\x1b") == NULL);
	buf_free(&b);
}

static void
binary_patches_are_not_shown(void)
{
	static const char      t[] = "diff --git a/img.png b/img.png\n"
				     "new file mode 100644\n"
				     "index 0000000..1111111\n"
				     "GIT binary patch\n"
				     "literal 5\n"
				     "McmZ?wbaHb?00dS7AOHXW\n"
				     "\n"
				     "literal 0\n"
				     "HcmV?d00001\n"
				     "\n"
				     "diff --git a/z.bin b/z.bin\n"
				     "Binary files a/z.bin and b/z.bin differ\n"
				     "diff --git a/t b/t\n"
				     "--- a/t\n"
				     "+++ b/t\n"
				     "@@ -1 +1 @@\n"
				     "-x\n"
				     "+y\n";
	struct relay_diff_stat st;
	char		      *h = render(t, sizeof(t) - 1, &st);

	T_EQ_INT(st.ds_files, 3);
	T_EQ_INT(st.ds_added, 1);
	T_CHECK(strstr(h, "McmZ") == NULL);
	T_EQ_INT(count(h, "Binary file, not shown"), 2);
	T_CHECK(strstr(h, ">img.png</a> <span class=\"cut\">binary") != NULL);
	T_CHECK(strstr(h, "+y</td>") != NULL);
	T_CHECK(relay_web_is_binary("a\0b", 3));
	T_CHECK(!relay_web_is_binary("abc", 3));
	free(h);
}

static void
malformed_hunks_do_not_derail(void)
{
	/* Counts that lie both ways, a header that does not parse, a hunk
	 * before any file header, no final newline. */
	static const char      t[] = "@@ -1,2 +1,2 @@\n"
				     "+orphan\n"
				     "diff --git a/f b/f\n"
				     "--- a/f\n"
				     "+++ b/f\n"
				     "@@ -1,1 +1,1 @@\n"
				     "-a\n"
				     "+b\n"
				     "+c beyond the count\n"
				     "@@ -x,y +z @@\n"
				     "-after a bad header\n"
				     "@@ -4294967295999,99999999999 +1,1000000 @@\n"
				     "-z\n"
				     "@@ -1 +1";
	struct relay_diff_stat st;
	char		      *h = render(t, sizeof(t) - 1, &st);

	T_EQ_INT(st.ds_files, 1);
	T_CHECK(inert(h));
	/* Before any file: text. */
	T_CHECK(strstr(h, "<pre class=\"dmsg\">@@ -1,2 +1,2 @@\n+orphan\n") !=
	    NULL);
	T_CHECK(strstr(h, "c beyond the count") != NULL);
	T_CHECK(strstr(h, "after a bad header") != NULL);
	T_CHECK(strstr(h, "@@ -1 +1") != NULL);
	T_EQ_INT(count(h, "<table>"), count(h, "</table>"));
	T_EQ_INT(count(h, "<pre"), count(h, "</pre>"));
	free(h);
}

static void
huge_lines_and_huge_diffs_are_cut_with_a_note(void)
{
	struct relay_diff_stat st;
	struct buf	       t = BUF_INIT;
	char		      *h, *big, line[RELAY_DIFF_LINE_MAX];
	size_t		       i, n = 4 * 1024 * 1024;

	/* One line of 4 MiB of '<': shown to RELAY_DIFF_LINE_MAX. */
	buf_adds(&t, "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n+");
	if ((big = malloc(n)) == NULL)
		return;
	memset(big, '<', n);
	buf_add(&t, big, n);
	free(big);
	h = render(t.b_data, t.b_len, &st);
	T_CHECK(strlen(h) < 4 * RELAY_DIFF_LINE_MAX + 4096);
	T_CHECK(strstr(h, "more bytes)") != NULL);
	free(h);
	/* A million lines: at most RELAY_DIFF_LINES_MAX of them shown. */
	buf_reset(&t);
	buf_adds(&t,
	    "diff --git a/f b/f\n--- a/f\n+++ b/f\n"
	    "@@ -1,1000000 +1,1000000 @@\n");
	for (i = 0; i < 1000000; i++)
		buf_adds(&t, "+<x>\n");
	h = render(t.b_data, t.b_len, &st);
	T_EQ_INT(st.ds_added, 1000000);
	T_EQ_INT(st.ds_cut, 1);
	T_CHECK(st.ds_lines <= RELAY_DIFF_LINES_MAX);
	T_CHECK(count(h, "<tr") <= RELAY_DIFF_LINES_MAX);
	T_CHECK(strstr(h, "The diff is cut here: ") != NULL);
	free(h);
	/* Text of markup alone, no file: bounded the same way. */
	buf_reset(&t);
	for (i = 0; i < 30000; i++) {
		memset(line, '<', sizeof(line) - 1);
		buf_add(&t, line, sizeof(line) - 1);
		buf_addc(&t, '\n');
	}
	h = render(t.b_data, t.b_len, &st);
	T_CHECK(strlen(h) < RELAY_DIFF_HTML_MAX + 8 * RELAY_DIFF_LINE_MAX);
	T_EQ_INT(st.ds_cut, 1);
	free(h);
	/* Thousands of files: the list and the body stop at the cap. */
	buf_reset(&t);
	for (i = 0; i < 3 * RELAY_DIFF_FILES_MAX; i++)
		buf_printf(&t,
		    "diff --git a/f%zu b/f%zu\n@@ -1 +1 @@\n-a\n+b\n", i, i);
	h = render(t.b_data, t.b_len, &st);
	T_EQ_INT(st.ds_files, 3 * RELAY_DIFF_FILES_MAX);
	T_EQ_INT(st.ds_added, 3 * RELAY_DIFF_FILES_MAX);
	T_EQ_INT(count(h, "<li>"), RELAY_DIFF_FILES_MAX);
	T_CHECK(strstr(h, "2000 more files are not listed.") != NULL);
	free(h);
	buf_free(&t);
}

static void
empty_and_text_only_inputs(void)
{
	struct relay_diff_stat st;
	char		      *h = render("", 0, &st);

	T_EQ_INT(st.ds_files, 0);
	T_CHECK(strstr(h, "0 files changed") != NULL);
	free(h);
	h = render("just a note\n", 12, &st);
	T_CHECK(strstr(h, "<pre class=\"dmsg\">just a note\n</pre>") != NULL);
	free(h);
	/* Blank lines alone (git show's before its diff) make no block. */
	h = render("\n\ndiff --git a/x b/x\n", 20, &st);
	T_CHECK(strstr(h, "<pre") == NULL);
	T_EQ_INT(st.ds_files, 1);
	free(h);
}

static void
code_escape_keeps_characters(void)
{
	struct buf b = BUF_INIT;

	relay_web_code_escape(&b, "a<&>\"'\tb\r\nc\rd\0e\xc3\xa9", 17);
	T_EQ_STR(b.b_data,
	    "a&lt;&amp;&gt;&quot;&#39;\tb\nc" FFFD "d" FFFD "e\xc3\xa9");
	buf_free(&b);
}

/* What git check-ref-format accepts, and no leading '-'. */
static void
ref_names_follow_check_ref_format(void)
{
	static const char *const good[] = { "main", "feat/<b>x</b>", "v1.0",
		"HEAD", "a-b", "a.b/c", "release/2024.1", "x@y" };
	static const char *const bad[] = { "", "-x", "--output=x", "a..b",
		"a/.b", ".a", "a/", "/a", "a//b", "a.lock", "a/b.lock/c",
		"a@{0}", "@", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[",
		"a\\b", "a\tb", "a\x7f", "a.", "main\n" };
	size_t			 i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		T_CHECK(relay_web_ref_ok(good[i], strlen(good[i])));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (relay_web_ref_ok(bad[i], strlen(bad[i])))
			t_fail_at(__FILE__, __LINE__, bad[i]);
	T_CHECK(!relay_web_ref_ok("a\0b", 3));
}

/* A path in a tree: no way out of it, no control byte. */
static void
paths_stay_in_the_tree(void)
{
	static const char *const good[] = { "", "a", "src/main.c", "--output=x",
		"-", "a b/c", "...", "a/..b", ".github/x", "<img src=x>" };
	static const char *const bad[] = { "..", ".", "../x", "a/../b", "a/..",
		"a/./b", "/etc/passwd", "a//b", "a/", "a\nb", "a\x1b", "./a" };
	char			 big[RELAY_WEB_PATH_MAX + 2];
	size_t			 i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!relay_web_path_ok(good[i], strlen(good[i])))
			t_fail_at(__FILE__, __LINE__, good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (relay_web_path_ok(bad[i], strlen(bad[i])))
			t_fail_at(__FILE__, __LINE__, bad[i]);
	T_CHECK(!relay_web_path_ok("a\0b", 3));
	memset(big, 'a', sizeof(big));
	T_CHECK(relay_web_path_ok(big, RELAY_WEB_PATH_MAX));
	T_CHECK(!relay_web_path_ok(big, RELAY_WEB_PATH_MAX + 1));
}

static const struct t_case cases[] = {
	T_CASE(ref_names_follow_check_ref_format),
	T_CASE(paths_stay_in_the_tree),
	T_CASE(format_patch_gives_files_hunks_and_numbers),
	T_CASE(plain_unified_diff_and_renames),
	T_CASE(markup_in_names_and_lines_is_escaped),
	T_CASE(nul_and_control_bytes_are_shown_not_passed),
	T_CASE(binary_patches_are_not_shown),
	T_CASE(malformed_hunks_do_not_derail),
	T_CASE(huge_lines_and_huge_diffs_are_cut_with_a_note),
	T_CASE(empty_and_text_only_inputs),
	T_CASE(code_escape_keeps_characters),
};

T_MAIN(cases)
