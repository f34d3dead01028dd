/*
 * wmsctl breaker-sim, in-process: the call-log parser (every rule, with the
 * line numbers of its messages) and the replay's model - the clock set per
 * call, the permit's start moved back by the duration (slow calls), the
 * boundary of the open duration, ignored trials, waiting times.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "wmsctl.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- one line ---------------------------------------------------------- */

static int parse(ctl_sim_call *c, const char *line, char *why, size_t why_size)
{
	memset(c, 0xa5, sizeof(*c));
	why[0] = '\0';
	return ctl_sim_parse_line(c, line, strlen(line), why, why_size);
}

static void good_lines(void **state)
{
	static const struct {
		const char *line;
		uint64_t t_ms, duration_ns;
		wms_outcome outcome;
	} cases[] = {
		{ "1000,ok", 1000, 0, WMS_OUTCOME_SUCCESS },
		{ "0,fail,3000", 0, 3000000000ull, WMS_OUTCOME_FAILURE },
		{ "16000,ignore,0", 16000, 0, WMS_OUTCOME_IGNORED },
		{ "5,ok,0.41", 5, 410000, WMS_OUTCOME_SUCCESS },       /* load writes %.2f */
		{ "5,ok,1.000001", 5, 1000001, WMS_OUTCOME_SUCCESS },  /* 6 decimals: ns */
		{ "7,fail,3600000", 7, 3600000000000ull, WMS_OUTCOME_FAILURE },
		{ "7,fail,3600000.000", 7, 3600000000000ull, WMS_OUTCOME_FAILURE },
		{ "1000000000000,ok,1", 1000000000000ull, 1000000, WMS_OUTCOME_SUCCESS },
		{ "0007,ok,050", 7, 50000000, WMS_OUTCOME_SUCCESS },   /* plain decimal */
		{ "1000,ok,50\r", 1000, 50000000, WMS_OUTCOME_SUCCESS }, /* CRLF */
	};
	char why[160];
	ctl_sim_call c;

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		if (parse(&c, cases[i].line, why, sizeof(why)) != 1)
			fail_msg("'%s' refused: %s", cases[i].line, why);
		assert_int_equal(c.t_ms, cases[i].t_ms);
		assert_int_equal(c.duration_ns, cases[i].duration_ns);
		assert_int_equal(c.outcome, cases[i].outcome);
	}
}

static void skipped_lines(void **state)
{
	static const char *const lines[] = { "", " ", "\t \t", "\r", "# t_ms,outcome,duration_ms",
					     "   # indented comment", "#", "#,,,,,,\x01" };
	char why[160];
	ctl_sim_call c;

	(void)state;
	for (size_t i = 0; i < N(lines); i++)
		if (parse(&c, lines[i], why, sizeof(why)) != 0)
			fail_msg("'%s' should be skipped (%s)", lines[i], why);
}

static void bad_lines(void **state)
{
	static const struct {
		const char *line;
		const char *why; /* the message contains this */
	} cases[] = {
		{ "1000", "no outcome" },
		{ "1000,ok,50,extra", "too many fields" },
		{ "1000,ok,50,", "too many fields" },
		{ ",ok", "t_ms '': expected a whole number" },
		{ "-1,ok", "t_ms '-1'" },
		{ "+1,ok", "t_ms '+1'" },
		{ " 1000,ok", "t_ms ' 1000'" },
		{ "1e3,ok", "t_ms '1e3'" },
		{ "1000.5,ok", "t_ms '1000.5'" },
		{ "1000000000001,ok", "0-1000000000000" },
		{ "99999999999999999999999,ok", "t_ms '99999999999999999999999'" },
		{ "1000,OK", "outcome 'OK': expected ok, fail or ignore" },
		{ "1000,failed", "outcome 'failed'" },
		{ "1000, ok", "outcome ' ok'" },
		{ "1000,", "outcome ''" },
		{ "1000,ok,", "duration_ms '': expected milliseconds 0-3600000" },
		{ "1000,ok,-5", "duration_ms '-5'" },
		{ "1000,ok,1.", "duration_ms '1.'" },
		{ "1000,ok,.5", "duration_ms '.5'" },
		{ "1000,ok,1.1234567", "at most 6 decimals" },
		{ "1000,ok,1.2.3", "duration_ms '1.2.3'" },
		{ "1000,ok,3600001", "duration_ms '3600001'" },
		{ "1000,ok,3600000.001", "duration_ms '3600000.001'" },
		{ "1000,ok,50 ", "duration_ms '50 '" },
		{ "1000,ok,5\r0", "duration_ms '5?0'" }, /* unprintables are not echoed */
		{ "1000,ok,50\r\r", "duration_ms '50?'" },
		{ "t_ms,outcome,duration_ms", "t_ms 't_ms'" }, /* a header is not a comment */
		{ "1000;ok;50", "no outcome" },
		{ "1000,ok,aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  "'aaaaaaaaaaaaaaaaaaaaaaaa...'" }, /* long values are cut */
	};
	char why[160];
	ctl_sim_call c;

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		if (parse(&c, cases[i].line, why, sizeof(why)) != -1)
			fail_msg("'%s' accepted", cases[i].line);
		if (!strstr(why, cases[i].why))
			fail_msg("'%s': message '%s' lacks '%s'", cases[i].line, why, cases[i].why);
	}
	/* an embedded NUL (the length is explicit) */
	assert_int_equal(ctl_sim_parse_line(&c, "1000,ok\0,5", 10, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "NUL"));
}

