-- User commands of harness-sidecar. Configure with require('harness_sidecar').setup({...}).
if vim.g.loaded_harness_sidecar then
  return
end
vim.g.loaded_harness_sidecar = 1

local function hs()
  return require('harness_sidecar')
end

local function complete_from(list)
  return function(lead)
    return vim.tbl_filter(function(name) return name:sub(1, #lead) == lead end, list())
  end
end

vim.api.nvim_create_user_command('HarnessCatalog', function() hs().cmd_catalog() end,
  { desc = 'Show the harness catalog (skills, templates, extensions, diagnostics)' })
vim.api.nvim_create_user_command('HarnessActivate', function(o) hs().cmd_activate(o.fargs[1]) end,
  { nargs = 1, complete = complete_from(function() return hs().skill_names() end), desc = 'Activate a skill' })
vim.api.nvim_create_user_command('HarnessRender', function(o)
  hs().cmd_render(o.fargs[1], vim.list_slice(o.fargs, 2))
end, { nargs = '+', complete = complete_from(function() return hs().template_names() end),
  desc = 'Render a template: :HarnessRender {template} key=value ...' })
vim.api.nvim_create_user_command('HarnessContext', function() hs().cmd_context() end,
  { desc = 'Show the system prompt' })
vim.api.nvim_create_user_command('HarnessStop', function() hs().stop() end, { desc = 'Stop the sidecar' })
