-- The little TAP-like harness the headless tests share: check(name, fn), finish().
local M = { passed = 0, failed = 0 }

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

function M.version_line(how)
  local v = vim.version()
  return string.format('# Neovim %d.%d.%d (%s)', v.major, v.minor, v.patch, how)
end

return M
