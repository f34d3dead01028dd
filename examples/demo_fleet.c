/*
 * wms-demo-fleet (./run demo --replicas N): N replicas of a fulfillment
 * service against one WMS during an outage, first with a breaker per
 * process, then with one breaker shared by the fleet through Redis; side
 * by side, what the WMS saw during the outage.
 *
 * The WMS is wms-sim in this process; redis-server is started here on a
 * unix socket in its own temporary directory and stopped by its PID. Each
 * replica is a wms-demo process (--endpoint, --replica, --shared-redis):
 * one order per tick, each call on its own thread, the ledger checked at
 * the end (every order in the WMS exactly once).
 *
 *   wms-demo-fleet [--replicas N] [--tick-ms N]     N 2-8, default 3
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "redis_server.h"
#include "wms_sim.h"
#include "util/num.h"

#define MAXREP 8
#define TICKS 40
#define OUTAGE_FROM 11
#define OUTAGE_TICKS 15

typedef struct phase {
	const char *name;
	int shared;
	uint64_t outage_requests; /* what the WMS saw while it was down */
	uint64_t requests;
	int failed_replicas;
	char lines[MAXREP][256];
} phase;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	for (;;) {
		uint64_t n = now_ns();
		struct timespec ts;
		if (n >= t)
			return;
		ts.tv_sec = (time_t)((t - n) / 1000000000ull);
		ts.tv_nsec = (long)((t - n) % 1000000000ull);
		nanosleep(&ts, NULL);
	}
}

/* Start one replica with its stdout on a pipe (*out_fd) and its stdin on
 * another (*go_fd: a byte starts it). */
