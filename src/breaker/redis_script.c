/*
 * The one Lua script every change of a shared breaker runs in Redis: it
 * reads the state, counts, decides, bumps the epoch, times the open period
 * by Redis's own clock (TIME: no host's clock is compared), writes, sets
 * the keys' expiry and publishes the change, atomically. Its policy is the
 * in-process engine's (src/breaker/breaker.c), in integers, for all three
 * modes: the consecutive run; the count window (the fleet's last N calls);
 * the time window (the fleet's last N seconds of Redis's clock, a bucket a
 * second); half-open rounds of N trials decided once all have reported;
 * the same growth, cap and jitter arithmetic; an epoch that makes every
 * outcome from before a transition count for nothing.
 *
 * KEYS[1] the state hash, KEYS[2] the probe lease, KEYS[3] the window
 * (count mode: a string, a byte per call, '0' + failed + 2 * slow; time
 * mode: a hash, bucket index -> "second calls failures slow"), KEYS[4] the
 * quorum (a sorted set: each replica's token -> Redis ms of its latest
 * failure; used only with a quorum above 1).
 * ARGV[1] op, ARGV[2] channel, ARGV[3] key ttl (ms), then per op (see
 * each branch).
 * Reply: { exists, state, epoch, failures, open ms left, lease ms left,
 * granted, window calls, window failures, window slow }.
 *
 * The hash: st state, ep epoch, n consecutive failures, ro reopenings, un
 * open until (Redis ms), wm/sz the window's mode and size, wc/wf/ws its
 * calls, failures, slow calls, wh the ring's head (count) or wl the last
 * second seen (time), hd/hf/hs the round's trials done, failed, slow, me
 * the epoch the latest change made by hand gave the hash.
 */
#include <string.h>
#include "internal.h"
#include "redis_int.h"

