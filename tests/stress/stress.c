#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "build_kind.h"
#include "stress.h"

st_kind st_build_kind(void)
{
	return (st_kind)tk_build_kind(); /* the same values (build_kind.h) */
}

const char *st_kind_name(st_kind kind)
{
	switch (kind) {
	case ST_PLAIN: return "plain";
	case ST_ASAN: return "asan+ubsan";
	case ST_TSAN: return "tsan";
	case ST_VALGRIND: return "valgrind";
	}
	return "?";
}

unsigned long st_env_ulong(const char *name, unsigned long def)
{
	const char *v = getenv(name);
	char *end = NULL;
	unsigned long n;
	if (!v || !*v)
		return def;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || !end || *end || n == 0 || v[0] == '-')
		fail_msg("%s=%s: want a positive integer", name, v);
	return n;
}

double st_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void st_sleep_ms(uint32_t ms)
{
	struct timespec ts;
	ts.tv_sec = (time_t)(ms / 1000u);
	ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
	while (nanosleep(&ts, &ts) != 0)
		;
}

size_t st_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	size_t n = 0;
	int self;
	assert_non_null(d);
	self = dirfd(d);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (atoi(e->d_name) == self)
			continue;
		n++;
	}
	closedir(d);
	return n;
}

/* The socket inodes behind our descriptors; *count of them. */
static unsigned long *socket_inodes(size_t *count)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned long *v = NULL;
	size_t n = 0, cap = 0;
	char path[300], link[64];
	ssize_t len;

	*count = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d)) != NULL) {
		unsigned long ino;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (sscanf(link, "socket:[%lu]", &ino) != 1)
			continue;
		if (n == cap) {
			unsigned long *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return NULL;
			}
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		v[n++] = ino;
	}
	closedir(d);
	*count = n;
	return v ? v : calloc(1, sizeof(*v));
}

/* "0100007F:1F90" -> port 0x1F90 (the address part is skipped). */
static unsigned hex_port(const char *addr)
{
	const char *colon = strrchr(addr, ':');
	return colon ? (unsigned)strtoul(colon + 1, NULL, 16) : 0;
}

static int census_file(st_sockets *out, const char *file, uint16_t port,
		       const unsigned long *inodes, size_t n)
{
	FILE *f = fopen(file, "r");
	char line[512];
	if (!f)
		return errno == ENOENT ? 0 : -1; /* no IPv6: nothing to count */
	if (!fgets(line, sizeof(line), f)) { /* header */
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char local[64], remote[64];
		unsigned st;
		unsigned long ino;
		size_t i;
		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, " %*s %63s %63s %x %*s %*s %*s %*s %*s %lu", local, remote, &st,
			   &ino) != 4)
			continue;
		for (i = 0; i < n && inodes[i] != ino; i++)
			;
		if (i == n || ino == 0)
			continue;
		if (st == 0x0A && hex_port(local) == port)
			out->listeners++;
		else if (hex_port(local) == port)
			out->server_conns++;
		else if (hex_port(remote) == port)
			out->client_conns++;
		else
			out->other++;
	}
	fclose(f);
	return 0;
}

int st_socket_census(st_sockets *out, uint16_t port)
{
	size_t n = 0;
	unsigned long *inodes = socket_inodes(&n);
	int rc = 0;
	memset(out, 0, sizeof(*out));
	if (!inodes)
		return -1;
	out->sockets = (unsigned)n;
	rc |= census_file(out, "/proc/self/net/tcp", port, inodes, n);
	rc |= census_file(out, "/proc/self/net/tcp6", port, inodes, n);
	free(inodes);
	return rc;
}

wms_sim *st_sim_start(int64_t on_hand)
{
	wms_sim_options o = WMS_SIM_OPTIONS_INIT;
	wms_sim *sim = NULL;
	wms_sim_status st;
	o.tick_ms = 3600000u; /* orders stay RECEIVED: reservations stay put */
	o.on_hand = on_hand;
	st = wms_sim_start(&sim, &o);
	if (st != WMS_SIM_OK)
		fail_msg("wms_sim_start: %s: %s", wms_sim_status_name(st), wms_sim_last_error());
	assert_non_null(sim);
	assert_true(wms_sim_port(sim) > 0);
	return sim;
}

void st_sim_fault(wms_sim *sim, wms_sim_fault kind)
{
	wms_sim_status st = wms_sim_set_fault(sim, NULL, kind, 0);
	if (st != WMS_SIM_OK)
		fail_msg("wms_sim_set_fault(%s): %s: %s", wms_sim_fault_name(kind),
			 wms_sim_status_name(st), wms_sim_last_error());
}

void st_order_init(st_order *o, const char *order_id, unsigned sku_no, uint32_t qty)
{
	wms_order init = WMS_ORDER_INIT;
	memset(o, 0, sizeof(*o));
	snprintf(o->id, sizeof(o->id), "%s", order_id);
	snprintf(o->sku, sizeof(o->sku), "SKU-%u", sku_no);
	o->order = init;
	o->order.order_id = o->id;
	o->order.ship_to.name = "Grace Hopper";
	o->order.ship_to.line1 = "1 Navy Yard";
	o->order.ship_to.city = "Arlington";
	o->order.ship_to.postal_code = "22202";
	o->order.ship_to.country = "US";
	o->order.priority = WMS_PRIORITY_STANDARD;
	o->line.sku = o->sku;
	o->line.quantity = qty;
	o->order.lines = &o->line;
	o->order.line_count = 1;
}

uint32_t st_rand(uint32_t *state)
{
	uint32_t x = *state ? *state : 0x9e3779b9u;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}
