#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cfg_util.h"

static const char *mode_name(wms_breaker_mode m)
{
	switch (m) {
	case WMS_BREAKER_MODE_CONSECUTIVE:
		return "consecutive";
	case WMS_BREAKER_MODE_COUNT_BASED:
		return "count_based";
	case WMS_BREAKER_MODE_TIME_BASED:
		return "time_based";
	}
	return "?";
}

int cfg_describe(const wms_client_options *o, const char *key, char *buf, size_t size)
{
	const wms_breaker_options *b = &o->breaker_options;
	const wms_retry_options *r = &o->retry;
	const wms_shared_options *sh = &o->shared;
	const struct {
		const char *key;
		unsigned long long value;
	} nums[] = {
		{ "client.connect_timeout_ms", o->connect_timeout_ms },
		{ "client.timeout_ms", o->timeout_ms },
		{ "client.stall_timeout_ms", o->stall_timeout_ms },
		{ "client.max_reply_bytes", o->max_reply_bytes },
		{ "client.max_concurrent_calls", o->bulkhead.max_concurrent_calls },
		{ "client.max_wait_for_slot_ms", o->bulkhead.max_wait_for_slot_ms },
		{ "client.read_cache_max_entries", o->read_cache.max_entries },
		{ "client.read_cache_max_age_ms", o->read_cache.max_age_ms },
		{ "client.read_cache_max_bytes", o->read_cache.max_bytes },
		{ "circuit_breaker.failure_threshold", b->failure_threshold },
		{ "circuit_breaker.failure_rate_threshold", b->failure_rate_threshold },
		{ "circuit_breaker.slow_call_rate_threshold", b->slow_call_rate_threshold },
		{ "circuit_breaker.slow_call_duration_ms", b->slow_call_duration_ms },
		{ "circuit_breaker.sliding_window_size", b->sliding_window_size },
		{ "circuit_breaker.minimum_number_of_calls", b->minimum_number_of_calls },
		{ "circuit_breaker.open_duration_ms", b->open_duration_ms },
		{ "circuit_breaker.permitted_calls_in_half_open", b->permitted_calls_in_half_open },
		{ "circuit_breaker.max_wait_in_half_open_ms", b->max_wait_in_half_open_ms },
		{ "circuit_breaker.open_duration_growth_pct", b->open_duration_growth_pct },
		{ "circuit_breaker.max_open_duration_ms", b->max_open_duration_ms },
		{ "circuit_breaker.open_duration_jitter_pct", b->open_duration_jitter_pct },
		{ "circuit_breaker.retry.max_attempts", r->max_attempts },
		{ "circuit_breaker.retry.initial_backoff_ms", r->initial_backoff_ms },
		{ "circuit_breaker.retry.max_backoff_ms", r->max_backoff_ms },
		{ "circuit_breaker.retry.backoff_multiplier_pct", r->backoff_multiplier_pct },
		{ "circuit_breaker.shared.command_timeout_ms", sh->command_timeout_ms },
		{ "circuit_breaker.shared.heartbeat_ms", sh->heartbeat_ms },
		{ "circuit_breaker.shared.key_ttl_s", sh->key_ttl_s },
		{ "circuit_breaker.shared.queue_size", sh->queue_size },
		{ "circuit_breaker.shared.quorum", sh->quorum },
	};
	size_t i;

	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (!strcmp(key, nums[i].key)) {
			snprintf(buf, size, "%llu", nums[i].value);
			return 0;
		}
	if (!strcmp(key, "client.endpoint"))
		snprintf(buf, size, "%s", o->endpoint ? o->endpoint : "(unset)");
	else if (!strcmp(key, "client.soap_version"))
		snprintf(buf, size, "%s", o->soap_version == WMS_SOAP_12 ? "1.2" : "1.1");
	else if (!strcmp(key, "circuit_breaker.mode"))
		snprintf(buf, size, "%s", mode_name(b->mode));
	else if (!strcmp(key, "circuit_breaker.scope"))
		snprintf(buf, size, "%s",
			 o->breaker_scope == WMS_BREAKER_SCOPE_PER_OPERATION ? "per_operation" : "per_client");
	else if (!strcmp(key, "circuit_breaker.name"))
		snprintf(buf, size, "%s", b->name ? b->name : "(unset)");
	else if (!strcmp(key, "circuit_breaker.shared.redis_url"))
		snprintf(buf, size, "%s", sh->redis_url ? sh->redis_url : "(unset)");
	else if (!strcmp(key, "circuit_breaker.shared.name"))
		snprintf(buf, size, "%s", sh->name ? sh->name : "(unset)");
	else if (!strcmp(key, "circuit_breaker.retry.not_sent_only"))
		snprintf(buf, size, "%s", r->not_sent_only ? "true" : "false");
	else
		return -1;
	return 0;
}

char *cfg_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto done;
	data = malloc((size_t)n + 1);
	if (!data)
		goto done;
	if (fread(data, 1, (size_t)n, f) != (size_t)n) {
		free(data);
		data = NULL;
		goto done;
	}
	data[n] = '\0';
	*len = (size_t)n;
done:
	fclose(f);
	return data;
}

const char *cfg_source_path(const char *rel)
{
	static char buf[4096];
	const char *root = getenv("WMS_SOURCE_ROOT");
	snprintf(buf, sizeof(buf), "%s/%s", root ? root : ".", rel);
	return buf;
}
