-- :qa while thread/start is still running (an extension that activates for 10 s): Neovim must
-- exit at once and end the sidecar. Prints the sidecar's pid, then "quitting" just before :qa!;
-- tests/test_clients.py measures from that line to Neovim's exit. Run: tests/run.sh NVIM quit.lua
local here = debug.getinfo(1, 'S').source:sub(2)
local t = dofile(vim.fn.fnamemodify(here, ':p:h') .. '/harness.lua')
t.out(t.version_line('quit'))
local root = vim.fn.tempname()
vim.fn.mkdir(root .. '/extensions', 'p')
vim.fn.writefile({ 'import time', 'def activate(api):', '    time.sleep(10)' }, root .. '/extensions/slow.py')
local hs = require('harness_sidecar')
hs.setup({ cmd = t.cmd, roots = { root }, trusted_extensions = { 'slow' } })
hs.ensure()
-- wait until thread/start is on its way (initialize answered), then a little into the activation
t.wait_for(function()
  for _, pending in pairs(hs.client and hs.client.pending or {}) do
    if pending.method == 'thread/start' then
      return true
    end
  end
end, 'thread/start sent')
vim.wait(500)
assert(hs.thread == nil, 'the thread started already')
t.out('sidecar pid ' .. hs.client.pid)
t.out('quitting')
vim.cmd('qa')
