-- For Neovim 0.11+: `vim.lsp.enable('harness_sidecar')` uses this configuration. The command,
-- roots and trusted extensions come from require('harness_sidecar').setup() (call it first);
-- a buffer is attached only when it is a skill, template, AGENTS.md or extension under a root.
local lsp = require('harness_sidecar.lsp')

return {
  cmd = lsp.cmd(),
  filetypes = { 'markdown', 'python' },
  root_dir = function(bufnr, on_dir)
    if lsp.root_for(bufnr) then
      on_dir(vim.fn.getcwd())
    end
  end,
  init_options = lsp.init_options(),
}
