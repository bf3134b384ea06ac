-- :checkhealth harness_sidecar — the command, the protocol, the LSP extra, the roots and the
-- catalog's diagnostics.
local M = {}

local health = vim.health or require('health')
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local info = health.info or health.report_info
local error_ = health.error or health.report_error

function M.check()
  start('harness_sidecar')
  local hs = require('harness_sidecar')
  local cmd = hs.config.cmd
  if vim.fn.executable(cmd[1]) ~= 1 then
    error_('the sidecar command is not executable: ' .. tostring(cmd[1]),
      { 'install harness-sidecar from its repository (python3 -m venv .venv && .venv/bin/pip install -e .), then set cmd = { "/path/to/checkout/.venv/bin/harness-sidecar" } in require("harness_sidecar").setup()' })
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
    client:stop(3000)
    return
  end
  ok(string.format('%s %s answers (protocol %s)', result.serverInfo.name, result.serverInfo.version,
    result.protocolVersion))

  start('harness_sidecar: roots and catalog')
  for _, root in ipairs(hs.roots()) do
    if vim.fn.isdirectory(root) == 1 then
      ok('root ' .. root)
    elseif hs.config.roots == nil then
      info('default root ' .. root .. ' does not exist (create it to add skills there)')
    else
      warn('root ' .. root .. ' does not exist; it contributes nothing')
    end
  end
  local thread, start_err = client:request_sync('thread/start', { roots = hs.roots(),
    trustedExtensions = hs.config.trusted_extensions }, 15000)
  if start_err then
    error_('thread/start failed: ' .. tostring(start_err.message))
  else
    ok(string.format('catalog: %d skills, %d templates, %d extensions', #thread.catalog.skills,
      #thread.catalog.templates, #thread.catalog.extensions))
    local problems = 0
    for _, d in ipairs(thread.diagnostics) do
      if hs.is_problem(d) and not d.kind:match('^root_') then -- the roots are reported above
        problems = problems + 1
        warn(string.format('%s: %s', d.kind, d.message), d.hint and { d.hint } or nil)
      elseif not d.kind:match('^root_') then
        info(d.message)
      end
    end
    if problems == 0 then
      ok('no catalog diagnostics')
    else
      info(problems .. ' resource(s) left out: :HarnessDiagnostics lists them in the quickfix list')
    end
  end
  client:stop(3000)

  start('harness_sidecar: language server')
  local supported, why = require('harness_sidecar.lsp').supported()
  if not supported then
    warn(why)
  end
  local lsp_cmd = require('harness_sidecar.lsp').cmd()
  local output = vim.fn.system(lsp_cmd, '')
  if vim.v.shell_error == 0 then
    ok('the LSP mode starts: ' .. table.concat(lsp_cmd, ' '))
  else
    warn('the LSP mode does not start (' .. vim.trim(output):gsub('\n', ' ') .. ')',
      { "install the \'lsp\' extra from your harness-sidecar checkout: pip install -e \'.[lsp]\'" })
  end
end

return M
