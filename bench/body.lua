-- wrk script of the rowgate benchmarks: write.lua's fixed request (same
-- options, same BENCH result line), plus a body read from a file, extra
-- headers and one request per connection.
--
--   wrk ... -s bench/body.lua URL -- path=/api/v1/write?db=x \
--       body_file=rw.bin header=Content-Encoding:snappy \
--       header=Content-Type:application/x-protobuf [close=1]
--
-- body_file  the body, sent as is (binary: a snappy remote-write batch)
-- header     NAME:VALUE, repeatable
-- close      1: "Connection: close" on every request; the server answers
--            with it and closes, and wrk opens a new connection for the
--            next request (a curl-style client: one request a connection)

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "write.lua")

local write_init = init

function init(args)
   write_init(args)
   for _, a in ipairs(args) do
      local k, v = a:match("^([%w_]+)=(.*)$")
      if k == "body_file" then
         local f = assert(io.open(v, "rb"))
         wrk.body = f:read("*a")
         f:close()
      elseif k == "header" then
         local name, value = v:match("^([^:]+):(.*)$")
         assert(name, "header=NAME:VALUE")
         wrk.headers[name] = value
      elseif k == "close" and v == "1" then
         wrk.headers["Connection"] = "close"
      end
   end
end
