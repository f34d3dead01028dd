/*
 * The one Lua script every change of a shared breaker runs in Redis: it
 * reads the state, counts, decides, bumps the epoch, times the open period
 * by Redis's own clock (TIME: no host's clock is compared), writes, sets
 * the keys' expiry and publishes the change, atomically. Its policy is the
 * in-process engine's for the consecutive mode (src/breaker/breaker.c):
 * the same threshold, the same growth, cap and jitter arithmetic, an epoch
 * that makes every outcome from before a transition count for nothing.
 *
 * KEYS[1] the state hash, KEYS[2] the probe lease.
 * ARGV[1] op, ARGV[2] channel, ARGV[3] key ttl (ms), ARGV[4] permitted
 * epoch (rec) / lease token (probe) / local state (join) / state (man),
 * then per op (see each branch).
 * Reply: { exists, state, epoch, failures, open ms left, lease ms left,
 * granted }.
 */
#include "redis_int.h"

const char wms__redis_script[] =
	"local H, L = KEYS[1], KEYS[2]\n"
	"local op, ch, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"local v = redis.call('HMGET', H, 'st', 'ep', 'n', 'ro', 'un')\n"
	"local exists = v[1] and 1 or 0\n"
	"local st = tonumber(v[1]) or 0\n"
	"local ep = tonumber(v[2]) or 0\n"
	"local n = tonumber(v[3]) or 0\n"
	"local ro = tonumber(v[4]) or 0\n"
	"local un = tonumber(v[5]) or 0\n"
	"local dirty, tell, granted = false, false, 0\n"
	/* the open period: breaker.c's open_duration_ns, in integers */
	"local function open_for(base, growth, cap, jit, rnd)\n"
	"  local ms, i = base, 0\n"
	"  while i < ro and ms < cap do ms = math.floor(ms * growth / 100); i = i + 1 end\n"
	"  if ms > cap then ms = cap end\n"
	"  if jit > 0 then ms = ms + rnd % (math.floor(ms * jit / 100) + 1) end\n"
	"  return ms\n"
	"end\n"
	"local function open_now(a)\n"
	"  st = 1; n = 0\n"
	"  un = now + open_for(tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]),\n"
	"                      tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]))\n"
	"end\n"
	"if op == 'rec' then\n"
	/* ARGV[5] outcomes (f, s: closed; F, S: trials), ARGV[6] token,
	 * ARGV[7] threshold, ARGV[8..12] base, growth, cap, jitter, random */
	"  if exists == 1 and tonumber(ARGV[4]) == ep then\n"
	"    local out = ARGV[5]\n"
	"    for i = 1, #out do\n"
	"      local c = string.sub(out, i, i)\n"
	"      if st == 0 and c == 'f' then\n"
	"        n = n + 1; dirty = true\n"
	"        if n == 1 then tell = true end\n"
	"        if n >= tonumber(ARGV[7]) then open_now(8); ep = ep + 1; tell = true; break end\n"
	"      elseif st == 0 and c == 's' then\n"
	"        if n > 0 then n = 0; dirty = true end\n"
	"      elseif st == 2 and (c == 'F' or c == 'S') and redis.call('GET', L) == ARGV[6] then\n"
	"        redis.call('DEL', L)\n"
	"        if c == 'S' then st = 0; n = 0; ro = 0 else ro = ro + 1; open_now(8) end\n"
	"        ep = ep + 1; dirty = true; tell = true; break\n"
	"      end\n"
	"    end\n"
	"  end\n"
	"elseif op == 'probe' then\n"
	/* ARGV[4] token, ARGV[5] lease ms: after the open period, or when a
	 * prober's lease has run out, one replica gets the trials */
	"  if exists == 1 and ((st == 1 and now >= un) or st == 2) and redis.call('EXISTS', L) == 0 then\n"
	"    redis.call('SET', L, ARGV[4], 'PX', ARGV[5])\n"
	"    st = 2; ep = ep + 1; dirty = true; tell = true; granted = 1\n"
	"  end\n"
	"elseif op == 'join' then\n"
	/* ARGV[4] the joiner's state, ARGV[5] its open ms left, ARGV[6] the
	 * newest epoch it knows: epochs only grow, and open wins */
	"  local lst, rem, lep = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])\n"
	"  local lopen = lst == 1 or lst == 2\n"
	"  if exists == 0 then\n"
	"    st = 0; n = 0; ro = 0; un = 0\n"
	"    if lopen then st = 1; un = now + rem\n"
	"    elseif lst == 3 or lst == 4 then st = lst end\n"
	"    dirty = true; tell = true\n"
	"  elseif lopen and st == 0 then\n"
	"    st = 1; n = 0; un = now + rem; dirty = true; tell = true\n"
	"  end\n"
	"  if lep > ep or (exists == 0 and lep == ep) then ep = lep + 1; dirty = true; tell = true\n"
	"  elseif dirty then ep = ep + 1 end\n"
	"elseif op == 'man' then\n"
	/* ARGV[4] the state set by hand, ARGV[5] the newest epoch known */
	"  st = tonumber(ARGV[4]); n = 0; un = now\n"
	"  if st == 0 then ro = 0 end\n"
	"  redis.call('DEL', L)\n"
	"  ep = math.max(ep, tonumber(ARGV[5])) + 1; dirty = true; tell = true\n"
	"end\n"
	"local rem = 0\n"
	"if st == 1 and un > now then rem = un - now end\n"
	"if dirty then\n"
	"  redis.call('HSET', H, 'st', st, 'ep', ep, 'n', n, 'ro', ro, 'un', un)\n"
	/* a state set by hand stays until it is changed by hand */
	"  if st == 3 or st == 4 then redis.call('PERSIST', H) else redis.call('PEXPIRE', H, ttl + rem) end\n"
	"  exists = 1\n"
	"end\n"
	"if tell then redis.call('PUBLISH', ch, ep .. ' ' .. st .. ' ' .. n .. ' ' .. rem) end\n"
	"return { exists, st, ep, n, rem, redis.call('PTTL', L), granted }\n";
