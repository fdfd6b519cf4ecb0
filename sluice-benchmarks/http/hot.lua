-- wrk: POST /v1/check, one hot key
wrk.method = "POST"
wrk.body = '{"policy":"bench","key":"hot"}'
wrk.headers["Content-Type"] = "application/json"
