-- wrk script: send the contents of $BODY_FILE as a JSON request body.
--
--   BODY_FILE=Benchmarks/load/validate-body.json \
--     wrk -t1 -c64 -d10s --latency -s Benchmarks/load/post.lua http://127.0.0.1:PORT/path
--
-- The method is POST unless $METHOD says otherwise (bench.sh uses this for
-- PUT/PATCH cases). The file is read once when the script is loaded; wrk
-- loads it once per wrk thread, and every request reuses the same bytes.

local path = os.getenv("BODY_FILE")
if path == nil or path == "" then
   error("post.lua: set BODY_FILE to the file to send")
end

local f, err = io.open(path, "rb")
if f == nil then
   error("post.lua: cannot open BODY_FILE: " .. tostring(err))
end
local body = f:read("*a")
f:close()

wrk.method = os.getenv("METHOD") or "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"
-- Optional Proxy-Authorization (the egress transform door's credentials), from $PROXY_AUTH.
local proxy = os.getenv("PROXY_AUTH")
if proxy ~= nil and proxy ~= "" then
   wrk.headers["Proxy-Authorization"] = proxy
end
-- Optional bearer token (the Vault API cases), from $TOKEN.
local token = os.getenv("TOKEN")
if token ~= nil and token ~= "" then
   wrk.headers["Authorization"] = "Bearer " .. token
end
