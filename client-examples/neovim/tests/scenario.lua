-- Headless test of the plugin against the real sidecar: the review scenario through the
-- user commands, an editor tool answered from the visual selection, a blocked tool call,
-- and a sidecar killed mid-request. Run (see tests/run.sh):
--   nvim --headless -u NONE -i NONE --cmd 'set rtp^=client-examples/neovim' \
--        -c 'luafile client-examples/neovim/tests/scenario.lua' -c 'cq 2'
local here = debug.getinfo(1, 'S').source:sub(2)
local t = dofile(vim.fn.fnamemodify(here, ':p:h') .. '/harness.lua')
local out, check = t.out, t.check

local function buffer_text()
  return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
end

local function contains(haystack, needle)
  assert(haystack:find(needle, 1, true), string.format('%q not found in:\n%s', needle, haystack))
end

local workspace = vim.fn.fnamemodify(here, ':p:h:h:h') .. '/workspace'
local cmd = vim.json.decode(os.getenv('HARNESS_SIDECAR_CMD') or '["harness-sidecar"]')
out(t.version_line(vim.system and 'vim.system' or 'jobstart'))

local notifications = {}
vim.notify = function(message, level)
  table.insert(notifications, { message = message, level = level })
end

local hs = require('harness_sidecar')
hs.setup({
  cmd = cmd,
  roots = { workspace .. '/project', workspace .. '/user' },
  trusted_extensions = { 'review-extension' },
  timeout_ms = 20000,
})

check(':HarnessCatalog shows the winners and the shadowed', function()
  vim.cmd('HarnessCatalog')
  local text = buffer_text()
  contains(text, '- review: Use when reviewing code in this repository; not for deploys.')
  contains(text, '- commit-message:')
  contains(text, '- review [path, focus]')
  contains(text, '- review-extension: loaded')
  contains(text, 'shadowed')
end)

check(':HarnessActivate review shows the body', function()
  vim.cmd('HarnessActivate review')
  contains(buffer_text(), '# Reviewing in this project')
end)

check('skill completion comes from the catalog', function()
  local names = vim.fn.getcompletion('HarnessActivate re', 'cmdline')
  assert(vim.deep_equal(names, { 'review' }), vim.inspect(names))
end)

check(':HarnessRender fills the template', function()
  vim.cmd('HarnessRender review path=src/parser.ts focus=error handling')
  assert(buffer_text() == 'Review src/parser.ts with the review skill. Focus on error handling.\n',
    vim.inspect(buffer_text()))
end)

check('a missing template argument is reported, not thrown', function()
  local before = #notifications
  vim.cmd('HarnessRender review path=x')
  assert(#notifications == before + 1, vim.inspect(notifications))
  contains(notifications[#notifications].message, 'missing_argument')
end)

check(':HarnessContext shows the system prompt with the active skill', function()
  vim.cmd('HarnessContext')
  local text = buffer_text()
  contains(text, '# Active skill: review')
  assert(text:find('User instructions', 1, true) < text:find('Project instructions', 1, true))
end)

check('review_note is allowed, a SECRET note is blocked and paired with its call', function()
  local allowed = assert(hs.call_tool('review_note', { text = 'parse() drops the last token' }, 'call-1'))
  assert(allowed.result.isError == false, vim.inspect(allowed))
  local blocked = assert(hs.call_tool('review_note', { text = 'SECRET-1' }, 'call-2'))
  assert(blocked.result.toolCallId == 'call-2' and blocked.result.toolName == 'review_note')
  assert(blocked.result.isError == true)
  assert(blocked.result.details.blocked.kind == 'deny', vim.inspect(blocked.result))
end)

check('the sidecar asks the editor for the visual selection', function()
  vim.cmd('enew')
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'first line', 'export function parse(src) {', 'last' })
  vim.cmd('normal! 2GVj\27') -- select lines 2-3 linewise, then leave visual mode
  local result = assert(hs.call_tool('editor_selection', {}, 'call-3'))
  assert(result.result.isError == false, vim.inspect(result))
  assert(result.result.content[1].text == 'export function parse(src) {\nlast', vim.inspect(result.result.content))
end)

check('non-ASCII text survives the round trip', function()
  local result = assert(hs.call_tool('review_note', { text = 'naïve — ✓ 日本' }, 'call-4'))
  contains(result.result.content[1].text, 'naïve — ✓ 日本')
end)

check('a sidecar killed mid-request is reported, not waited for', function()
  hs.config.tools = {
    editor_wait = { description = 'never answers', handler = function() return nil end },
  }
  hs.stop()
  assert(hs.ensure())
  local pid = hs.client.pid
  local uv = vim.uv or vim.loop
  local timer = uv.new_timer()
  timer:start(300, 0, function() uv.kill(pid, 9) end)
  local started = uv.now()
  local result, err = hs.call_tool('editor_wait', {}, 'call-5')
  assert(result == nil and err and err.kind == 'sidecar_exited', vim.inspect({ result, err }))
  assert(uv.now() - started < 10000)
  local last = notifications[#notifications]
  contains(last.message, 'stopped unexpectedly')
  assert(last.level == vim.log.levels.ERROR)
  -- the next command starts a fresh sidecar
  vim.cmd('HarnessCatalog')
  contains(buffer_text(), '- review:')
end)

check(':checkhealth harness_sidecar runs the sidecar', function()
  vim.cmd('checkhealth harness_sidecar')
  local text = buffer_text()
  contains(text, 'harness-sidecar 0.1.0 answers (protocol 2)')
  assert(not text:find('ERROR', 1, true), text)
end)

hs.stop()
t.finish()
