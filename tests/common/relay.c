/* A relay for a test (relay.h). */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "fd_io.h"
#include "relay.h"

#define MAX_PAIRS 16

struct pair {
	int c, s; /* the client's side, the target's; -1 when free */
	int held;
};

struct relay {
	int lfd;
	char target[108];
	char path[108];
	char url[128];
	char pattern[64];
	size_t pattern_len;
	struct pair p[MAX_PAIRS];
	pthread_t th;
	_Atomic int armed, held, release, stop;
};

static int unix_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path))
		return -1;
	strcpy(a->sun_path, path);
	return 0;
}

static void close_pair(struct pair *p)
{
	if (p->c >= 0)
		close(p->c);
	if (p->s >= 0)
		close(p->s);
	p->c = p->s = -1;
	p->held = 0;
}

static void accept_one(relay *r)
{
	struct sockaddr_un a;
	int c = accept(r->lfd, NULL, NULL), s, i;

	if (c < 0)
		return;
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || unix_addr(&a, r->target) != 0 ||
	    connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (s >= 0)
			close(s);
		close(c);
		return;
	}
	for (i = 0; i < MAX_PAIRS; i++) {
		if (r->p[i].c < 0) {
			r->p[i].c = c;
			r->p[i].s = s;
			r->p[i].held = 0;
			return;
		}
	}
	close(s);
	close(c);
}

/* Bytes from one side of pair p to the other: 0, or -1 when it is over. */
static int pass(relay *r, struct pair *p, int from_client)
{
	char buf[65536];
	ssize_t n = read(from_client ? p->c : p->s, buf, sizeof(buf));

	if (n < 0 && errno == EINTR)
		return 0;
	if (n <= 0)
		return -1;
	if (!from_client)
		return p->held ? 0 : fd_write_all(p->c, buf, (size_t)n); /* a held reply is lost */
	if (atomic_load(&r->armed) && memmem(buf, (size_t)n, r->pattern, r->pattern_len)) {
		atomic_store(&r->armed, 0);
		p->held = 1;
		atomic_store(&r->held, 1);
	}
	return fd_write_all(p->s, buf, (size_t)n);
}

static void *run(void *arg)
{
	relay *r = arg;

	while (!atomic_load(&r->stop)) {
		struct pollfd pf[1 + 2 * MAX_PAIRS];
		int idx[1 + 2 * MAX_PAIRS], n = 1, i;

		if (atomic_exchange(&r->release, 0))
			for (i = 0; i < MAX_PAIRS; i++)
				if (r->p[i].held)
					close_pair(&r->p[i]);
		pf[0].fd = r->lfd;
		pf[0].events = POLLIN;
		for (i = 0; i < MAX_PAIRS; i++) {
			if (r->p[i].c < 0)
				continue;
			pf[n].fd = r->p[i].c;
			pf[n].events = POLLIN;
			idx[n++] = i;
			pf[n].fd = r->p[i].s;
			pf[n].events = POLLIN;
			idx[n++] = i;
		}
		if (poll(pf, (nfds_t)n, 10) <= 0)
			continue;
		for (i = 1; i < n; i++) {
			struct pair *p = &r->p[idx[i]];
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)) || p->c < 0)
				continue;
			if (pass(r, p, pf[i].fd == p->c) != 0)
				close_pair(p);
		}
		if (pf[0].revents & POLLIN)
			accept_one(r);
	}
	return NULL;
}

relay *rl_start(const char *target, const char *dir)
{
	struct sockaddr_un a;
	relay *r = calloc(1, sizeof(*r));
	int i;

	if (!r)
		return NULL;
	r->lfd = -1;
	for (i = 0; i < MAX_PAIRS; i++)
		r->p[i].c = r->p[i].s = -1;
	if (strlen(target) >= sizeof(r->target) ||
	    snprintf(r->path, sizeof(r->path), "%s/relay.sock", dir) >= (int)sizeof(r->path))
		goto fail;
	strcpy(r->target, target);
	snprintf(r->url, sizeof(r->url), "unix://%s", r->path);
	r->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (r->lfd < 0 || unix_addr(&a, r->path) != 0 ||
	    bind(r->lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(r->lfd, 16) != 0)
		goto fail;
	if (pthread_create(&r->th, NULL, run, r) != 0)
		goto fail;
	return r;
fail:
	if (r->lfd >= 0) {
		close(r->lfd);
		unlink(r->path);
	}
	free(r);
	return NULL;
}

const char *rl_url(const relay *r)
{
	return r->url;
}

void rl_arm(relay *r, const char *pattern, size_t len)
{
	if (len >= sizeof(r->pattern))
		len = sizeof(r->pattern) - 1;
	memcpy(r->pattern, pattern, len);
	r->pattern_len = len;
	atomic_store(&r->held, 0);
	atomic_store(&r->armed, 1);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int rl_wait_held(relay *r, double limit_ms)
{
	struct timespec ts = { 0, 1000000L };
	double t0 = now_ms();

	while (!atomic_load(&r->held)) {
		if (now_ms() - t0 > limit_ms)
			return 0;
		nanosleep(&ts, NULL);
	}
	return 1;
}

void rl_release(relay *r)
{
	atomic_store(&r->release, 1);
}

void rl_stop(relay *r)
{
	int i;

	if (!r)
		return;
	atomic_store(&r->stop, 1);
	pthread_join(r->th, NULL);
	for (i = 0; i < MAX_PAIRS; i++)
		close_pair(&r->p[i]);
	close(r->lfd);
	unlink(r->path);
	free(r);
}
