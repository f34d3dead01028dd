/* A redis-server per test (redis_server.h). */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "redis_server.h"

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

redisContext *rs_connect(const rs_server *s)
{
	struct timeval tv = { 2, 0 };
	redisContext *c = s->tcp ? redisConnectWithTimeout("127.0.0.1", s->port, tv)
				 : redisConnectUnixWithTimeout(s->sock, tv);
	if (!c || c->err) {
		if (c)
			redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	return c;
}

redisReply *rs_cmd(const rs_server *s, const char *fmt, ...)
{
	redisContext *c = rs_connect(s);
	redisReply *r;
	va_list ap;

	if (!c)
		return NULL;
	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	redisFree(c);
	return r;
}

static int spawn(rs_server *s)
{
	const char *bin = getenv("WMS_REDIS_SERVER");
	char port[16], log[160];
	int i;

	if (!bin || !*bin)
		bin = "redis-server";
	snprintf(port, sizeof(port), "%d", s->tcp ? s->port : 0);
	snprintf(log, sizeof(log), "%s/redis.log", s->dir);
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		/* a test that fails (cmocka leaves the test by longjmp) or dies
		 * takes its server with it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (s->tcp)
			execlp(bin, bin, "--port", port, "--bind", "127.0.0.1", "--save", "",
			       "--appendonly", "no", "--logfile", log, "--dir", s->dir, (char *)NULL);
		else
			execlp(bin, bin, "--port", "0", "--unixsocket", s->sock, "--save", "",
			       "--appendonly", "no", "--logfile", log, "--dir", s->dir, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 500; i++) { /* up to 5 s */
		redisReply *r;
		int status;
		if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
			s->pid = 0;
			return -1; /* it exited: the port was taken, or no binary */
		}
		r = rs_cmd(s, "PING");
		if (r) {
			int ok = r->type == REDIS_REPLY_STATUS;
			freeReplyObject(r);
			if (ok)
				return 0;
		}
		sleep_ms(10);
	}
	return -1;
}

int rs_start(rs_server *s, int tcp)
{
	int tries;

	memset(s, 0, sizeof(*s));
	s->tcp = tcp;
	snprintf(s->dir, sizeof(s->dir), "/tmp/wms-redis-XXXXXX");
	if (!mkdtemp(s->dir))
		return -1;
	snprintf(s->sock, sizeof(s->sock), "%s/redis.sock", s->dir);
	for (tries = 0; tries < 5; tries++) {
		if (tcp)
			s->port = free_port();
		if (spawn(s) == 0) {
			if (tcp)
				snprintf(s->url, sizeof(s->url), "redis://127.0.0.1:%d/0", s->port);
			else
				snprintf(s->url, sizeof(s->url), "unix://%s", s->sock);
			return 0;
		}
		if (s->pid > 0)
			rs_kill9(s);
	}
	return -1;
}

void rs_kill9(rs_server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	s->pid = 0;
}

int rs_restart(rs_server *s)
{
	rs_kill9(s);
	unlink(s->sock);
	return spawn(s);
}

void rs_freeze(rs_server *s)
{
	if (s->pid > 0)
		kill(s->pid, SIGSTOP);
}

void rs_thaw(rs_server *s)
{
	if (s->pid > 0)
		kill(s->pid, SIGCONT);
}

void rs_stop(rs_server *s)
{
	char path[160];

	if (!s)
		return;
	if (s->pid > 0) {
		kill(s->pid, SIGCONT);
		kill(s->pid, SIGTERM);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
	if (s->dir[0]) {
		unlink(s->sock);
		snprintf(path, sizeof(path), "%s/redis.log", s->dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/dump.rdb", s->dir);
		unlink(path);
		rmdir(s->dir);
		s->dir[0] = '\0';
	}
}
