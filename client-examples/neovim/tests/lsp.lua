-- Headless test of the LSP configuration (Neovim 0.8+): opening the bundled broken skill
-- shows the sidecar's diagnostics; fixing the unsaved buffer clears them.
local here = debug.getinfo(1, 'S').source:sub(2)
local t = dofile(vim.fn.fnamemodify(here, ':p:h') .. '/harness.lua')
local out, check = t.out, t.check

local workspace = vim.fn.fnamemodify(here, ':p:h:h:h') .. '/workspace'
local cmd = vim.json.decode(os.getenv('HARNESS_SIDECAR_CMD') or '["harness-sidecar"]')
table.insert(cmd, '--lsp')
out(t.version_line('vim.lsp.start'))

require('harness_sidecar.lsp').setup({
  cmd = cmd,
  roots = { workspace .. '/broken', workspace .. '/project', workspace .. '/user' },
  trusted_extensions = { 'review-extension' },
})

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
  local client = vim.lsp.get_clients and vim.lsp.get_clients({ bufnr = bufnr })[1]
    or vim.lsp.get_active_clients({ bufnr = bufnr })[1]
  local response = client.request_sync('textDocument/hover', {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = { line = 1, character = 7 },
  }, 10000, bufnr)
  local text = response.result.contents.value
  assert(text:find('**shadowed**', 1, true) and text:find('/project/skills/review/SKILL.md', 1, true), text)
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

for _, client in ipairs(vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()) do
  client.stop()
end
t.finish()
