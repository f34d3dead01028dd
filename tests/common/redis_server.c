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
#include "local_port.h"
#include "redis_server.h"

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int free_port(void)
{
	uint16_t port = local_closed_port();
	return port ? (int)port : -1;
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
	if (s->password[0]) {
		redisReply *r = redisCommand(c, "AUTH %s", s->password);
		int ok = r && r->type == REDIS_REPLY_STATUS;
		if (r)
			freeReplyObject(r);
		if (!ok) {
			redisFree(c);
			return NULL;
		}
	}
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
	char port[16], log[160], dbs[16], upass[80];
	const char *argv[32];
	int i, n = 0;
	pid_t parent;

	if (!bin || !*bin)
		bin = "redis-server";
	snprintf(port, sizeof(port), "%d", s->tcp ? s->port : 0);
	snprintf(log, sizeof(log), "%s/redis.log", s->dir);
	snprintf(dbs, sizeof(dbs), "%d", s->databases);
	snprintf(upass, sizeof(upass), ">%s", s->user_password);
	argv[n++] = bin;
	argv[n++] = "--port";
	argv[n++] = port;
	if (s->tcp) {
		argv[n++] = "--bind";
		argv[n++] = "127.0.0.1";
	} else {
		argv[n++] = "--unixsocket";
		argv[n++] = s->sock;
	}
	argv[n++] = "--save";
	argv[n++] = "";
	argv[n++] = "--appendonly";
	argv[n++] = "no";
	argv[n++] = "--logfile";
	argv[n++] = log;
	argv[n++] = "--dir";
	argv[n++] = s->dir;
	if (s->password[0]) {
		argv[n++] = "--requirepass";
		argv[n++] = s->password;
	}
	if (s->user[0]) { /* one config line: user NAME on >PASS ~* &* +@all */
		argv[n++] = "--user";
		argv[n++] = s->user;
		argv[n++] = "on";
		argv[n++] = upass;
		argv[n++] = "~*";
		argv[n++] = "&*";
		argv[n++] = "+@all";
	}
	if (s->databases > 0) {
		argv[n++] = "--databases";
		argv[n++] = dbs;
	}
	argv[n] = NULL;
	parent = getpid();
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		/* a test that fails (cmocka leaves the test by longjmp) or dies
		 * takes its server with it (and one that died before the prctl) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		execvp(bin, (char *const *)argv);
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

static int copy_opt(char *dst, size_t size, const char *v)
{
	size_t i, n = v ? strlen(v) : 0;
	if (n >= size)
		return -1;
	for (i = 0; i < n; i++)
		if ((unsigned char)v[i] <= 0x20 || v[i] == 0x7f)
			return -1;
	memcpy(dst, v ? v : "", n + 1);
	return 0;
}

int rs_start(rs_server *s, int tcp)
{
	return rs_start_opts(s, tcp, NULL);
}

int rs_start_opts(rs_server *s, int tcp, const rs_opts *o)
{
	int tries;

	memset(s, 0, sizeof(*s));
	s->tcp = tcp;
	if (o) {
		if (copy_opt(s->password, sizeof(s->password), o->password) ||
		    copy_opt(s->user, sizeof(s->user), o->user) ||
		    copy_opt(s->user_password, sizeof(s->user_password), o->user_password) ||
		    (s->user[0] && !s->user_password[0]) || o->databases < 0)
			return -1;
		s->databases = o->databases;
	}
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

long long rs_hget_int(const rs_server *s, const char *key, const char *field)
{
	redisReply *r = rs_cmd(s, "HGET %s %s", key, field);
	long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
	if (r)
		freeReplyObject(r);
	return v;
}