static pid_t spawn_replica(const char *demo, const char *url, const char *redis, int id,
			   unsigned tick_ms, int *out_fd, int *go_fd)
{
	char ids[16], ticks[16];
	int fds[2], gfds[2];
	pid_t pid;

	if (pipe(fds) != 0)
		return -1;
	if (pipe(gfds) != 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	snprintf(ids, sizeof(ids), "%d", id);
	snprintf(ticks, sizeof(ticks), "%u", tick_ms);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		close(gfds[0]);
		close(gfds[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(gfds[0], 0);
		close(fds[0]);
		close(fds[1]);
		close(gfds[0]);
		close(gfds[1]);
		if (redis)
			execl(demo, demo, "--endpoint", url, "--replica", ids, "--tick-ms", ticks,
			      "--shared-redis", redis, (char *)NULL);
		else
			execl(demo, demo, "--endpoint", url, "--replica", ids, "--tick-ms", ticks,
			      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	close(gfds[0]);
	*out_fd = fds[0];
	*go_fd = gfds[1];
	return pid;
}

/* Wait (at most 60 s in all) for a replica's "ready" line: its client is
 * made and its shared breaker has joined. */
static int wait_ready(int fd, uint64_t deadline_ns)
{
	char line[16];
	size_t len = 0;

	while (len < sizeof(line) - 1) {
		struct pollfd pf = { fd, POLLIN, 0 };
		uint64_t now = now_ns();
		ssize_t n;
		if (now >= deadline_ns ||
		    poll(&pf, 1, (int)((deadline_ns - now) / 1000000u) + 1) <= 0)
			return -1;
		n = read(fd, line + len, 1);
		if (n != 1)
			return -1;
		if (line[len] == '\n') {
			line[len] = '\0';
			return strcmp(line, "ready") == 0 ? 0 : -1;
		}
		len++;
	}
	return -1;
}

static void read_all(int fd, char *line, size_t size, int id)
{
	char buf[8192];
	size_t len = 0;
	ssize_t n;
	char *p, *save = NULL;

	while ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0 && len < sizeof(buf) - 1)
		len += (size_t)n;
	buf[len] = '\0';
	close(fd);
	snprintf(line, size, "replica %d: no summary (see above)", id);
	for (p = strtok_r(buf, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(p, "replica ", 8))
			snprintf(line, size, "%s", p);
		else if (strstr(p, "CHECK FAILED") || strstr(p, "not confirmed") ||
			 strstr(p, "missing") || strstr(p, "not found"))
			fprintf(stderr, "  [replica %d] %s\n", id, p);
	}
}

/* A phase that cannot go on: the n replicas started so far, then the WMS. */
static void abandon(const pid_t *pids, const int *fds, const int *gos, int n, wms_sim *sim)
{
	int i;
	for (i = 0; i < n; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
		close(fds[i]);
		close(gos[i]);
	}
	wms_sim_stop(sim);
}

static int run_phase(phase *ph, const char *demo, const char *redis, int n, unsigned tick_ms)
{
	wms_sim_options so = WMS_SIM_OPTIONS_INIT;
	wms_sim *sim = NULL;
	pid_t pids[MAXREP];
	int fds[MAXREP], gos[MAXREP], i, status;
	uint64_t t0, before;
	char sched[128];

	so.tick_ms = 1000000; /* orders stay RECEIVED for the whole demo */
	if (wms_sim_start(&sim, &so) != WMS_SIM_OK) {
		fprintf(stderr, "wms-demo-fleet: simulator: %s\n", wms_sim_last_error());
		return -1;
	}
	for (i = 0; i < n; i++) {
		pids[i] = spawn_replica(demo, wms_sim_url(sim), ph->shared ? redis : NULL, i + 1,
					tick_ms, &fds[i], &gos[i]);
		if (pids[i] < 0)
			fprintf(stderr, "wms-demo-fleet: cannot start a replica: %s\n", strerror(errno));
		if (pids[i] < 0 || wait_ready(fds[i], now_ns() + 60000000000ull) != 0) {
			if (pids[i] >= 0) {
				fprintf(stderr, "wms-demo-fleet: replica %d never said ready\n", i + 1);
				i++;
			}
			abandon(pids, fds, gos, i, sim);
			return -1;
		}
	}
	/* every replica is ready: the outage and their ticks count from now */
	snprintf(sched, sizeof(sched), "%u %u hang\n", OUTAGE_FROM * tick_ms - tick_ms / 2,
		 (OUTAGE_FROM + OUTAGE_TICKS) * tick_ms - tick_ms / 2);
	if (wms_sim_set_schedule(sim, sched) != WMS_SIM_OK) {
		fprintf(stderr, "wms-demo-fleet: schedule: %s\n", wms_sim_last_error());
		abandon(pids, fds, gos, n, sim);
		return -1;
	}
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		if (write(gos[i], "g", 1) != 1)
			fprintf(stderr, "wms-demo-fleet: cannot start replica %d\n", i + 1);
		close(gos[i]);
	}
	/* what reaches the WMS between the outage's start and its end */
	sleep_until(t0 + (uint64_t)(OUTAGE_FROM * tick_ms - tick_ms / 2) * 1000000ull);
	before = wms_sim_requests(sim, NULL);
	sleep_until(t0 + (uint64_t)((OUTAGE_FROM + OUTAGE_TICKS) * tick_ms - tick_ms / 2) * 1000000ull);
	ph->outage_requests = wms_sim_requests(sim, NULL) - before;
	for (i = 0; i < n; i++) {
		read_all(fds[i], ph->lines[i], sizeof(ph->lines[i]), i + 1);
		if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			ph->failed_replicas++;
	}
	ph->requests = wms_sim_requests(sim, NULL);
	if (wms_sim_order_count(sim) != (size_t)n * TICKS) {
		fprintf(stderr, "  the WMS holds %zu orders, the replicas' ledgers %d\n",
			wms_sim_order_count(sim), n * TICKS);
		ph->failed_replicas++;
	}
	wms_sim_stop(sim);
	return 0;
}

int main(int argc, char **argv)
{
	phase ph[2] = { { "a breaker per process", 0, 0, 0, 0, { { 0 } } },
			{ "one breaker for the fleet (Redis)", 1, 0, 0, 0, { { 0 } } } };
	char demo[4096], *slash;
	unsigned replicas = 3, tick_ms = 100;
	rs_server rs;
	ssize_t len;
	uint64_t v;
	int i, k, rc = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--replicas") && i + 1 < argc &&
		    wms__parse_uint_str(argv[i + 1], 2, MAXREP, &v) == WMS__NUM_OK) {
			replicas = (unsigned)v;
			i++;
		} else if (!strcmp(argv[i], "--tick-ms") && i + 1 < argc &&
			   wms__parse_uint_str(argv[i + 1], 50, 1000, &v) == WMS__NUM_OK) {
			tick_ms = (unsigned)v;
			i++;
		} else {
			fprintf(stderr, "usage: wms-demo-fleet [--replicas 2-8] [--tick-ms 50-1000]\n");
			return 2;
		}
	}
	len = readlink("/proc/self/exe", demo, sizeof(demo) - 16);
	if (len <= 0)
		return 1;
	demo[len] = '\0';
	slash = strrchr(demo, '/');
	strcpy(slash ? slash + 1 : demo, "wms-demo");
	signal(SIGPIPE, SIG_IGN);
	if (rs_start(&rs, 0) != 0) {
		fprintf(stderr, "wms-demo-fleet: cannot start redis-server (./run installs it)\n");
		return 1;
	}
	printf("libwms fleet demo: %u replicas of a fulfillment service, one WMS, one outage\n",
	       replicas);
	printf("1 tick = %u ms; each replica sends one order per tick for %d ticks; the WMS hangs\n"
	       "from tick %d for %d ticks; every call's deadline is 3 ticks; breaker: 5 consecutive\n"
	       "failures, open 5 ticks, 1 probe. Redis: %s (pid %d)\n\n",
	       tick_ms, TICKS, OUTAGE_FROM, OUTAGE_TICKS, rs.url, (int)rs.pid);
	for (k = 0; k < 2 && rc == 0; k++) {
		printf("== %s ==\n", ph[k].name);
		fflush(stdout);
		if (run_phase(&ph[k], demo, rs.url, (int)replicas, tick_ms) != 0) {
			rc = 1;
			break;
		}
		for (i = 0; i < (int)replicas; i++)
			printf("  %s\n", ph[k].lines[i]);
		printf("  ledger: %s\n\n", ph[k].failed_replicas ? "CHECK FAILED"
				: "every replica's orders in the WMS exactly once");
		if (ph[k].failed_replicas)
			rc = 1;
	}
	rs_stop(&rs);
	if (rc == 0) {
		printf("what the WMS saw while it was down (requests during the outage):\n");
		printf("  %-36s %6" PRIu64 "\n", ph[0].name, ph[0].outage_requests);
		printf("  %-36s %6" PRIu64 "\n", ph[1].name, ph[1].outage_requests);
		printf("  requests in all: %" PRIu64 " vs %" PRIu64 "\n", ph[0].requests,
		       ph[1].requests);
	}
	printf("%s\n", rc ? "fleet demo FAILED" : "fleet demo OK");
	return rc;
}
