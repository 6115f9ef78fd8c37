-- wrk script for Benchmarks/scale.sh. CASE picks the request:
--   new     POST /aliases: one card never sent before (FPE_SIX_T_FOUR), each in its own bucket
--   dedupe  POST /aliases: a card of the filler series (stored by cloak-scale-fill), at random
--   reveal  GET /aliases/{alias}: an alias from ALIASES (a sample of the filled records), at random
--   egress  POST EGRESS_PATH {"card": alias}: an alias from ALIASES, revealed on the way out
--   form    POST /forms/checkout/tokens with load/validate-body.json's fields and a new card each
--           time (anonymous: a random alias a request; one card again and again would fill its
--           bucket's aliases)
-- TOKEN: the bearer token (Proxy-Authorization on the egress door); FILLED: records in the
-- filler series; SERIES: the digit new cards start with (after 4), so runs never repeat a card.
-- The card numbers are Benchmarks/ScaleFill's `ScaleCards.card`.
local case = os.getenv("CASE") or "new"
local token = os.getenv("TOKEN") or ""
local filled = tonumber(os.getenv("FILLED") or "1") or 1
local series = tonumber(os.getenv("SERIES") or "1") or 1
local egress_path = os.getenv("EGRESS_PATH") or "/egress/bench/v1/charges"
local aliases = {}
local template = ""
local counter = 0
local offset = 0

local function digits(n, count)
   local s = string.format("%0" .. count .. "d", n % (10 ^ count))
   return s
end

local function card(s, i)
   local body = "4" .. (s % 10) .. digits(math.floor(i / 10000) % 10000, 4)
      .. digits(math.floor(i / 100000000) % 100000, 5) .. "0" .. digits(i % 10000, 4)
   local sum = 0
   for position = 0, 15 do
      if position ~= 4 then
         local digit = tonumber(body:sub(16 - position, 16 - position))
         if position % 2 == 1 then
            digit = digit * 2
            if digit > 9 then digit = digit - 9 end
         end
         sum = sum + digit
      end
   end
   local check = (10 - sum % 10) % 10
   return body:sub(1, 11) .. check .. body:sub(13, 16)
end

function setup(thread)
   thread:set("thread_id", math.random(0, 99))
end

function init(args)
   -- Middle digits from the clock and the thread: a run never makes a card an earlier run made.
   offset = ((os.time() % 1000) * 100 + (thread_id or 0)) * 100000000
   math.randomseed(os.time() + (thread_id or 0))
   local form = os.getenv("FORM_BODY")
   if form and case == "form" then
      local f = assert(io.open(form, "rb"))
      template = f:read("*a")
      f:close()
   end
   local path = os.getenv("ALIASES")
   if path and (case == "reveal" or case == "egress") then
      for line in io.lines(path) do aliases[#aliases + 1] = line end
   end
end

local function post(path, body, auth)
   return wrk.format("POST", path, {["Content-Type"] = "application/json", [auth] = "Bearer " .. token}, body)
end

local function item(value)
   return '{"value":"' .. value .. '","format":"FPE_SIX_T_FOUR","storage":"PERSISTENT"}'
end

function request()
   if case == "new" then
      counter = counter + 1
      return post("/aliases", '{"data":[' .. item(card(series, offset + counter)) .. ']}', "Authorization")
   elseif case == "form" then
      counter = counter + 1
      local body = template:gsub('"card_data.card_number":"[^"]*"',
         '"card_data.card_number":"' .. card(series, offset + counter) .. '"')
      return wrk.format("POST", "/forms/checkout/tokens", {["Content-Type"] = "application/json"}, body)
   elseif case == "dedupe" then
      return post("/aliases", '{"data":[' .. item(card(0, math.random(0, filled - 1))) .. ']}', "Authorization")
   elseif case == "reveal" then
      return wrk.format("GET", "/aliases/" .. aliases[math.random(1, #aliases)],
         {["Authorization"] = "Bearer " .. token})
   else
      return post(egress_path, '{"card":"' .. aliases[math.random(1, #aliases)] .. '","amount":1000}',
         "Proxy-Authorization")
   end
end

