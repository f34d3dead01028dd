/* The wms-sim program, as a shell or another process uses it: --port 0 and
 * the port line, GET ?wsdl, POST /control, SIGUSR1, SIGTERM/SIGINT for a
 * clean stop, and its exit codes. The program's path is argv[1]. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "itest.h"

extern char **environ;

static const char *sim_bin;

typedef struct proc {
	pid_t pid;
	int out;            /* read end of its stdout */
	int err;            /* read end of its stderr */
	char url[200];      /* from the "listening on" line */
	char base[200];
} proc;

static void spawn(proc *p, const char *const *args)
{
	char *argv[24];
	int o[2], e[2];
	posix_spawn_file_actions_t fa;
	size_t i;

	memset(p, 0, sizeof(*p));
	argv[0] = (char *)(uintptr_t)sim_bin;
	for (i = 0; args[i] && i < 22; i++)
		argv[i + 1] = (char *)(uintptr_t)args[i];
	argv[i + 1] = NULL;
	assert_int_equal(pipe(o), 0);
	assert_int_equal(pipe(e), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, o[1], 1);
	posix_spawn_file_actions_adddup2(&fa, e[1], 2);
	posix_spawn_file_actions_addclose(&fa, o[0]);
	posix_spawn_file_actions_addclose(&fa, e[0]);
	if (posix_spawn(&p->pid, sim_bin, &fa, NULL, argv, environ) != 0)
		fail_msg("cannot run %s", sim_bin);
	posix_spawn_file_actions_destroy(&fa);
	close(o[1]);
	close(e[1]);
	p->out = o[0];
	p->err = e[0];
}

/* One line of its stdout, within timeout_ms; 0 on EOF or timeout. */
static int read_line(int fd, char *buf, size_t size, uint32_t timeout_ms)
{
	double until = it_now_ms() + timeout_ms;
	size_t n = 0;
	while (n + 1 < size) {
		struct pollfd pf = { fd, POLLIN, 0 };
		double left = until - it_now_ms();
		char ch;
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			return 0;
		if (read(fd, &ch, 1) != 1)
			return 0;
		if (ch == '\n')
			break;
		buf[n++] = ch;
	}
	buf[n] = '\0';
	return 1;
}

/* Everything left on fd (until EOF), NUL-terminated. */
static void read_all(int fd, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t r;
	while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
}

/* Wait for the exit (bounded); returns the exit code, or fails. */
static int wait_exit(proc *p, uint32_t timeout_ms)
{
	double until = it_now_ms() + timeout_ms;
	int status = 0;
	for (;;) {
		pid_t r = waitpid(p->pid, &status, WNOHANG);
		if (r == p->pid)
			break;
		if (r < 0 && errno != EINTR)
			fail_msg("waitpid: %s", strerror(errno));
		if (it_now_ms() > until) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, &status, 0);
			fail_msg("wms-sim did not exit within %u ms", timeout_ms);
		}
		it_sleep_ms(10);
	}
	if (!WIFEXITED(status))
		fail_msg("wms-sim died of signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : -1);
	return WEXITSTATUS(status);
}

static void close_proc(proc *p)
{
	if (p->out > 0)
		close(p->out);
	if (p->err > 0)
		close(p->err);
	p->out = p->err = -1;
}

/* Start it and read "wms-sim listening on URL". */
static void start(proc *p, const char *const *args)
{
	static const char prefix[] = "wms-sim listening on ";
	char line[256];
	spawn(p, args);
	if (!read_line(p->out, line, sizeof(line), 10000u + 4 * it_slack_ms())) {
		char err[1024];
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		read_all(p->err, err, sizeof(err));
		close_proc(p);
		fail_msg("no 'listening' line from wms-sim; stderr: %s", err);
	}
	assert_true(strncmp(line, prefix, sizeof(prefix) - 1) == 0);
	snprintf(p->url, sizeof(p->url), "%.150s", line + sizeof(prefix) - 1);
	assert_true(strncmp(p->url, "http://127.0.0.1:", 17) == 0);
	assert_true(atoi(p->url + 17) > 0);
	assert_non_null(strstr(p->url, "/wms"));
	snprintf(p->base, sizeof(p->base), "%.*s", (int)(strlen(p->url) - 4), p->url);
}

