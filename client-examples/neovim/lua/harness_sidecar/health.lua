-- :checkhealth harness_sidecar
local M = {}

local health = vim.health or require('health')
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local error_ = health.error or health.report_error

function M.check()
  start('harness_sidecar')
  local hs = require('harness_sidecar')
  local cmd = hs.config.cmd
  if vim.fn.executable(cmd[1]) ~= 1 then
    error_('the sidecar command is not executable: ' .. tostring(cmd[1]),
      { 'pip install harness-sidecar, or set cmd in require("harness_sidecar").setup()' })
    return
  end
  ok('sidecar command: ' .. table.concat(cmd, ' '))
  local client = require('harness_sidecar.rpc').new({ cmd = cmd })
  local started, err = client:start()
  if not started then
    error_(err)
    return
  end
  local result, init_err = client:request_sync('initialize', { clientInfo = { name = 'checkhealth' } }, 5000)
  if init_err then
    error_('initialize failed: ' .. tostring(init_err.message))
  else
    ok(string.format('%s %s answers (protocol %s)', result.serverInfo.name, result.serverInfo.version,
      result.protocolVersion))
  end
  client:stop()
  for _, root in ipairs(hs.config.roots or {}) do
    if vim.fn.isdirectory(root) == 1 then
      ok('root ' .. root)
    else
      warn('root ' .. root .. ' does not exist; it contributes nothing')
    end
  end
end

return M
