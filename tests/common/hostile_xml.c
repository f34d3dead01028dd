/* Generators of replies that cross libwms's structural limits (hostile_xml.h). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hostile_xml.h"

static void reserve(hx_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 256;
	if (b->len + n + 1 <= b->cap)
		return;
	while (cap < b->len + n + 1)
		cap *= 2;
	if (!(b->data = realloc(b->data, cap)))
		abort();
	b->cap = cap;
}

void hx_bytes(hx_buf *b, const void *p, size_t n)
{
	reserve(b, n);
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void hx_fill(hx_buf *b, const char *unit, size_t upto)
{
	size_t n = strlen(unit);
	if (!n)
		abort();
	if (b->len >= upto)
		return;
	reserve(b, (upto - b->len + n - 1) / n * n);
	while (b->len < upto) {
		memcpy(b->data + b->len, unit, n);
		b->len += n;
	}
	b->data[b->len] = '\0';
}

void hx_put(hx_buf *b, const char *fmt, ...)
{
	va_list ap;
	char probe[1];
	int n;
	if (!fmt) /* never; says so to GCC's null checks under UBSan */
		abort();
	va_start(ap, fmt);
	n = vsnprintf(probe, sizeof(probe), fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void hx_free(hx_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void hx_attrs(hx_buf *b, unsigned n, const char *name)
{
	unsigned i;
	for (i = 0; i < n; i++)
		hx_put(b, " %s%u=''", name, i);
}

void hx_ns_decls(hx_buf *b, unsigned n, unsigned first)
{
	unsigned i;
	for (i = first; i < first + n; i++)
		hx_put(b, " xmlns:p%u='urn:hx:%u'", i, i);
}

void hx_elements(hx_buf *b, unsigned n, int distinct)
{
	unsigned i;
	for (i = 0; i < n; i++) {
		if (distinct)
			hx_put(b, "<e%u/>", i);
		else
			hx_bytes(b, "<e/>", 4);
	}
}

#define OR(s) ((s) ? (s) : "")

static void envelope_open(hx_buf *out, const char *soap_ns, const hx_parts *p)
{
	hx_put(out, "%s<soap:Envelope xmlns:soap=\"%s\" xmlns:wh=\"" HX_WH "\"%s>", OR(p->decl),
	       soap_ns, OR(p->env_attrs));
	if (p->header)
		hx_put(out, "<soap:Header>%s</soap:Header>", p->header);
	hx_put(out, "<soap:Body%s>", OR(p->body_attrs));
}

void hx_submit_reply(hx_buf *out, const char *id, const hx_parts *parts)
{
	static const hx_parts none;
	const hx_parts *p = parts ? parts : &none;
	envelope_open(out, HX_SOAP11, p);
	hx_put(out,
	       "<wh:SubmitOrderResponse%s>%s<wh:clientOrderId>%s</wh:clientOrderId>"
	       "<wh:wmsReference>WMS-H1</wh:wmsReference><wh:state>RECEIVED</wh:state>"
	       "<wh:duplicate>false</wh:duplicate></wh:SubmitOrderResponse>"
	       "</soap:Body></soap:Envelope>",
	       OR(p->resp_attrs), OR(p->resp_before), id);
}

void hx_fault_reply(hx_buf *out, int soap12, const char *detail_before, const hx_parts *parts)
{
	static const hx_parts none;
	const hx_parts *p = parts ? parts : &none;
	envelope_open(out, soap12 ? HX_SOAP12 : HX_SOAP11, p);
	if (soap12)
		hx_put(out,
		       "<soap:Fault%s><soap:Code><soap:Value>soap:Receiver</soap:Value></soap:Code>"
		       "<soap:Reason><soap:Text xml:lang=\"en\">warehouse closed</soap:Text>"
		       "</soap:Reason><soap:Detail>%s<wh:WmsFault><wh:code>INTERNAL</wh:code>"
		       "</wh:WmsFault></soap:Detail></soap:Fault>",
		       OR(p->resp_attrs), OR(detail_before));
	else
		hx_put(out,
		       "<soap:Fault%s><faultcode>soap:Server</faultcode>"
		       "<faultstring>warehouse closed</faultstring><detail>%s<wh:WmsFault>"
		       "<wh:code>INTERNAL</wh:code></wh:WmsFault></detail></soap:Fault>",
		       OR(p->resp_attrs), OR(detail_before));
	hx_put(out, "</soap:Body></soap:Envelope>");
}

void hx_gen(hx_buf *b, hx_what what, unsigned n)
{
	switch (what) {
	case HX_ATTRS: hx_attrs(b, n, "a"); break;
	case HX_NS_DECLS: hx_ns_decls(b, n, 0); break;
	case HX_NAMES: hx_elements(b, n, 1); break;
	case HX_ELEMENTS: hx_elements(b, n, 0); break;
	}
}

void hx_reply(hx_buf *out, const char *id, hx_what what, unsigned n, hx_where where)
{
	int on = what == HX_ATTRS || what == HX_NS_DECLS;
	hx_buf g = { 0 }, wrap = { 0 };
	hx_parts p = { 0 };

	hx_gen(&g, what, n);
	switch (where) {
	case HX_RESPONSE:
		*(on ? &p.resp_attrs : &p.resp_before) = g.data;
		break;
	case HX_ENVELOPE:
	case HX_BODY:
		if (!on)
			abort(); /* no elements there in a reply */
		*(where == HX_ENVELOPE ? &p.env_attrs : &p.body_attrs) = g.data;
		break;
	case HX_HEADER:
		if (on)
			hx_put(&wrap, "<h:Trace xmlns:h='urn:trace'%s/>", g.data);
		else
			hx_put(&wrap, "<h:Trace xmlns:h='urn:trace'>%s</h:Trace>", g.data);
		p.header = wrap.data;
		break;
	case HX_FAULT11:
	case HX_FAULT12:
		if (on)
			hx_put(&wrap, "<d%s/>", g.data);
		hx_fault_reply(out, where == HX_FAULT12, on ? wrap.data : g.data, NULL);
		goto done;
	}
	hx_submit_reply(out, id, &p);
done:
	hx_free(&g);
	hx_free(&wrap);
}

void hx_utf16(hx_buf *out, const char *ascii, size_t len, int big_endian, int bom)
{
	size_t i;
	if (bom)
		hx_bytes(out, big_endian ? "\xfe\xff" : "\xff\xfe", 2);
	for (i = 0; i < len; i++) {
		unsigned cp = ascii[i] == '\x01' ? 0x3D00u : (unsigned char)ascii[i];
		char u[2];
		u[big_endian ? 0 : 1] = (char)(cp >> 8);
		u[big_endian ? 1 : 0] = (char)(cp & 0xFF);
		hx_bytes(out, u, 2);
	}
}
