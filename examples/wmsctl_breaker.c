/*
 * wmsctl breaker: the fleet's shared breakers (the SLA file's
 * circuit_breaker.shared block) changed by hand, then read back from Redis
 * over a connection of this process's own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wms/sys/transport.h"
#include "example_common.h"
#include "wmsctl.h"

#define MAX_BREAKERS EX_MAX_BREAKERS

typedef struct action {
	const char *name;
	void (*change)(wms_breaker *breaker);
	wms_breaker_state want; /* what the breaker reads afterwards */
} action;

static const action actions[] = {
	{ "force-open", wms_breaker_force_open, WMS_BREAKER_STATE_FORCED_OPEN },
	{ "force-closed", wms_breaker_force_closed, WMS_BREAKER_STATE_CLOSED },
	{ "disable", wms_breaker_disable, WMS_BREAKER_STATE_DISABLED },
	{ "reset", wms_breaker_reset, WMS_BREAKER_STATE_CLOSED },
};

#define N_ACTIONS (sizeof(actions) / sizeof(actions[0]))

int ctl_breaker_action(const char *name)
{
	for (size_t i = 0; i < N_ACTIONS; i++)
		if (strcmp(actions[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* This command calls no WMS: its client's transport refuses to. */
static wms_status no_wms_send(wms_transport *self, const wms_http_request *req,
			      wms_http_response *resp, wms_error *err)
{
	(void)self;
	(void)req;
	(void)resp;
	return wms_transport_fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_NOT_SENT,
				  "wmsctl breaker calls no WMS");
}

static void no_wms_free(wms_transport *self)
{
	free(self);
}

wms_transport *ctl_no_wms_transport(void)
{
	wms_transport *t = calloc(1, sizeof(*t));

	if (t) {
		t->version = WMS_TRANSPORT_VERSION;
		t->send = no_wms_send;
		t->free = no_wms_free;
	}
	return t;
}

static const char *name_of(wms_breaker *b)
{
	wms_breaker_snapshot s;
	wms_breaker_snapshot_get(&s, b);
	return s.name;
}

/* The client's breakers (at most MAX_BREAKERS) into b; their count. */
static size_t breakers_of(wms_client *client, wms_breaker **b)
{
	size_t n = wms_client_breakers(b, MAX_BREAKERS, client);
	return n > MAX_BREAKERS ? MAX_BREAKERS : n;
}

/* Whether breaker b is one the command changes. */
static int chosen(const ctl_config *cfg, wms_breaker *b)
{
	return !cfg->breaker || strcmp(cfg->breaker, name_of(b)) == 0;
}

static int usage_unknown_breaker(const ctl_config *cfg, wms_breaker **b, size_t n)
{
	fputs("wmsctl: breaker: --breaker '", stderr);
	ctl_put_safe(stderr, cfg->breaker);
	fputs("': no such breaker; the SLA file gives ", stderr);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", name_of(b[i]));
	fputc('\n', stderr);
	return CTL_EXIT_USAGE;
}

static int print_health(wms_client *client)
{
	char *doc = NULL;
	wms_status st = wms_client_health_json(&doc, client);

	if (st != WMS_OK) {
		fprintf(stderr, "wmsctl: breaker: cannot render the document: %s\n",
			wms_strerror(st));
		return CTL_EXIT_INTERNAL;
	}
	fputs(doc, stdout);
	wms_free(doc);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("wmsctl: writing the output");
		return CTL_EXIT_INTERNAL;
	}
	return CTL_EXIT_OK;
}

int ctl_run_breaker(const ctl_config *cfg)
{
	const action *a = &actions[ctl_breaker_action(cfg->breaker_action)]; /* checked by check_args */
	uint32_t wait_ms = cfg->store_wait_ms ? cfg->store_wait_ms : CTL_STORE_WAIT_MS;
	ctl_config c = *cfg;
	wms_client *client = NULL;
	wms_breaker *b[MAX_BREAKERS];
	size_t n, i, hit = 0;
	int rc;

	c.no_wms = 1;
	rc = ctl_make_client(&client, &c, NULL);
	if (rc != CTL_EXIT_OK)
		return rc;
	n = breakers_of(client, b);
	for (i = 0; i < n; i++)
		hit += (size_t)chosen(cfg, b[i]);
	if (!hit) {
		rc = usage_unknown_breaker(cfg, b, n);
		goto done;
	}
	if (!ex_wait_store(client, wait_ms, 1)) {
		fprintf(stderr, "wmsctl: breaker: CONNECT: the shared breakers did not join Redis "
			"within %lu ms: nothing was changed\n", (unsigned long)wait_ms);
		rc = CTL_EXIT_NOT_SENT;
		goto done;
	}
	for (i = 0; i < n; i++)
		if (chosen(cfg, b[i]))
			a->change(b[i]);
	/* freeing the client frees its store, which sends the change first */
	wms_client_free(client);
	client = NULL;

	/* read back, as any replica starting now would see it */
	rc = ctl_make_client(&client, &c, NULL);
	if (rc != CTL_EXIT_OK)
		return rc;
	if (!ex_wait_store(client, wait_ms, 1)) {
		fprintf(stderr, "wmsctl: breaker: CONNECT: Redis did not answer within %lu ms "
			"to read the change back: it may not have reached it\n",
			(unsigned long)wait_ms);
		rc = CTL_EXIT_NOT_SENT;
		goto done;
	}
	rc = print_health(client);
	if (rc != CTL_EXIT_OK)
		goto done;
	n = breakers_of(client, b);
	for (i = 0; i < n; i++) {
		wms_breaker_state st = wms_breaker_state_get(b[i]);
		if (!chosen(cfg, b[i]) || st == a->want)
			continue;
		fprintf(stderr, "wmsctl: breaker: %s reads %s, not %s: another change won, or "
			"this one was lost on its way to Redis\n",
			name_of(b[i]), wms_breaker_state_name(st), wms_breaker_state_name(a->want));
		rc = CTL_EXIT_INTERNAL;
	}
done:
	wms_client_free(client);
	return rc;
}
