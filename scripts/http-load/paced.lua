-- wrk: the updates of updates.lua at a steady pace: each connection waits DELAY_MS after each
-- answer, so that CONNECTIONS connections send about CONNECTIONS * 1000 / DELAY_MS a second.
dofile("scripts/http-load/updates.lua")
local pause = tonumber(os.getenv("DELAY_MS") or "10")

delay = function()
  return pause
end