static wms_client *client_for(const proc *p, uint32_t timeout_ms)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_error err;
	o.endpoint = p->url;
	o.timeout_ms = timeout_ms + it_slack_ms();
	o.breaker_options.failure_threshold = 1000;
	if (wms_client_new(&c, &o, &err) != WMS_OK)
		fail_msg("wms_client_new: %s", err.message);
	return c;
}

static void test_serves_and_stops(void **state)
{
	const char *args[] = { "--port", "0", "--quiet", "--tick-ms", "3600000", NULL };
	char url[300], *body = NULL, want[300];
	wms_submit_reply r;
	wms_error err;
	wms_client *c;
	proc p;
	int i, ok = 0;
	(void)state;

	start(&p, args);
	snprintf(url, sizeof(url), "%s?wsdl", p.url);
	assert_int_equal(it_http("GET", url, NULL, NULL, NULL, &body), 200);
	assert_non_null(strstr(body, "<wsdl:definitions"));
	snprintf(want, sizeof(want), "location=\"%s\"", p.url);
	assert_non_null(strstr(body, want));
	free(body);

	c = client_for(&p, 2000);
	assert_int_equal(it_submit(c, "BIN-1", "SKU-1", 2, &r, &err), WMS_OK);
	assert_string_equal(r.wms_reference, "WMS-000001");

	/* Live control from another process. */
	snprintf(url, sizeof(url), "%s/control", p.base);
	assert_int_equal(it_http("POST", url, "application/x-www-form-urlencoded", NULL,
				 "fault=server-fault&op=SubmitOrder", &body),
			 200);
	assert_non_null(strstr(body, "\"SubmitOrder\":{\"kind\":\"server-fault\""));
	free(body);
	assert_int_equal(it_submit(c, "BIN-2", "SKU-1", 1, NULL, &err), WMS_ERR_SOAP_FAULT);
	assert_string_equal(err.fault_code, "Server");
	assert_int_equal(it_http("POST", url, "application/x-www-form-urlencoded", NULL,
				 "fault=warp-drive", &body),
			 400);
	free(body);

	/* SIGUSR1 clears every fault. */
	assert_int_equal(kill(p.pid, SIGUSR1), 0);
	for (i = 0; i < 200 && !ok; i++) {
		ok = it_submit(c, "BIN-2", "SKU-1", 1, NULL, &err) == WMS_OK;
		if (!ok)
			it_sleep_ms(10);
	}
	assert_true(ok);

	snprintf(url, sizeof(url), "%s/stats", p.base);
	assert_int_equal(it_http("GET", url, NULL, NULL, NULL, &body), 200);
	assert_non_null(strstr(body, "\"orders\":2"));
	assert_non_null(strstr(body, "\"fault\":{\"kind\":\"none\""));
	free(body);
	wms_client_free(c);

	assert_int_equal(kill(p.pid, SIGTERM), 0);
	assert_int_equal(wait_exit(&p, 5000u + it_slack_ms()), 0);
	close_proc(&p);
}

static void test_fault_flags_and_sigint(void **state)
{
	const char *args[] = { "--port=0", "--quiet", "--fault", "hang", "--fault-op",
			       "SubmitOrder", NULL };
	const char *sku[] = { "SKU-3" };
	wms_stock_reply *s = NULL;
	wms_error err;
	wms_client *c;
	proc p;
	(void)state;

	start(&p, args);
	c = client_for(&p, 300);
	assert_int_equal(it_submit(c, "BIN-H", "SKU-1", 1, NULL, &err), WMS_ERR_TIMEOUT);
	assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
	assert_int_equal(wms_get_stock_level(&s, c, sku, 1, &err), WMS_OK);
	assert_int_equal(s->levels[0].available, 10000);
	wms_stock_reply_free(s);
	wms_client_free(c);
	assert_int_equal(kill(p.pid, SIGINT), 0);
	assert_int_equal(wait_exit(&p, 5000u + it_slack_ms()), 0);
	close_proc(&p);
}

