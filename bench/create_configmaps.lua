-- wrk script: every request creates a new ConfigMap (unique name per thread and request).
local next_thread = 0
function setup(thread)
  thread:set("tid", next_thread)
  next_thread = next_thread + 1
end

function init(args)
  prefix = args[1] or "cm"
  n = 0
end

function request()
  n = n + 1
  local body = '{"metadata":{"name":"' .. prefix .. '-' .. tid .. '-' .. n .. '"},"data":{"k":"v"}}'
  return wrk.format("POST", nil, nil, body)
end
