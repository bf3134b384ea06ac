-- Headless test of the language server part (Neovim 0.8+; run on 0.11): one setup() shared with the
-- commands attaches the bundled broken skill and shows the sidecar's diagnostics; fixing the
-- unsaved buffer clears them; on 0.11, vim.lsp.enable('harness_sidecar') works too.
local here = debug.getinfo(1, 'S').source:sub(2)
local t = dofile(vim.fn.fnamemodify(here, ':p:h') .. '/harness.lua')
local out, check = t.out, t.check

local workspace = vim.fn.fnamemodify(here, ':p:h:h:h') .. '/workspace'
local cmd = t.cmd
out(t.version_line('vim.lsp.start'))
local roots = { workspace .. '/broken', workspace .. '/project', workspace .. '/user' }

require('harness_sidecar').setup({ cmd = cmd, roots = roots, trusted_extensions = { 'review-extension' }, lsp = true })

local function clients(bufnr)
  return vim.lsp.get_clients and vim.lsp.get_clients({ bufnr = bufnr }) or vim.lsp.get_active_clients({ bufnr = bufnr })
end

local function wait_for(bufnr, predicate)
  local found
  vim.wait(15000, function()
    found = vim.diagnostic.get(bufnr)
    return predicate(found)
  end, 20)
  return found
end

check('a broken skill gets its diagnostic with the name range', function()
  vim.cmd('edit ' .. workspace .. '/broken/skills/wrong-name/SKILL.md')
  local bufnr = vim.api.nvim_get_current_buf()
  local found = wait_for(bufnr, function(d) return #d > 0 end)
  assert(#found == 1, vim.inspect(found))
  local d = found[1]
  assert(d.code == 'name_mismatch', vim.inspect(d))
  assert(d.severity == vim.diagnostic.severity.ERROR)
  assert(d.lnum == 1 and d.col == 6 and d.end_col == 11, vim.inspect(d))
  assert(d.message:find("differs from its directory 'wrong-name'", 1, true), d.message)
end)

check('fixing the unsaved buffer clears the diagnostic', function()
  local bufnr = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(bufnr, 1, 2, false, { 'name: wrong-name' })
  local found = wait_for(bufnr, function(d) return #d == 0 end)
  assert(#found == 0, vim.inspect(found))
  assert(vim.bo[bufnr].modified, 'the fix stays unsaved')
end)

check('a shadowed skill is information, and hover says who wins', function()
  vim.cmd('edit ' .. workspace .. '/user/skills/review/SKILL.md')
  local bufnr = vim.api.nvim_get_current_buf()
  local found = wait_for(bufnr, function(d) return #d > 0 end)
  assert(found[1].severity == vim.diagnostic.severity.INFO and found[1].code == 'shadowed', vim.inspect(found))
  local client = clients(bufnr)[1]
  local response = client.request_sync('textDocument/hover', {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = { line = 1, character = 7 },
  }, 10000, bufnr)
  local text = response.result.contents.value
  assert(text:find('**shadowed**', 1, true) and text:find('/project/skills/review/SKILL.md', 1, true), text)
end)

check('one client for the session, attached once per buffer', function()
  local bufnr = vim.api.nvim_get_current_buf()
  assert(#clients(bufnr) == 1, vim.inspect(#clients(bufnr)))
  assert(#clients() == 1, 'a second server was started')
  assert(clients(bufnr)[1].name == 'harness_sidecar')
end)

check('a file outside every root is not attached', function()
  local outside = vim.fn.tempname() .. '/skills/x/SKILL.md'
  vim.fn.mkdir(vim.fn.fnamemodify(outside, ':h'), 'p')
  vim.fn.writefile({ 'garbage' }, outside)
  vim.cmd('edit ' .. outside)
  local bufnr = vim.api.nvim_get_current_buf()
  vim.wait(500)
  local clients = vim.lsp.get_clients and vim.lsp.get_clients({ bufnr = bufnr })
    or vim.lsp.get_active_clients({ bufnr = bufnr })
  assert(#clients == 0 and #vim.diagnostic.get(bufnr) == 0)
end)

check("vim.lsp.enable('harness_sidecar') on 0.11 uses lsp/harness_sidecar.lua", function()
  for _, client in ipairs(clients()) do
    client.stop()
  end
  vim.wait(5000, function() return #clients() == 0 end, 20)
  vim.api.nvim_create_augroup('harness_sidecar_lsp', { clear = true }) -- only vim.lsp.enable attaches now
  vim.cmd('silent %bwipeout!')
  if not vim.lsp.enable then
    return out('# skipped: vim.lsp.enable needs Neovim 0.11')
  end
  vim.cmd('filetype on') -- -u NONE leaves it off; vim.lsp.enable attaches on FileType
  vim.lsp.enable('harness_sidecar')
  vim.cmd('edit ' .. workspace .. '/broken/skills/deploy/SKILL.md')
  local bufnr = vim.api.nvim_get_current_buf()
  local found = wait_for(bufnr, function(d) return #d > 0 end)
  assert(found[1] and found[1].code == 'invalid_frontmatter', vim.inspect(found))
  assert(#clients(bufnr) == 1)
  vim.cmd('edit ' .. workspace .. '/../README.md') -- not a resource: not attached
  assert(#clients(vim.api.nvim_get_current_buf()) == 0)
end)

for _, client in ipairs(clients()) do
  client.stop()
end
t.finish()
