/* util/heap.h: the timers' min-heap. */
#include "util/heap.h"
#include "util/alloc.h"

void wms__timer_init(wms__timer *t)
{
	t->due_ns = 0;
	t->index = WMS__TIMER_UNSET;
}

static void place(wms__heap *h, size_t i, wms__timer *t)
{
	h->items[i] = t;
	t->index = i;
}

static void up(wms__heap *h, size_t i)
{
	wms__timer *t = h->items[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (h->items[parent]->due_ns <= t->due_ns)
			break;
		place(h, i, h->items[parent]);
		i = parent;
	}
	place(h, i, t);
}

static void down(wms__heap *h, size_t i)
{
	wms__timer *t = h->items[i];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		uint64_t best = t->due_ns;
		if (l < h->count && h->items[l]->due_ns < best) {
			m = l;
			best = h->items[l]->due_ns;
		}
		if (r < h->count && h->items[r]->due_ns < best)
			m = r;
		if (m == i)
			break;
		place(h, i, h->items[m]);
		i = m;
	}
	place(h, i, t);
}

int wms__heap_reserve(wms__heap *h, size_t n)
{
	wms__timer **grown;
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
	if (t->index != WMS__TIMER_UNSET) {
		uint64_t was = t->due_ns;
		t->due_ns = due_ns;
		if (due_ns < was)
			up(h, t->index);
		else
			down(h, t->index);
		return 0;
	}
	if (h->count == h->cap && wms__heap_reserve(h, h->count + 1) != 0)
		return -1;
	t->due_ns = due_ns;
	h->count++;
	place(h, h->count - 1, t);
	up(h, h->count - 1);
	return 0;
}

void wms__heap_remove(wms__heap *h, wms__timer *t)
{
	size_t i = t->index;
	wms__timer *last;
	if (i == WMS__TIMER_UNSET || i >= h->count || h->items[i] != t)
		return;
	t->index = WMS__TIMER_UNSET;
	last = h->items[--h->count];
	if (i == h->count)
		return;
	place(h, i, last);
	if (i > 0 && h->items[(i - 1) / 2]->due_ns > last->due_ns)
		up(h, i);
	else
		down(h, i);
}

wms__timer *wms__heap_top(const wms__heap *h)
{
	return h->count ? h->items[0] : NULL;
}

void wms__heap_free(wms__heap *h)
{
	wms__free(h->items);
	h->items = NULL;
	h->count = h->cap = 0;
}
