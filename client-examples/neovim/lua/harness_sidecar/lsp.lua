-- harness-sidecar as a language server (Neovim 0.8+): live diagnostics and hovers while writing
-- SKILL.md files, templates, AGENTS.md and extensions under the roots. It shares setup() with
-- the commands:
--
--   require('harness_sidecar').setup({ cmd = {...}, roots = {...}, lsp = true })
--
-- On Neovim 0.11+ `vim.lsp.enable('harness_sidecar')` works too (lsp/harness_sidecar.lua).
-- The command is `cmd` plus `--lsp` unless `lsp = { cmd = {...} }` names another one.
local M = {}

M.options = {} -- what setup({lsp = {...}}) gave: cmd?, roots?, trusted_extensions?

local function hs()
  return require('harness_sidecar')
end

--- Whether this Neovim can run it (vim.lsp.start is 0.8+), and if not, why.
function M.supported()
  if vim.lsp and vim.lsp.start then
    return true
  end
  local v = vim.version()
  return false, string.format('the language server needs Neovim 0.8 or newer (vim.lsp.start); this is %d.%d.%d. '
    .. 'The :Harness commands work without it.', v.major, v.minor, v.patch)
end

function M.cmd()
  if M.options.cmd then
    return M.options.cmd
  end
  local cmd = vim.deepcopy(hs().config.cmd)
  table.insert(cmd, '--lsp')
  return cmd
end

function M.roots()
  return M.options.roots or hs().roots()
end

function M.init_options()
  return { roots = M.roots(), trustedExtensions = M.options.trusted_extensions or hs().config.trusted_extensions }
end

local function is_resource(path)
  return path:match('/skills/[^/]+/SKILL%.md$') or path:match('/templates/[^/]+%.md$')
    or path:match('/AGENTS%.md$') or path:match('/extensions/.+%.py$')
end

--- The root a buffer's file lies under, if it is a resource there; else nil.
function M.root_for(bufnr)
  local path = vim.api.nvim_buf_get_name(bufnr)
  if path == '' or not is_resource(path) then
    return nil
  end
  for _, root in ipairs(M.roots()) do
    local prefix = root:gsub('/$', '') .. '/'
    if path:sub(1, #prefix) == prefix then
      return root
    end
  end
  return nil
end

--- The vim.lsp.start configuration.
function M.config()
  return {
    name = 'harness_sidecar',
    cmd = M.cmd(),
    root_dir = vim.fn.getcwd(),
    init_options = M.init_options(),
  }
end

--- Attach the buffer to the harness-sidecar language server if it is a resource under a root.
function M.attach(bufnr)
  if not M.supported() or not M.root_for(bufnr) then
    return nil
  end
  return vim.lsp.start(M.config(), { bufnr = bufnr })
end

local warned = false

function M.setup(opts)
  M.options = opts or {}
  local ok, why = M.supported()
  if not ok then
    if not warned then
      warned = true
      require('harness_sidecar.ui').tell(why, vim.log.levels.WARN) -- one line, no hit-enter prompt at start-up
    end
    return false
  end
  local group = vim.api.nvim_create_augroup('harness_sidecar_lsp', { clear = true })
  -- One pattern per file kind (SKILL.md must not match twice and attach twice).
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
    group = group,
    pattern = { '*.md', '*.py' },
    callback = function(args) M.attach(args.buf) end,
  })
  return true
end

return M
