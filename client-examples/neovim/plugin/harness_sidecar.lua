-- User commands of harness-sidecar (:help harness_sidecar). Configure with
-- require('harness_sidecar').setup({...}). Every command returns at once.
if vim.g.loaded_harness_sidecar then
  return
end
vim.g.loaded_harness_sidecar = 1

local function hs()
  return require('harness_sidecar')
end

vim.api.nvim_create_user_command('HarnessCatalog', function() hs().cmd_catalog() end,
  { desc = 'Show the harness catalog (skills, templates, extensions, command hooks, plugins, diagnostics)' })
vim.api.nvim_create_user_command('HarnessActivate', function(o) hs().cmd_activate(o.fargs[1]) end,
  { nargs = '?', complete = function(lead) return hs().complete_activate(lead) end,
    desc = 'Activate a skill (a picker without an argument)' })
vim.api.nvim_create_user_command('HarnessDeactivate', function(o) hs().cmd_deactivate(o.fargs[1]) end,
  { nargs = '?', complete = function(lead) return hs().complete_activate(lead) end,
    desc = 'Deactivate an active skill (a picker of the active ones without an argument)' })
vim.api.nvim_create_user_command('HarnessResume', function() hs().cmd_resume() end,
  { desc = "Start the sidecar again and resume this session: extension state and activated skills come back" })
vim.api.nvim_create_user_command('HarnessTools', function() hs().cmd_tools() end,
  { desc = 'Show the tools the model may use now: active, deferred (found with tool_search) and inactive' })
vim.api.nvim_create_user_command('HarnessRender', function(o)
  hs().cmd_render(o.fargs[1], vim.list_slice(o.fargs, 2), o.args)
end, { nargs = '*', complete = function(lead, line) return hs().complete_render(lead, line) end,
  desc = 'Render a template: :HarnessRender {template} key=value ..., or {command} free text (a picker without arguments)' })
vim.api.nvim_create_user_command('HarnessPlugins', function() hs().cmd_plugins() end,
  { desc = 'Show the plugins with their parts (skills, commands, agents, hooks, MCP servers, extensions) and trust' })
vim.api.nvim_create_user_command('HarnessContext', function() hs().cmd_context() end,
  { desc = 'Show the system prompt' })
vim.api.nvim_create_user_command('HarnessDiagnostics', function() hs().cmd_diagnostics() end,
  { desc = "The catalog's diagnostics in the quickfix list" })
vim.api.nvim_create_user_command('HarnessCommand', function(o)
  hs().cmd_command(o.fargs[1], vim.list_slice(o.fargs, 2))
end, { nargs = '*', complete = function(lead, line) return hs().complete_command(lead, line) end,
  desc = "Run a trusted extension's command: :HarnessCommand {name} key=value ... (a picker without arguments)" })
vim.api.nvim_create_user_command('HarnessCall', function(o)
  hs().cmd_call(o.fargs[1], o.args:match('^%s*%S+%s*(.-)%s*$'))
end, { nargs = '*', complete = function(lead, line) return hs().complete_call(lead, line) end,
  desc = 'Call a tool of the thread by hand: :HarnessCall {tool} {json} (a picker, then the JSON, without arguments)' })
vim.api.nvim_create_user_command('HarnessLog', function() hs().cmd_log() end,
  { desc = "The sidecar's log (its stderr) and the diagnostics it sent" })
vim.api.nvim_create_user_command('HarnessStop', function() hs().stop() end, { desc = 'Stop the sidecar' })
