-- wrk script: send $BODY_FILE as a multipart/form-data upload (Benchmarks/compare.sh writes one:
-- the kyc form's name and a small PNG, boundary "cloakcompareboundary"), with `Cloak-Upload: 1`
-- as Cloak Elements sends it. Every request stores the file anew.
local path = os.getenv("BODY_FILE")
if path == nil or path == "" then
   error("upload.lua: set BODY_FILE to the multipart body to send")
end
local f, err = io.open(path, "rb")
if f == nil then
   error("upload.lua: cannot open BODY_FILE: " .. tostring(err))
end
local body = f:read("*a")
f:close()

wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "multipart/form-data; boundary=cloakcompareboundary"
wrk.headers["Cloak-Upload"] = "1"
