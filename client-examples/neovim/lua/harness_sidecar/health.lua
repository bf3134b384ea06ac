-- :checkhealth harness_sidecar — the command, the protocol, the LSP extra, the roots, the catalog's
-- diagnostics (the very list :HarnessDiagnostics shows) and the plugins, command templates and hooks
-- with their trust.
local M = {}

local health = vim.health or require('health')
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local info = health.info or health.report_info
local error_ = health.error or health.report_error

local function matcher_of(h)
  return (type(h.matcher) == 'string' and h.matcher ~= '') and (' [' .. h.matcher .. ']') or ''
end

--- The catalog's diagnostics, each as :HarnessDiagnostics lists it (the same items, the same types).
local function report_diagnostics(hs, thread)
  local items = hs.quickfix_items(thread)
  local counts = { E = 0, W = 0, I = 0 }
  for _, item in ipairs(items) do
    counts[item.type] = (counts[item.type] or 0) + 1
    local where = item.filename and (item.filename .. (item.lnum > 1 and (':' .. item.lnum) or '') .. ': ') or ''
    if item.type == 'E' then
      error_(where .. item.text)
    elseif item.type == 'W' then
      warn(where .. item.text)
    else
      info(where .. item.text)
    end
  end
  if #items == 0 then
    ok('no catalog diagnostics')
  else
    info(string.format('%d catalog diagnostic(s): %d error(s), %d warning(s), %d info; :HarnessDiagnostics lists the same in the quickfix list',
      #items, counts.E, counts.W, counts.I))
  end
end

--- Plugins, command templates and hooks, each with what of its code may run.
local function report_trust(hs, catalog)
  start('harness_sidecar: plugins, command templates and hooks')
  local plugins = catalog.plugins or {}
  if #plugins == 0 then
    info("no plugins (a root's plugins/<name>/, or setup({ plugins = { folder } }))")
  end
  for _, p in ipairs(plugins) do
    local trust = hs.plugin_trust(p)
    local text = string.format('plugin %s%s (%s): %d skill(s), %d command(s), %d hook(s), %d MCP server(s), %d extension(s) — %s',
      p.name, p.version and (' ' .. p.version) or '', tostring(p.dialect), #p.skills, #p.commands, p.hooks,
      #p.mcpServers, #p.extensions, trust)
    if trust == 'not trusted' or trust:match('^partly') then
      info(text .. " (its code runs once setup({ trusted_plugins = { { name = '" .. p.name .. "' } } }) names it)")
    else
      ok(text)
    end
  end
  local commands = catalog.commandTemplates or {}
  local names = vim.tbl_map(function(c) return c.name end, commands)
  if #commands == 0 then
    info('no command templates')
  else
    ok(string.format('%d command template(s), data that needs no trust: %s', #commands, table.concat(names, ', ')))
  end
  for _, c in ipairs(commands) do
    if c.unsupported ~= nil then
      info(string.format('command %s uses what is not supported here: %s', c.name, vim.json.encode(c.unsupported)))
    end
  end
  local hooks = catalog.hooks or {}
  if #hooks == 0 then
    info('no hooks')
  end
  local trusted = 0
  for _, h in ipairs(hooks) do
    local text = string.format('hook %s%s: %s (%s)', tostring(h.event), matcher_of(h), hs.hook_what(h), tostring(h.source))
    if h.dormant then
      info(text .. ' — dormant: this event is never fired here')
    elseif h.supported == false then
      info(text)
    elseif h.trusted then
      trusted = trusted + 1
      ok(text .. ' — trusted: runs')
    else
      info(text .. ' — not trusted: never runs (trust it with trusted_hooks or trusted_plugins)')
    end
  end
  if #hooks > 0 then
    info(string.format('%d of %d hook(s) trusted', trusted, #hooks))
  end
end

--- Report a thread's catalog: the session's own (client nil) or one started for the check (client).
local function report_catalog(hs, client, thread)
  ok(string.format('catalog: %d skills, %d templates, %d command templates, %d extensions, %d plugins, %d hooks (%s)',
    #thread.catalog.skills, #thread.catalog.templates, #(thread.catalog.commandTemplates or {}),
    #thread.catalog.extensions, #(thread.catalog.plugins or {}), #(thread.catalog.hooks or {}),
    client and 'a thread started for this check' or ('of the running session, ' .. thread.threadId)))
  report_diagnostics(hs, thread)
  report_trust(hs, thread.catalog)
end

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
  local result, init_err = client:request_sync('initialize', { clientInfo = { name = 'checkhealth' },
    protocolVersion = '4' }, 5000)
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
  if hs.client and hs.client.running and hs.thread then
    report_catalog(hs, nil, hs.thread)
  else
    local thread, start_err = client:request_sync('thread/start', hs.thread_start_params(), 15000)
    if start_err then
      error_('thread/start failed: ' .. tostring(start_err.message))
    else
      report_catalog(hs, client, thread)
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
