-- wrk: POST /v1/check, a new key on every request (a flood of new keys), per wrk thread
local counter = 0
local thread_id = 0
setup = function(thread)
  thread:set("thread_id", thread_id)
  thread_id = thread_id + 1
end
request = function()
  counter = counter + 1
  return wrk.format("POST", "/v1/check", {["Content-Type"] = "application/json"},
    '{"policy":"demo","key":"flood-' .. thread_id .. '-' .. counter .. '"}')
end
