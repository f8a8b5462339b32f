-- wrk: a realistic mix. 70 % updates of seeded activities, 15 % requests of new activities,
-- 15 % ends (immediate dismissal) of activities this thread requested a while ago.
local activities = tonumber(os.getenv("ACTIVITIES") or "1000")
-- Each round of the benchmark requests activities of its own.
local round = os.getenv("ROUND") or "1"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("LIVELINE_KEY")
wrk.headers["Content-Type"] = "application/json"
local thread_number = 0
local created = 0
local open = {}

function setup(thread)
  thread_number = thread_number + 1
  thread:set("tid", thread_number)
end

request = function()
  local roll = math.random(100)
  -- An activity is ended only once 64 newer ones were requested after it, so that its request
  -- (sent on another connection of this thread) has certainly been answered.
  if roll <= 15 and #open > 64 then
    local id = table.remove(open, 1)
    return wrk.format("POST", "/v1/activities/" .. id .. "/end", nil,
      '{"contentState":{"status":"delivered"},"dismissal":{"policy":"immediate"}}')
  elseif roll <= 30 then
    created = created + 1
    local id = "m" .. round .. "-" .. tid .. "-" .. created
    table.insert(open, id)
    return wrk.format("POST", "/v1/activities", nil, string.format(
      '{"activityId":"%s","activityType":"delivery","attributes":{"order":"%s"},"contentState":{"status":"preparing","etaMinutes":30}}',
      id, id))
  else
    return wrk.format("POST", "/v1/activities/a" .. math.random(activities) .. "/updates", nil,
      '{"contentState":{"status":"nearby","etaMinutes":5},"priority":5}')
  end
end