/* ---- a whole log ------------------------------------------------------- */

/* Read `text` as a call log; the error stream goes to errbuf. */
static int read_log(ctl_sim_call **calls, size_t *n, const char *text, size_t len, char *errbuf,
		    size_t errsize)
{
	FILE *in = fmemopen((void *)text, len, "r");
	FILE *err = fmemopen(errbuf, errsize, "w");
	int rc;

	assert_non_null(in);
	assert_non_null(err);
	memset(errbuf, 0, errsize);
	rc = ctl_sim_read(calls, n, in, "calls.csv", err);
	fclose(in);
	fclose(err);
	return rc;
}

static void read_whole_log(void **state)
{
	static const char text[] = "# header\n\n1000,ok,50\r\n2000,fail,3000\n  # note\n"
				   "2000,ignore\n3000,ok"; /* no final newline */
	ctl_sim_call *calls = NULL;
	char err[256];
	size_t n = 99;

	(void)state;
	assert_int_equal(read_log(&calls, &n, text, strlen(text), err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(n, 4);
	assert_int_equal(calls[0].t_ms, 1000);
	assert_int_equal(calls[1].outcome, WMS_OUTCOME_FAILURE);
	assert_int_equal(calls[2].t_ms, 2000); /* the same time twice is fine */
	assert_int_equal(calls[2].outcome, WMS_OUTCOME_IGNORED);
	assert_int_equal(calls[3].t_ms, 3000);
	free(calls);

	/* empty, or comments only: no calls, not an error */
	assert_int_equal(read_log(&calls, &n, "", 0, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	free(calls);
	assert_int_equal(read_log(&calls, &n, "# nothing\n\n", 11, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	free(calls);

	/* many calls: the array grows */
	{
		size_t want = 5000, len = 0;
		char *big = malloc(want * 16);
		assert_non_null(big);
		for (size_t i = 0; i < want; i++)
			len += (size_t)sprintf(big + len, "%zu,ok,1\n", i);
		assert_int_equal(read_log(&calls, &n, big, len, err, sizeof(err)), 0);
		assert_int_equal(n, want);
		assert_int_equal(calls[want - 1].t_ms, want - 1);
		free(calls);
		free(big);
	}
}

static void read_errors_name_the_line(void **state)
{
	static const struct {
		const char *text;
		const char *message;
	} cases[] = {
		{ "# c\n\n1000,ok\n1000,nope\n",
		  "wmsctl: breaker-sim: calls.csv: line 4: outcome 'nope': expected ok, fail or "
		  "ignore\n" },
		{ "2000,ok\n1999,ok\n",
		  "wmsctl: breaker-sim: calls.csv: line 2: t_ms 1999 is before the previous call's "
		  "2000 (the log must be in time order)\n" },
		{ "1,ok\r\n2,ok,x\r\n", "wmsctl: breaker-sim: calls.csv: line 2: duration_ms 'x': " },
		{ "1,ok\n2,ok", "" }, /* control: fine */
	};
	ctl_sim_call *calls;
	char err[512];
	size_t n;

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		int rc = read_log(&calls, &n, cases[i].text, strlen(cases[i].text), err,
				  sizeof(err));
		if (!cases[i].message[0]) {
			assert_int_equal(rc, 0);
			free(calls);
			continue;
		}
		assert_int_equal(rc, CTL_EXIT_USAGE);
		assert_null(calls);
		assert_int_equal(n, 0);
		if (strncmp(err, cases[i].message, strlen(cases[i].message)) != 0)
			fail_msg("got '%s', expected '%s'", err, cases[i].message);
	}
	/* a line longer than the longest a log needs */
	{
		char text[600];
		memset(text, '1', sizeof(text));
		memcpy(text, "1,ok\n", 5);
		text[sizeof(text) - 1] = '\n';
		assert_int_equal(read_log(&calls, &n, text, sizeof(text), err, sizeof(err)),
				 CTL_EXIT_USAGE);
		assert_string_equal(err, "wmsctl: breaker-sim: calls.csv: line 2: longer than 255 "
					 "bytes\n");
	}
	/* a NUL byte inside a line */
	assert_int_equal(read_log(&calls, &n, "1,ok\n2,o\0k\n", 11, err, sizeof(err)),
			 CTL_EXIT_USAGE);
	assert_non_null(strstr(err, "line 2: contains a NUL byte"));
}

/* ---- the replay -------------------------------------------------------- */

typedef struct replay_out {
	char *text;
	size_t len;
	char *lines[64];
	size_t n_lines;
} replay_out;

static int replay(replay_out *r, const ctl_sim_call *calls, size_t n, const wms_breaker_options *bo)
{
	FILE *out, *err = tmpfile();
	char *p;
	int rc;

	memset(r, 0, sizeof(*r));
	out = open_memstream(&r->text, &r->len);
	assert_non_null(out);
	assert_non_null(err);
	rc = ctl_sim_replay(out, calls, n, bo, err);
	fclose(out);
	fclose(err);
	for (p = r->text; *p && r->n_lines < N(r->lines); ) {
		char *nl = strchr(p, '\n');
		assert_non_null(nl);
		*nl = '\0';
		r->lines[r->n_lines++] = p;
		p = nl + 1;
	}
	return rc;
}

static void line_is(const replay_out *r, size_t i, const char *want)
{
	assert_true(i < r->n_lines);
	if (strcmp(r->lines[i], want) != 0)
		fail_msg("line %zu: '%s', expected '%s'", i + 1, r->lines[i], want);
}

#define CALL(t, o, d) { (t), (uint64_t)(d) * 1000000u, WMS_OUTCOME_##o }

static void consecutive_defaults(void **state)
{
	/* library defaults: 5 consecutive failures, open 30 s, one probe */
	static const ctl_sim_call calls[] = {
		CALL(0, FAILURE, 10), CALL(1000, FAILURE, 10), CALL(2000, FAILURE, 10),
		CALL(3000, FAILURE, 10), CALL(4000, FAILURE, 10), /* 5th: opens */
		CALL(5000, SUCCESS, 10), CALL(33999, SUCCESS, 10), /* open until 34000 */
		CALL(34000, SUCCESS, 10), /* the probe, at the end of the open duration */
		CALL(35000, FAILURE, 10),
	};
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	replay_out r;

	(void)state;
	assert_int_equal(replay(&r, calls, N(calls), &bo), 0);
	assert_int_equal(r.n_lines, N(calls) + 1);
	line_is(&r, 3, "{\"t_ms\":3000,\"permitted\":true,\"state\":\"CLOSED\"}");
	line_is(&r, 4, "{\"t_ms\":4000,\"permitted\":true,\"state\":\"OPEN\"}");
	line_is(&r, 5, "{\"t_ms\":5000,\"permitted\":false,\"state\":\"OPEN\"}");
	line_is(&r, 6, "{\"t_ms\":33999,\"permitted\":false,\"state\":\"OPEN\"}");
	line_is(&r, 7, "{\"t_ms\":34000,\"permitted\":true,\"state\":\"CLOSED\"}");
	line_is(&r, 8, "{\"t_ms\":35000,\"permitted\":true,\"state\":\"CLOSED\"}");
	/* 7 calls made of 10 ms; 2 rejected would have been 20 ms more */
	line_is(&r, 9, "{\"summary\":{\"transitions\":[\"CLOSED\",\"OPEN\",\"HALF_OPEN\","
		       "\"CLOSED\"],\"transition_times_ms\":[4000,34000,34000],\"permitted\":7,"
		       "\"rejected\":2,\"successes\":1,\"failures\":6,\"ignored\":0,\"slow\":0,"
		       "\"waiting_ms\":70,\"waiting_ms_without_breaker\":90,\"calls\":9}}");
	free(r.text);
}

static void slow_calls_by_duration(void **state)
{
	/* window 4, min 4, slow over 1000 ms at 50 %: every call succeeds, but
	 * two of four take longer than a second. 1000 ms exactly is not slow. */
	static const ctl_sim_call calls[] = {
		CALL(0, SUCCESS, 1000), CALL(100, SUCCESS, 1001), CALL(200, SUCCESS, 10),
		CALL(300, SUCCESS, 2500), /* window full: 2 slow of 4 = 50 % -> OPEN */
		CALL(400, SUCCESS, 5),
	};
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	replay_out r;

	(void)state;
	bo.mode = WMS_BREAKER_MODE_COUNT_BASED;
	bo.sliding_window_size = 4;
	bo.minimum_number_of_calls = 4;
	bo.slow_call_duration_ms = 1000;
	bo.slow_call_rate_threshold = 50;
	assert_int_equal(replay(&r, calls, N(calls), &bo), 0);
	line_is(&r, 2, "{\"t_ms\":200,\"permitted\":true,\"state\":\"CLOSED\"}");
	line_is(&r, 3, "{\"t_ms\":300,\"permitted\":true,\"state\":\"OPEN\"}");
	line_is(&r, 4, "{\"t_ms\":400,\"permitted\":false,\"state\":\"OPEN\"}");
	line_is(&r, 5, "{\"summary\":{\"transitions\":[\"CLOSED\",\"OPEN\"],"
		       "\"transition_times_ms\":[300],\"permitted\":4,\"rejected\":1,"
		       "\"successes\":4,\"failures\":0,\"ignored\":0,\"slow\":2,"
		       "\"waiting_ms\":4511,\"waiting_ms_without_breaker\":4516,\"calls\":5}}");
	free(r.text);

	/* control: the same calls all fast never open it */
	{
		ctl_sim_call fast[N(calls)];
		memcpy(fast, calls, sizeof(calls));
		for (size_t i = 0; i < N(fast); i++)
			fast[i].duration_ns = 1000000000u;
		assert_int_equal(replay(&r, fast, N(fast), &bo), 0);
		line_is(&r, 5, "{\"summary\":{\"transitions\":[\"CLOSED\"],"
			       "\"transition_times_ms\":[],\"permitted\":5,\"rejected\":0,"
			       "\"successes\":5,\"failures\":0,\"ignored\":0,\"slow\":0,"
			       "\"waiting_ms\":5000,\"waiting_ms_without_breaker\":5000,"
			       "\"calls\":5}}");
		free(r.text);
	}
}

static void ignored_trial_frees_its_slot(void **state)
{
	/* count window 2, min 2, 50 %, open 1 s, 2 trials */
	static const ctl_sim_call calls[] = {
		CALL(0, FAILURE, 0), CALL(10, FAILURE, 0), /* 100 %: OPEN at 10 */
		CALL(1009, SUCCESS, 0),                      /* still open */
		CALL(1010, IGNORED, 0),                      /* trial: says nothing */
		CALL(1020, SUCCESS, 0), CALL(1030, IGNORED, 0),
		CALL(1040, SUCCESS, 0),                      /* the 2nd counted trial: CLOSED */
		CALL(1050, IGNORED, 0),
	};
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	replay_out r;

	(void)state;
	bo.mode = WMS_BREAKER_MODE_COUNT_BASED;
	bo.sliding_window_size = 2;
	bo.minimum_number_of_calls = 2;
	bo.open_duration_ms = 1000;
	bo.permitted_calls_in_half_open = 2;
	assert_int_equal(replay(&r, calls, N(calls), &bo), 0);
	line_is(&r, 2, "{\"t_ms\":1009,\"permitted\":false,\"state\":\"OPEN\"}");
	line_is(&r, 3, "{\"t_ms\":1010,\"permitted\":true,\"state\":\"HALF_OPEN\"}");
	line_is(&r, 5, "{\"t_ms\":1030,\"permitted\":true,\"state\":\"HALF_OPEN\"}");
	line_is(&r, 6, "{\"t_ms\":1040,\"permitted\":true,\"state\":\"CLOSED\"}");
	line_is(&r, 8, "{\"summary\":{\"transitions\":[\"CLOSED\",\"OPEN\",\"HALF_OPEN\","
		       "\"CLOSED\"],\"transition_times_ms\":[10,1010,1040],\"permitted\":7,"
		       "\"rejected\":1,\"successes\":2,\"failures\":2,\"ignored\":3,\"slow\":0,"
		       "\"waiting_ms\":0,\"waiting_ms_without_breaker\":0,\"calls\":8}}");
	free(r.text);
}

static void fractional_waiting_and_empty_log(void **state)
{
	static const ctl_sim_call calls[] = {
		{ 0, 410000, WMS_OUTCOME_SUCCESS },  /* 0.41 ms */
		{ 1, 1000001, WMS_OUTCOME_SUCCESS }, /* 1.000001 ms */
		{ 2, 590000, WMS_OUTCOME_IGNORED },  /* 0.59 ms */
	};
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	replay_out r;

	(void)state;
	assert_int_equal(replay(&r, calls, N(calls), &bo), 0);
	line_is(&r, 3, "{\"summary\":{\"transitions\":[\"CLOSED\"],\"transition_times_ms\":[],"
		       "\"permitted\":3,\"rejected\":0,\"successes\":2,\"failures\":0,"
		       "\"ignored\":1,\"slow\":0,\"waiting_ms\":2.000001,"
		       "\"waiting_ms_without_breaker\":2.000001,\"calls\":3}}");
	free(r.text);

	assert_int_equal(replay(&r, NULL, 0, &bo), 0);
	assert_int_equal(r.n_lines, 1);
	line_is(&r, 0, "{\"summary\":{\"transitions\":[\"CLOSED\"],\"transition_times_ms\":[],"
		       "\"permitted\":0,\"rejected\":0,\"successes\":0,\"failures\":0,"
		       "\"ignored\":0,\"slow\":0,\"waiting_ms\":0,"
		       "\"waiting_ms_without_breaker\":0,\"calls\":0}}");
	free(r.text);
}

static void time_based_window(void **state)
{
	/* 2 s window, min 3, 50 %: the failures at 0 and 1000 have left the
	 * window (seconds 4-5) by 5000, so 5000's failure is 1 of 3. */
	static const ctl_sim_call calls[] = {
		CALL(0, FAILURE, 0), CALL(1000, FAILURE, 0), CALL(4000, SUCCESS, 0),
		CALL(4500, SUCCESS, 0), CALL(5000, FAILURE, 0), /* 1 of 3: closed */
		CALL(5100, FAILURE, 0),                         /* 2 of 4: OPEN */
	};
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	replay_out r;

	(void)state;
	bo.mode = WMS_BREAKER_MODE_TIME_BASED;
	bo.sliding_window_size = 2;
	bo.minimum_number_of_calls = 3;
	assert_int_equal(replay(&r, calls, N(calls), &bo), 0);
	line_is(&r, 4, "{\"t_ms\":5000,\"permitted\":true,\"state\":\"CLOSED\"}");
	line_is(&r, 5, "{\"t_ms\":5100,\"permitted\":true,\"state\":\"OPEN\"}");
	free(r.text);
}

static void settings_that_do_not_go_together(void **state)
{
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	replay_out r;

	(void)state;
	bo.open_duration_ms = 20000;
	bo.max_open_duration_ms = 10000; /* under open_duration_ms */
	assert_int_equal(replay(&r, NULL, 0, &bo), CTL_EXIT_USAGE);
	assert_int_equal(r.len, 0); /* nothing printed */
	free(r.text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_lines),
		cmocka_unit_test(skipped_lines),
		cmocka_unit_test(bad_lines),
		cmocka_unit_test(read_whole_log),
		cmocka_unit_test(read_errors_name_the_line),
		cmocka_unit_test(consecutive_defaults),
		cmocka_unit_test(slow_calls_by_duration),
		cmocka_unit_test(ignored_trial_frees_its_slot),
		cmocka_unit_test(fractional_waiting_and_empty_log),
		cmocka_unit_test(time_based_window),
		cmocka_unit_test(settings_that_do_not_go_together),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
