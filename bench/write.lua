-- wrk script of the rowgate benchmarks: one fixed request, repeated.
--
--   wrk ... -s bench/write.lua URL -- path=/write?db=bench lines=20 \
--       [method=GET] [delay_ms=N] [statuses=1]
--
-- lines     rows in the body (~50 bytes a row; 0 = no body)
-- fmt       lp (InfluxDB line protocol, default) or prom (Prometheus text)
-- delay_ms  pause before each request on a connection (paced load)
-- statuses  count responses by status (a Lua call per response; off for
--           throughput runs, where wrk's own non-2xx count suffices)
--
-- done() prints one line: "BENCH requests=.. rps=.. p50_us=.. p99_us=..
-- non2xx=.. errors=.. [s204=.. s429=.. sother=..]" (s204 counts every 2xx)

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

local function body(n, fmt)
   local t = {}
   for i = 1, n do
      -- 48 to 50 bytes: a host's CPU sample, no timestamp (server time)
      if fmt == "prom" then
         t[i] = string.format("cpu_user{host=\"h%04d\",dc=\"eu1\",m=\"x\"} 12.%d\n",
                              i % 10000, i % 100)
      else
         t[i] = string.format("cpu,host=h%04d,dc=eu1 user=12.5,sys=3.25,idle=%d\n",
                              i % 10000, i % 100)
      end
   end
   return table.concat(t)
end

function init(args)
   local opt = {}
   for _, a in ipairs(args) do
      local k, v = a:match("^([%w_]+)=(.*)$")
      if k then opt[k] = v end
   end
   wrk.method = opt.method or "POST"
   wrk.path = opt.path or "/write?db=bench"
   local n = tonumber(opt.lines or "20")
   if wrk.method == "POST" then
      wrk.body = body(n, opt.fmt)
      wrk.headers["Content-Type"] = "text/plain"
   else
      wrk.body = nil
   end
   local d = tonumber(opt.delay_ms or "0")
   if d > 0 then
      delay = function() return d end
   end
   s204, s429, sother = 0, 0, 0
   if opt.statuses == "1" then
      response = function(status, headers, b)
         if status >= 200 and status < 300 then s204 = s204 + 1
         elseif status == 429 then s429 = s429 + 1
         else sother = sother + 1 end
      end
   end
   counting = opt.statuses == "1"
end

function done(summary, latency, requests)
   local e = summary.errors
   local line = string.format(
      "BENCH requests=%d seconds=%.3f rps=%.1f p50_us=%d p99_us=%d non2xx=%d errors=%d bytes_in=%d",
      summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
      latency:percentile(50), latency:percentile(99), e.status,
      e.connect + e.read + e.write + e.timeout, summary.bytes)
   local a, b, c = 0, 0, 0
   local counted = false
   for _, t in ipairs(threads) do
      if t:get("counting") then counted = true end
      a = a + (t:get("s204") or 0)
      b = b + (t:get("s429") or 0)
      c = c + (t:get("sother") or 0)
   end
   if counted then
      line = line .. string.format(" s204=%d s429=%d sother=%d", a, b, c)
   end
   io.write(line .. "\n")
end
