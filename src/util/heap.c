/* util/heap.h: the timers' min-heap (4-ary, due times inline). */
#include "util/heap.h"
#include "util/alloc.h"

#define ARITY 4u

void wms__timer_init(wms__timer *t)
{
	t->due_ns = 0;
	t->index = WMS__TIMER_UNSET;
}

static void place(wms__heap *h, size_t i, wms__heap_slot s)
{
	h->items[i] = s;
	s.t->index = i;
}

static void up(wms__heap *h, size_t i)
{
	wms__heap_slot s = h->items[i];
	while (i > 0) {
		size_t parent = (i - 1) / ARITY;
		if (h->items[parent].due_ns <= s.due_ns)
			break;
		place(h, i, h->items[parent]);
		i = parent;
	}
	place(h, i, s);
}

static void down(wms__heap *h, size_t i)
{
	wms__heap_slot s = h->items[i];
	for (;;) {
		size_t first = ARITY * i + 1, end, c, m;
		if (first >= h->count)
			break;
		end = h->count - first > ARITY ? first + ARITY : h->count;
		m = first;
		for (c = first + 1; c < end; c++)
			if (h->items[c].due_ns < h->items[m].due_ns)
				m = c;
		if (h->items[m].due_ns >= s.due_ns)
			break;
		place(h, i, h->items[m]);
		i = m;
	}
	place(h, i, s);
}

int wms__heap_reserve(wms__heap *h, size_t n)
{
	wms__heap_slot *grown;
	size_t cap = h->cap ? h->cap : 16;
	if (n <= h->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	grown = wms__realloc(h->items, cap * sizeof(*grown));
	if (!grown)
		return -1;
	h->items = grown;
	h->cap = cap;
	return 0;
}

int wms__heap_set(wms__heap *h, wms__timer *t, uint64_t due_ns)
{
	size_t i = t->index;
	if (i != WMS__TIMER_UNSET) {
		uint64_t was = h->items[i].due_ns;
		t->due_ns = due_ns;
		h->items[i].due_ns = due_ns;
		if (due_ns < was)
			up(h, i);
		else
			down(h, i);
		return 0;
	}
	if (h->count == h->cap && wms__heap_reserve(h, h->count + 1) != 0)
		return -1;
	t->due_ns = due_ns;
	i = h->count++;
	h->items[i].due_ns = due_ns;
	h->items[i].t = t;
	t->index = i;
	up(h, i);
	return 0;
}

void wms__heap_remove(wms__heap *h, wms__timer *t)
{
	size_t i = t->index;
	wms__heap_slot last;
	if (i == WMS__TIMER_UNSET || i >= h->count || h->items[i].t != t)
		return;
	t->index = WMS__TIMER_UNSET;
	last = h->items[--h->count];
	if (i == h->count)
		return;
	place(h, i, last);
	if (i > 0 && h->items[(i - 1) / ARITY].due_ns > last.due_ns)
		up(h, i);
	else
		down(h, i);
}

wms__timer *wms__heap_top(const wms__heap *h)
{
	return h->count ? h->items[0].t : NULL;
}

void wms__heap_free(wms__heap *h)
{
	wms__free(h->items);
	h->items = NULL;
	h->count = h->cap = 0;
}
