-- wrk: POST /v1/check, 100,000 keys chosen at random per request
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
math.randomseed(os.time())
request = function()
  return wrk.format(nil, nil, nil, '{"policy":"bench","key":"user:' .. math.random(1, 100000) .. '"}')
end
