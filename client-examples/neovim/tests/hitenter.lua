-- In a real terminal (tests/test_clients.py runs Neovim on a pty, with its TUI): a burst of long
-- messages from an extension (ui/notify), a failing command and (on 0.7) setup()'s notice that the
-- language server needs 0.8 must not leave Neovim at a "Press ENTER" prompt nobody asked for. Writes what it saw to $HARNESS_HITENTER_OUT:
--   mode <mode> blocking <bool>        (read by a libuv timer: it runs even at a hit-enter prompt)
--   messages <n>                       (every message is in :HarnessLog)
local here = debug.getinfo(1, 'S').source:sub(2)
local t = dofile(vim.fn.fnamemodify(here, ':p:h') .. '/harness.lua')
local uv = vim.uv or vim.loop
local out = assert(io.open(assert(os.getenv('HARNESS_HITENTER_OUT')), 'w'))
local root = vim.fn.tempname()
vim.fn.mkdir(root .. '/extensions', 'p')
vim.fn.writefile({
  'def shout(arguments, ctx):',
  '    for i in range(5):',
  '        ctx.ui.notify(f"message {i}: " + "a long line that does not fit on the command line " * 4, level="warning")',
  '    return "done"',
  '',
  'def activate(api):',
  '    api.register_command("shout", "Notify five times", shout)',
}, root .. '/extensions/shouter.py')
local hs = require('harness_sidecar')
hs.setup({ cmd = t.cmd, roots = { root }, trusted_extensions = { 'shouter' }, lsp = true }) -- 0.7: says the LSP needs 0.8
local done = false
hs.run_command('shout', {}, function(err, result)
  done = true
  vim.cmd('HarnessRender no-such-template') -- and an error reported on top
end)
local timer = uv.new_timer()
local ticks_after, waited = 0, 0
timer:start(500, 200, function() -- a libuv callback: runs even while Neovim waits at a prompt
  waited = waited + 1
  if not done and waited < 50 then
    return -- (at a hit-enter prompt the command's answer may never be handled: sample after 10 s anyway)
  end
  ticks_after = ticks_after + 1
  if ticks_after < 6 then
    return -- a second for the failing :HarnessRender's answer and the redraws
  end
  timer:stop()
  local mode = vim.api.nvim_get_mode()
  out:write(string.format('mode %s blocking %s\n', mode.mode, tostring(mode.blocking)))
  out:flush()
  vim.schedule(function()
    vim.cmd('HarnessLog')
    local history = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    local n = 0
    for _ in history:gmatch('message %d: ') do
      n = n + 1
    end
    out:write('messages ' .. n .. '\n')
    out:close()
    vim.cmd('qa!')
  end)
end)
