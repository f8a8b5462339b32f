-- wrk: content updates (priority 5) of the activities the benchmark seeded, a1 … a$ACTIVITIES.
local activities = tonumber(os.getenv("ACTIVITIES") or "1000")
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("LIVELINE_KEY")
wrk.headers["Content-Type"] = "application/json"
local statuses = { "preparing", "on the way", "nearby", "at the door" }
local step = 0

request = function()
  step = step + 1
  local body = string.format(
    '{"contentState":{"status":"%s","etaMinutes":%d,"courier":{"name":"Sam","rating":4.9}},"priority":5}',
    statuses[step % 4 + 1], step % 45)
  return wrk.format(nil, "/v1/activities/a" .. math.random(activities) .. "/updates", nil, body)
end
