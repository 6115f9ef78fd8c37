-- wrk script: POST one card field to an inbound route, a different Luhn-valid card on every
-- request. One card sent anonymously again and again would fill its BIN + last-four alias
-- bucket (anonymous aliases are random), which is not what clients do.
local counter = 0

local function luhn_digit(digits)
   local sum = 0
   for i = #digits, 1, -1 do
      local d = tonumber(digits:sub(i, i))
      if (#digits - i) % 2 == 0 then
         d = d * 2
         if d > 9 then d = d - 9 end
      end
      sum = sum + d
   end
   return tostring((10 - sum % 10) % 10)
end

function request()
   counter = counter + 1
   local partial = string.format("411111%09d", (counter * 7919 + math.random(0, 7918)) % 1000000000)
   local body = '{"fields":{"card":"' .. partial .. luhn_digit(partial) .. '"},"extraData":{"order":"o-1"}}'
   return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
end
