/*
 * wms-sim's scripted replies (wms_sim_set_reply): checking a wms_sim_reply
 * and copying it into a shared, reference-counted script, the per-operation
 * and all-operations slots that hold scripts, taking one for a request, and
 * the scripted replies API of wms_sim.h. No libmicrohttpd here.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "sim_internal.h"

#define MAX_TRICKLE_MS 3600000u

/* ---- scripted replies ------------------------------------------------------ */

void wms_sim__script_free(wms_sim__script *sc)
{
	if (!sc)
		return;
	free(sc->content_type);
	free(sc->body);
	free(sc);
}

/* Drop one reference. Lock not held. */
void wms_sim__script_unref(wms_sim *s, wms_sim__script *sc)
{
	int last;
	if (!sc)
		return;
	pthread_mutex_lock(&s->lock);
	last = --sc->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (last)
		wms_sim__script_free(sc);
}

/* Check a wms_sim_reply and copy it into a script holding one reference. */
wms_sim_status wms_sim__script_new(wms_sim__script **out, const wms_sim_reply *r)
{
	wms_sim__script *sc;

	*out = NULL;
	if (r->version != WMS_SIM_REPLY_VERSION)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
				     "reply version %u is not supported (this wms-sim knows %u)",
				     r->version, WMS_SIM_REPLY_VERSION);
	if (r->status && (r->status < 200 || r->status > 599))
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
				     "reply status %u: want 200-599 (0 for the default)", r->status);
	if (r->content_type && r->no_content_type)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
				     "reply: content_type and no_content_type exclude each other");
	if (r->content_type &&
	    (strpbrk(r->content_type, "\r\n") || strlen(r->content_type) >= MAX_CONTENT_TYPE))
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
				     "reply content_type: one header value, no CR or LF, under %u bytes",
				     MAX_CONTENT_TYPE);
	if (!r->body && r->body_len)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "reply body is NULL with body_len %zu",
				     r->body_len);
	if (r->trickle_ms > MAX_TRICKLE_MS)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "reply trickle_ms: at most %u",
				     MAX_TRICKLE_MS);
	if (r->times == UINT32_MAX)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "reply times: at most %u",
				     UINT32_MAX - 1u);
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
	sc->refs = 1;
	sc->status = r->status;
	sc->no_content_type = r->no_content_type;
	sc->perform = r->perform;
	sc->lie_length = r->lie_length;
	sc->content_length = r->content_length;
	sc->hang = r->hang;
	sc->hang_after = r->hang_after;
	sc->trickle_ms = r->trickle_ms;
	sc->close = r->close;
	if (r->content_type && !(sc->content_type = strdup(r->content_type)))
		goto nomem;
	if (r->body) {
		sc->body = malloc(r->body_len ? r->body_len : 1);
		if (!sc->body)
			goto nomem;
		if (r->body_len)
			memcpy(sc->body, r->body, r->body_len);
		sc->body_len = r->body_len;
	}
	*out = sc;
	return WMS_SIM_OK;
nomem:
	wms_sim__script_free(sc);
	return wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
}

/* Put sc (its reference passes to the slot; NULL clears) in op's slot
 * (SIM_OP_NONE: the all-operations one). Returns the script it replaces, to
 * drop outside the lock. Lock held. */
wms_sim__script *wms_sim__install_script(wms_sim *s, sim_op op, wms_sim__script *sc,
					 uint32_t times)
{
	wms_sim__reply_slot *slot = op == SIM_OP_NONE ? &s->reply_all : &s->reply_op[op];
	wms_sim__script *old = slot->sc;
	slot->sc = sc;
	slot->left = sc ? times : 0;
	return old;
}

/* Empty every slot; old[] (SIM_OP_COUNT + 1) gets what they held. Lock held. */
void wms_sim__uninstall_scripts(wms_sim *s, wms_sim__script **old)
{
	int i;
	for (i = 0; i < SIM_OP_COUNT; i++)
		old[i] = wms_sim__install_script(s, (sim_op)i, NULL, 0);
	old[SIM_OP_COUNT] = wms_sim__install_script(s, SIM_OP_NONE, NULL, 0);
}

void wms_sim__unref_scripts(wms_sim *s, wms_sim__script **old)
{
	int i;
	for (i = 0; i <= SIM_OP_COUNT; i++)
		wms_sim__script_unref(s, old[i]);
}

/* The scripted reply for one request of op, with a reference for the
 * request; NULL if none. Counts it against `times`. Lock held. */
wms_sim__script *wms_sim__take_script(wms_sim *s, sim_op op)
{
	wms_sim__reply_slot *slot = NULL;
	wms_sim__script *sc;
	if (op != SIM_OP_NONE && s->reply_op[op].sc)
		slot = &s->reply_op[op];
	else if (s->reply_all.sc)
		slot = &s->reply_all;
	if (!slot)
		return NULL;
	sc = slot->sc;
	if (slot->left && --slot->left == 0) {
		slot->sc = NULL; /* the slot's reference passes to the request */
		return sc;
	}
	sc->refs++;
	return sc;
}

/* ---- scripted replies API ---------------------------------------------------- */

/* op NULL: SIM_OP_NONE (all); -1 and a message for an unknown name. */
static int reply_op(const char *op, sim_op *out)
{
	*out = op ? wms_sim__op_from_name(op, strlen(op)) : SIM_OP_NONE;
	if (op && *out == SIM_OP_NONE) {
		wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
			      "unknown operation '%.40s' (SubmitOrder, GetOrderStatus, CancelOrder, "
			      "GetStockLevel)", op);
		return -1;
	}
	return 0;
}

wms_sim_status wms_sim_set_reply(wms_sim *s, const char *op, const wms_sim_reply *r)
{
	wms_sim__script *sc = NULL, *old[SIM_OP_COUNT + 1];
	wms_sim_status st;
	sim_op o;
	int i;

	if (!s)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "sim is NULL");
	if (reply_op(op, &o) != 0)
		return WMS_SIM_ERR_INVALID_ARG;
	if (r && (st = wms_sim__script_new(&sc, r)) != WMS_SIM_OK)
		return st;
	for (i = 0; i <= SIM_OP_COUNT; i++)
		old[i] = NULL;
	pthread_mutex_lock(&s->lock);
	if (!r && !op)
		wms_sim__uninstall_scripts(s, old);
	else
		old[0] = wms_sim__install_script(s, o, sc, r ? r->times : 0);
	pthread_mutex_unlock(&s->lock);
	wms_sim__unref_scripts(s, old);
	return WMS_SIM_OK;
}

uint32_t wms_sim_reply_left(wms_sim *s, const char *op)
{
	const wms_sim__reply_slot *slot;
	uint32_t n;
	sim_op o;
	if (!s || reply_op(op, &o) != 0)
		return 0;
	pthread_mutex_lock(&s->lock);
	slot = o == SIM_OP_NONE ? &s->reply_all : &s->reply_op[o];
	n = !slot->sc ? 0 : slot->left ? slot->left : UINT32_MAX;
	pthread_mutex_unlock(&s->lock);
	return n;
}