/* In parts: ISO C promises string literals of 4095 bytes only. */
const char *const wms__redis_script[] = {
	"local H, L, W, Q = KEYS[1], KEYS[2], KEYS[3], KEYS[4]\n"
	"local op, ch, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"local sec = tonumber(t[1])\n"
	"local v = redis.call('HMGET', H, 'st', 'ep', 'n', 'ro', 'un', 'wm', 'sz', 'wc', 'wf',\n"
	"                     'ws', 'wh', 'wl', 'hd', 'hf', 'hs', 'me')\n"
	"local exists = v[1] and 1 or 0\n"
	"local st = tonumber(v[1]) or 0\n"
	"local ep = tonumber(v[2]) or 0\n"
	"local n = tonumber(v[3]) or 0\n"
	"local ro = tonumber(v[4]) or 0\n"
	"local un = tonumber(v[5]) or 0\n"
	"local wm = v[6] or 'c'\n"
	"local sz = tonumber(v[7]) or 0\n"
	"local wc, wf, ws = tonumber(v[8]) or 0, tonumber(v[9]) or 0, tonumber(v[10]) or 0\n"
	"local wh, wl = tonumber(v[11]) or 0, tonumber(v[12]) or 0\n"
	"local hd, hf, hs = tonumber(v[13]) or 0, tonumber(v[14]) or 0, tonumber(v[15]) or 0\n"
	"local me = tonumber(v[16]) or 0\n"
	"local dirty, tell, granted = false, false, 0\n"
	/* the window: emptied on every transition to CLOSED, DISABLED,
	 * FORCED_OPEN (breaker.c's window_clear) */
	"local function wclear()\n"
	"  redis.call('DEL', W, Q); wc = 0; wf = 0; ws = 0; wh = 0; wl = 0\n"
	"end\n"
	/* the window keeps the shape (mode, size) of the replica that started
	 * it until it is emptied: a replica configured apart adds its calls to
	 * it rather than resetting it on every batch */
	"local function wshape(m, size)\n"
	"  if wc == 0 and (m ~= wm or size ~= sz) then wclear(); wm = m; sz = size; dirty = true end\n"
	"end\n"
	/* the time window up to this second: breaker.c's window_advance */
	"local function wadvance()\n"
	"  if sec <= wl and (wc > 0 or wl > 0) then return end\n"
	"  if wc == 0 or sec - wl >= sz then\n"
	"    redis.call('DEL', W); wc = 0; wf = 0; ws = 0\n"
	"  else\n"
	"    for s = wl + 1, sec do\n"
	"      local b = redis.call('HGET', W, tostring(s % sz))\n"
	"      if b then\n"
	"        local bs, bc, bf, bw = string.match(b, '^(%d+) (%d+) (%d+) (%d+)$')\n"
	"        if tonumber(bs) ~= s then\n"
	"          wc = wc - tonumber(bc); wf = wf - tonumber(bf); ws = ws - tonumber(bw)\n"
	"          redis.call('HDEL', W, tostring(s % sz))\n"
	"        end\n"
	"      end\n"
	"    end\n"
	"  end\n"
	"  redis.call('ZREMRANGEBYSCORE', Q, '-inf', '(' .. ((sec - sz + 1) * 1000))\n"
	"  wl = sec; dirty = true\n"
	"end\n"
	/* one call into the count window (breaker.c's window_add) */
	"local function wring(failed, slow)\n"
	"  if wc == sz then\n"
	"    local o = string.byte(redis.call('GETRANGE', W, wh, wh)) or 48\n"
	"    o = o - 48\n"
	"    wf = wf - o % 2; ws = ws - math.floor(o / 2) % 2\n"
	"  else wc = wc + 1 end\n"
	"  redis.call('SETRANGE', W, wh, string.char(48 + failed + 2 * slow))\n"
	"  wh = (wh + 1) % sz; wf = wf + failed; ws = ws + slow\n"
	"end\n"
	/* calls of this second into its time bucket */
	"local function wbucket(c, f, w)\n"
	"  local key = tostring(sec % sz)\n"
	"  local b = redis.call('HGET', W, key)\n"
	"  local bc, bf, bw = 0, 0, 0\n"
	"  if b then\n"
	"    local bs, xc, xf, xw = string.match(b, '^(%d+) (%d+) (%d+) (%d+)$')\n"
	"    if tonumber(bs) == sec then bc, bf, bw = tonumber(xc), tonumber(xf), tonumber(xw) end\n"
	"  end\n"
	"  redis.call('HSET', W, key, sec .. ' ' .. (bc + c) .. ' ' .. (bf + f) .. ' ' .. (bw + w))\n"
	"end\n"
	/* breaker.c's window_trips: 1 failure rate, 2 slow-call rate */
	"local function trips(frt, srt, min)\n"
	"  if wc == 0 or wc < min then return 0 end\n"
	"  if 100 * wf >= frt * wc then return 1 end\n"
	"  if 100 * ws >= srt * wc then return 2 end\n"
	"  return 0\n"
	"end\n",
	/* the open period: breaker.c's open_duration_ns, in integers */
	"local function open_for(base, growth, cap, jit, rnd)\n"
	"  local ms, i = base, 0\n"
	"  while i < ro and ms < cap do ms = math.floor(ms * growth / 100); i = i + 1 end\n"
	"  if ms > cap then ms = cap end\n"
	"  if jit > 0 then ms = ms + rnd % (math.floor(ms * jit / 100) + 1) end\n"
	"  return ms\n"
	"end\n"
	"local function open_now(a)\n"
	"  st = 1; n = 0; redis.call('DEL', Q)\n"
	"  un = now + open_for(tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]),\n"
	"                      tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]))\n"
	"end\n"
	"if op == 'rec' then\n",
	/* ARGV[4] permitted epoch, ARGV[5] outcomes (f s g t: calls in CLOSED,
	 * failed, succeeded, slow failed, slow succeeded; F S G T: trials),
	 * ARGV[6] token, ARGV[7] threshold, ARGV[8..12] base, growth, cap,
	 * jitter, random; ARGV[13] mode (c consecutive, n count, t time),
	 * ARGV[14..18] failure rate %, slow rate %, window size, minimum
	 * calls, trials per round, ARGV[19] quorum (replicas with a failure),
	 * ARGV[20] lease ms (renewed by each trial reported) */
	"  local mode, frt, srt = ARGV[13], tonumber(ARGV[14]), tonumber(ARGV[15])\n"
	"  local size, min, trials = tonumber(ARGV[16]), tonumber(ARGV[17]), tonumber(ARGV[18])\n"
	"  local quorum = tonumber(ARGV[19])\n"
	"  local function qok()\n"
	"    return quorum <= 1 or redis.call('ZCARD', Q) >= quorum\n"
	"  end\n"
	"  if exists == 1 and tonumber(ARGV[4]) == ep then\n"
	"    local out = ARGV[5]\n"
	"    local tlate = false\n"
	"    if st == 0 and mode ~= 'c' then\n"
	"      wshape(mode, size)\n"
	"      if wm ~= 'c' then mode = wm end\n"
	"      if mode == 't' then wadvance(); tlate = sec < wl end\n"
	"    end\n"
	"    local bc, bf, bw = 0, 0, 0\n"
	"    for i = 1, #out do\n"
	"      local c = string.sub(out, i, i)\n"
	"      local lower = c == 'f' or c == 's' or c == 'g' or c == 't'\n"
	"      local failed = (c == 'f' or c == 'g' or c == 'F' or c == 'G') and 1 or 0\n"
	"      local slow = (c == 'g' or c == 't' or c == 'G' or c == 'T') and 1 or 0\n"
	"      if st == 0 and lower and failed == 1 and quorum > 1 then\n"
	"        redis.call('ZADD', Q, now, ARGV[6]); redis.call('PEXPIRE', Q, ttl)\n"
	"      end\n"
	"      if st == 0 and lower and mode == 'c' then\n"
	"        if failed == 1 then\n"
	"          n = n + 1; dirty = true; tell = true\n"
	"          if n >= tonumber(ARGV[7]) and qok() then open_now(8); ep = ep + 1; tell = true; break end\n"
	"        elseif n > 0 then n = 0; dirty = true; tell = true; redis.call('DEL', Q) end\n"
	"      elseif st == 0 and lower and tlate then\n"
	/* Redis's clock went back (a failover): calls for a second the window
	 * has passed count nowhere, as in breaker.c */
	"      elseif st == 0 and lower then\n"
	"        dirty = true\n"
	"        if mode == 'n' then wring(failed, slow)\n"
	"        else\n"
	"          wc = wc + 1; wf = wf + failed; ws = ws + slow\n"
	"          bc = bc + 1; bf = bf + failed; bw = bw + slow\n"
	"        end\n"
	"        if trips(frt, srt, min) > 0 and qok() then open_now(8); ep = ep + 1; tell = true; break end\n"
	"      elseif st == 2 and not lower and redis.call('GET', L) == ARGV[6] then\n"
	"        hd = hd + 1; hf = hf + failed; hs = hs + slow; dirty = true\n"
	"        redis.call('PEXPIRE', L, ARGV[20])\n"
	"        if hd >= trials then\n"
	"          redis.call('DEL', L)\n"
	"          local bad\n"
	"          if mode == 'c' then bad = hf > 0\n"
	"          else bad = 100 * hf >= frt * hd or 100 * hs >= srt * hd end\n"
	"          if bad then ro = ro + 1; open_now(8)\n"
	"          else st = 0; n = 0; ro = 0; wclear() end\n"
	"          hd = 0; hf = 0; hs = 0\n"
	"          ep = ep + 1; tell = true; break\n"
	"        end\n"
	"      end\n"
	"    end\n"
	"    if bc > 0 then wbucket(bc, bf, bw) end\n"
	"  end\n",
	"elseif op == 'probe' then\n"
	/* ARGV[4] token, ARGV[5] lease ms: after the open period, or when a
	 * prober's lease has run out, one replica gets the round's trials */
	"  if exists == 1 and ((st == 1 and now >= un) or st == 2) and redis.call('EXISTS', L) == 0 then\n"
	"    redis.call('SET', L, ARGV[4], 'PX', ARGV[5])\n"
	"    st = 2; ep = ep + 1; hd = 0; hf = 0; hs = 0; dirty = true; tell = true; granted = 1\n"
	"  end\n"
	"elseif op == 'join' then\n"
	/* ARGV[4] the joiner's state, ARGV[5] its open ms left, ARGV[6] the
	 * newest epoch it knows: epochs only grow, and open wins */
	"  local lst, rem, lep = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])\n"
	"  local lopen = lst == 1 or lst == 2\n"
	"  if exists == 0 then\n"
	"    st = 0; n = 0; ro = 0; un = 0; wclear()\n"
	"    if lopen then st = 1; un = now + rem\n"
	"    elseif lst == 3 or lst == 4 then st = lst end\n"
	"    dirty = true; tell = true\n"
	"  elseif lopen and st == 0 then\n"
	"    st = 1; n = 0; un = now + rem; dirty = true; tell = true\n"
	"  end\n"
	"  if lep > ep or (exists == 0 and lep == ep) then ep = lep + 1; dirty = true; tell = true\n"
	"  elseif dirty then ep = ep + 1 end\n"
	"elseif op == 'man' then\n"
	/* ARGV[4] the state set by hand, ARGV[5] the newest epoch the replica
	 * knew when the change was made, ARGV[6] '1' when it is sent again
	 * after an attempt whose fate is unknown (the connection was lost
	 * before its reply, or Redis refused it): then a change by hand that
	 * reached the hash since that epoch (this one, or a newer one made
	 * elsewhere) stands, and the reply tells the replica what it is */
	"  if ARGV[6] ~= '1' or me <= tonumber(ARGV[5]) then\n"
	"    st = tonumber(ARGV[4]); n = 0; un = now; hd = 0; hf = 0; hs = 0\n"
	"    if st == 0 then ro = 0 end\n"
	"    wclear()\n"
	"    redis.call('DEL', L)\n"
	"    ep = math.max(ep, tonumber(ARGV[5])) + 1; me = ep; dirty = true; tell = true\n"
	"  end\n"
	"elseif op == 'get' then\n"
	/* ARGV[4] mode, ARGV[5] window size: a time window is brought up to
	 * this second, so that its rates age without calls */
	"  if exists == 1 and st == 0 and ARGV[4] == 't' and wm == 't' and wc > 0 and\n"
	"     tonumber(ARGV[5]) == sz then wadvance() end\n"
	"end\n"
	"local rem = 0\n"
	"if st == 1 and un > now then rem = un - now end\n"
	"if dirty then\n"
	"  redis.call('HSET', H, 'st', st, 'ep', ep, 'n', n, 'ro', ro, 'un', un, 'wm', wm, 'sz', sz,\n"
	"             'wc', wc, 'wf', wf, 'ws', ws, 'wh', wh, 'wl', wl, 'hd', hd, 'hf', hf, 'hs', hs,\n"
	"             'me', me)\n"
	/* a state set by hand stays until it is changed by hand */
	"  if st == 3 or st == 4 then redis.call('PERSIST', H) else redis.call('PEXPIRE', H, ttl + rem) end\n"
	"  if wc > 0 then redis.call('PEXPIRE', W, ttl + rem) end\n"
	"  exists = 1\n"
	"end\n"
	"if tell then redis.call('PUBLISH', ch, ep .. ' ' .. st .. ' ' .. n .. ' ' .. rem) end\n"
	"return { exists, st, ep, n, rem, redis.call('PTTL', L), granted, wc, wf, ws }\n",
	NULL
};

char *wms__redis_script_text(void)
{
	size_t i, len = 0;
	char *t;

	for (i = 0; wms__redis_script[i]; i++)
		len += strlen(wms__redis_script[i]);
	t = wms__malloc(len + 1);
	if (!t)
		return NULL;
	for (len = 0, i = 0; wms__redis_script[i]; i++) {
		size_t n = strlen(wms__redis_script[i]);
		memcpy(t + len, wms__redis_script[i], n);
		len += n;
	}
	t[len] = '\0';
	return t;
}
