-- The little TAP-like harness the headless tests share: check(name, fn), finish(), and the helpers
-- every test file needs (the sidecar's command, waiting, buffer text, captured notifications).
local M = { passed = 0, failed = 0 }

local here = debug.getinfo(1, 'S').source:sub(2)
M.repo = vim.fn.fnamemodify(here, ':p:h:h:h:h')

--- `name` in the checkout's .venv/bin (the README's `python3 -m venv .venv`) when it is there, else `fallback`.
function M.from_venv(name, fallback)
  local path = M.repo .. '/.venv/bin/' .. name
  return vim.fn.executable(path) == 1 and path or fallback
end

--- The sidecar's command line: HARNESS_SIDECAR_CMD (a JSON array), else the checkout's
--- .venv/bin/harness-sidecar, else harness-sidecar on PATH.
M.cmd = os.getenv('HARNESS_SIDECAR_CMD') and vim.json.decode(os.getenv('HARNESS_SIDECAR_CMD'))
  or { M.from_venv('harness-sidecar', 'harness-sidecar') }
--- The Python that runs the MCP SDK test server: HARNESS_TEST_PYTHON, else the checkout's .venv/bin/python.
M.python = os.getenv('HARNESS_TEST_PYTHON') or M.from_venv('python', 'python3')

function M.out(text)
  io.stdout:write(text .. '\n')
  io.stdout:flush()
end

function M.check(name, fn)
  local ok, err = pcall(fn)
  if type(err) == 'table' then
    err = vim.inspect(err)
  end
  if ok then
    M.passed = M.passed + 1
    M.out('ok - ' .. name)
  else
    M.failed = M.failed + 1
    M.out('not ok - ' .. name .. ': ' .. tostring(err))
  end
end

--- Print the closing line and quit: status 0 when everything passed, 1 otherwise.
function M.finish()
  M.out(string.format('%d passed, %d failed', M.passed, M.failed))
  if M.failed > 0 then
    vim.cmd('cq 1')
  else
    vim.cmd('qa!')
  end
end

function M.contains(haystack, needle)
  assert(haystack:find(needle, 1, true), string.format('%q not found in:\n%s', needle, haystack))
end

--- Wait (running the event loop) until predicate() is true; fail with `what` after ms.
function M.wait_for(predicate, what, ms)
  assert(vim.wait(ms or 20000, predicate, 10), 'timed out waiting for ' .. what)
end

function M.buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf or 0, 0, -1, false), '\n')
end

--- Replace vim.notify with one that records each { message, level }; return that list.
function M.capture_notifications()
  local notifications = {}
  vim.notify = function(message, level)
    table.insert(notifications, { message = message, level = level })
  end
  return notifications
end

--- Run an Ex command and return the text the plugin `hs` shows in its output window (once it is shown).
function M.shows(hs, command)
  local count = hs.shown_count
  vim.cmd(command)
  M.wait_for(function() return hs.shown_count > count end, 'the output of ' .. command)
  return M.buffer_text(hs.output_buf)
end

function M.version_line(how)
  local v = vim.version()
  return string.format('# Neovim %d.%d.%d (%s)', v.major, v.minor, v.patch, how)
end

return M
