-- wrk: activities that live and die, for the soak benchmark. Each thread requests activities of
-- its own, registers each one's push token (so that its updates are pushed), updates those it
-- requested within the last LIVE_SECONDS, and ends the oldest with an immediate dismissal; the
-- ones it does not end reach the lifetime limit and are ended and dismissed by the server. About
-- 15 % requests, 15 % token registrations, 55 % updates, 15 % ends. Ids are unique per ROUND
-- (a wrk run).
--
-- With RATE (requests/s of all WRK_THREADS threads together), each thread sends its share at a
-- fixed pace instead of at full speed: each request waits for the thread's next slot, the slots a
-- fixed interval apart; a slot that passed while every connection waited for an answer is not
-- made up, so a server that cannot keep up shows as a rate below RATE. (wrk's Lua has no clock
-- finer than a second; LuaJIT's FFI reads the monotonic one.)
local round = os.getenv("ROUND") or "1"
local live_seconds = tonumber(os.getenv("LIVE_SECONDS") or "60")
wrk.headers["Authorization"] = "Bearer " .. os.getenv("LIVELINE_KEY")
wrk.headers["Content-Type"] = "application/json"
local thread_number = 0
local created = 0
-- The activities this thread requested, oldest first: { id, requested at (seconds) }.
local open = {}
-- Those whose push token is not registered yet, oldest first.
local awaiting = {}

function setup(thread)
  thread_number = thread_number + 1
  thread:set("tid", thread_number)
end

local function request_new()
  created = created + 1
  local id = "s" .. round .. "-" .. tid .. "-" .. created
  table.insert(open, { id, os.time() })
  table.insert(awaiting, id)
  return wrk.format("POST", "/v1/activities", nil, string.format(
    '{"activityId":"%s","activityType":"delivery","attributes":{"order":"%s"},'
      .. '"contentState":{"status":"preparing","etaMinutes":30}}',
    id, id))
end

local rate = tonumber(os.getenv("RATE") or "0")
if rate > 0 then
  local ffi = require("ffi")
  ffi.cdef [[
    typedef struct { long tv_sec; long tv_nsec; } soak_timespec;
    int clock_gettime(int clock, soak_timespec *reading);
  ]]
  local reading = ffi.new("soak_timespec")
  local function milliseconds()
    ffi.C.clock_gettime(1, reading) -- CLOCK_MONOTONIC
    return tonumber(reading.tv_sec) * 1000 + tonumber(reading.tv_nsec) / 1e6
  end
  local interval = 1000 * tonumber(os.getenv("WRK_THREADS") or "1") / rate
  local next_slot = 0
  delay = function()
    local now = milliseconds()
    local slot = math.max(next_slot, now)
    next_slot = slot + interval
    return slot - now
  end
end

request = function()
  local now = os.time()
  -- Forget those the server has ended by now.
  while #open > 0 and open[1][2] < now - live_seconds do table.remove(open, 1) end
  -- An activity is touched once 64 newer ones were requested after it, so that its request
  -- (sent on another connection of this thread) has certainly been answered.
  if #awaiting > 64 then
    local id = table.remove(awaiting, 1)
    return wrk.format("PUT", "/v1/activities/" .. id .. "/push-token", nil,
      string.format('{"pushToken":"%064x"}', math.random(1000000000)))
  end
  local roll = math.random(85)
  if roll <= 15 or #open <= 64 then
    return request_new()
  elseif roll <= 30 then
    local id = table.remove(open, 1)[1]
    return wrk.format("POST", "/v1/activities/" .. id .. "/end", nil,
      '{"contentState":{"status":"delivered"},"dismissal":{"policy":"immediate"}}')
  else
    local id = open[math.random(#open - 64)][1]
    return wrk.format("POST", "/v1/activities/" .. id .. "/updates", nil, string.format(
      '{"contentState":{"status":"nearby","etaMinutes":%d},"priority":5}', math.random(30)))
  end
end
