-- wrk script: POST /aliases with a new value on every request (so each one creates a record,
-- not a deduplicated read), one PERSISTENT UUID alias, with the bearer token in $TOKEN.
local token = os.getenv("TOKEN") or ""
local counter = 0
local prefix = ""

function setup(thread)
   thread:set("id", tostring(math.random(1, 1000000000)))
end

function init(args)
   prefix = "bench-" .. (id or "0") .. "-" .. tostring(os.time()) .. "-"
end

function request()
   counter = counter + 1
   local body = '{"data":[{"value":"' .. prefix .. counter .. '","format":"UUID","storage":"PERSISTENT"}]}'
   return wrk.format("POST", nil, {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token}, body)
end
