-- wrk: requests of new activities (each with a device, as an app's backend sends them), every
-- cap enforced.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("LIVELINE_KEY")
wrk.headers["Content-Type"] = "application/json"
local thread_number = 0
local created = 0

function setup(thread)
  thread_number = thread_number + 1
  thread:set("tid", thread_number)
end

request = function()
  created = created + 1
  local id = "r-" .. tid .. "-" .. created
  return wrk.format(nil, "/v1/activities", nil, string.format(
    '{"activityId":"%s","activityType":"delivery","attributes":{"order":"%s"},' ..
    '"contentState":{"status":"preparing","etaMinutes":30},"deviceId":"phone-%d"}',
    id, id, created % 500))
end
