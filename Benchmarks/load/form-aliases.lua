-- wrk script: POST /forms/checkout/aliases with the validate body and the bearer token in $TOKEN.
local token = os.getenv("TOKEN") or ""
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
local body = f:read("*a")
f:close()
wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. token
