-- harness-sidecar as a language server (Neovim 0.8+, vim.lsp.start): live diagnostics and
-- hovers while writing SKILL.md files, templates, AGENTS.md and extensions.
--
--   require('harness_sidecar.lsp').setup({
--     cmd = { 'harness-sidecar', '--lsp' },
--     roots = { vim.fn.getcwd() .. '/.agents', vim.fn.expand('~/.agents') },  -- earlier wins
--     trusted_extensions = { 'review-extension' },
--   })
--
-- Without roots the server uses [<workspace>/.agents, ~/.agents].
local M = {}

M.config = {
  cmd = { 'harness-sidecar', '--lsp' },
  roots = nil,
  trusted_extensions = {},
}

local function under_root(path)
  if not M.config.roots then
    return path:find('/.agents/', 1, true) ~= nil
  end
  for _, root in ipairs(M.config.roots) do
    local prefix = root:gsub('/$', '') .. '/'
    if path:sub(1, #prefix) == prefix then
      return true
    end
  end
  return false
end

local function is_resource(path)
  return path:match('/skills/[^/]+/SKILL%.md$') or path:match('/templates/[^/]+%.md$')
    or path:match('/AGENTS%.md$') or path:match('/extensions/.+%.py$')
end

--- Attach the buffer to the harness-sidecar language server if it is a resource under a root.
function M.attach(bufnr)
  local path = vim.api.nvim_buf_get_name(bufnr)
  if path == '' or not is_resource(path) or not under_root(path) then
    return nil
  end
  local init_options = { trustedExtensions = M.config.trusted_extensions }
  if M.config.roots then
    init_options.roots = M.config.roots
  end
  return vim.lsp.start({
    name = 'harness-sidecar',
    cmd = M.config.cmd,
    root_dir = M.config.roots and M.config.roots[1] or vim.fn.getcwd(),
    init_options = init_options,
  }, { bufnr = bufnr })
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', M.config, opts or {})
  local group = vim.api.nvim_create_augroup('harness_sidecar_lsp', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
    group = group,
    pattern = { 'SKILL.md', '*.md', '*.py' },
    callback = function(args) M.attach(args.buf) end,
  })
end

return M