static void test_schedule_flag(void **state)
{
	const char *path = it_tmp_file("sim.schedule", "# down for a minute\n0 60000 http-503\n");
	const char *args[] = { "--port", "0", "--quiet", "--schedule", path, "--skus", "5",
			       "--on-hand", "7", NULL };
	const char *sku[] = { "SKU-5" };
	char url[300];
	wms_stock_reply *s = NULL;
	wms_error err;
	wms_client *c;
	proc p;
	(void)state;

	start(&p, args);
	c = client_for(&p, 2000);
	assert_int_equal(it_submit(c, "BIN-S", "SKU-1", 1, NULL, &err), WMS_ERR_HTTP);
	assert_int_equal(err.http_status, 503);
	snprintf(url, sizeof(url), "%s/control", p.base);
	assert_int_equal(it_http("POST", url, NULL, NULL, "clear=1", NULL), 200);
	assert_int_equal(wms_get_stock_level(&s, c, sku, 1, &err), WMS_OK);
	assert_int_equal(s->levels[0].on_hand, 7);
	wms_stock_reply_free(s);
	sku[0] = "SKU-6";
	assert_int_equal(wms_get_stock_level(&s, c, sku, 1, &err), WMS_ERR_SOAP_FAULT);
	assert_string_equal(err.wms_code, "UNKNOWN_SKU");
	wms_client_free(c);
	assert_int_equal(kill(p.pid, SIGTERM), 0);
	assert_int_equal(wait_exit(&p, 5000u + it_slack_ms()), 0);
	close_proc(&p);
	it_tmp_cleanup();
}

/* Run it to completion; returns the exit code, stderr (or stdout) in buf. */
static int run(const char *const *args, int want_stdout, char *buf, size_t size)
{
	proc p;
	int code;
	spawn(&p, args);
	read_all(want_stdout ? p.out : p.err, buf, size);
	code = wait_exit(&p, 5000u + it_slack_ms());
	close_proc(&p);
	return code;
}

static void expect_exit(const char *const *args, int code, const char *needle)
{
	char buf[4096];
	int got = run(args, code == 0, buf, sizeof(buf));
	if (got != code || !strstr(buf, needle))
		fail_msg("%s ...: exit %d (want %d), output '%s' (want '%s')", args[0], got, code,
			 buf, needle);
}

static void test_exit_codes(void **state)
{
	const char *help[] = { "--help", NULL };
	const char *version[] = { "--version", NULL };
	const char *bad_port[] = { "--port", "http", NULL };
	const char *big_port[] = { "--port", "65536", NULL };
	const char *unknown[] = { "--warp", "9", NULL };
	const char *bare[] = { "extra", NULL };
	const char *no_value[] = { "--port", NULL };
	const char *bad_fault[] = { "--fault", "melt", NULL };
	const char *op_alone[] = { "--fault-op", "SubmitOrder", NULL };
	const char *refuse_op[] = { "--port", "0", "--fault", "refuse", "--fault-op",
				    "SubmitOrder", NULL };
	const char *zero_tick[] = { "--tick-ms", "0", NULL };
	const char *no_xsd[] = { "--port", "0", "--xsd", "/nonexistent/warehouse.xsd", NULL };
	const char *no_sched[] = { "--port", "0", "--schedule", "/nonexistent/s", NULL };
	const char *bad_bind[] = { "--port", "0", "--bind", "localhost", NULL };
	char port[16];
	const char *taken[] = { "--port", port, NULL };
	wms_sim *sim = it_sim_start(0);
	(void)state;

	expect_exit(help, 0, "usage: wms-sim");
	expect_exit(version, 0, "wms-sim ");
	expect_exit(bad_port, 2, "--port");
	expect_exit(big_port, 2, "--port");
	expect_exit(unknown, 2, "unknown option '--warp'");
	expect_exit(bare, 2, "unknown argument 'extra'");
	expect_exit(no_value, 2, "--port wants a value");
	expect_exit(bad_fault, 2, "unknown fault 'melt'");
	expect_exit(op_alone, 2, "go with --fault");
	expect_exit(refuse_op, 2, "refuse");
	expect_exit(zero_tick, 2, "--tick-ms");
	expect_exit(no_xsd, 1, "/nonexistent/warehouse.xsd");
	expect_exit(no_sched, 1, "/nonexistent/s");
	expect_exit(bad_bind, 1, "localhost");
	snprintf(port, sizeof(port), "%u", (unsigned)wms_sim_port(sim));
	expect_exit(taken, 1, "cannot listen");
	wms_sim_stop(sim);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serves_and_stops),
		cmocka_unit_test(test_fault_flags_and_sigint),
		cmocka_unit_test(test_schedule_flag),
		cmocka_unit_test(test_exit_codes),
	};
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-TO-wms-sim\n", argv[0]);
		return 2;
	}
	sim_bin = argv[1];
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("integration: wms-sim program", tests, NULL, NULL);
}
