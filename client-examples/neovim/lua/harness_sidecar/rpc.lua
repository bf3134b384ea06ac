-- JSON-RPC over JSONL with a harness-sidecar child process.
-- Spawns with vim.system (Neovim 0.10+) or jobstart (older), buffers partial stdout chunks
-- into lines, correlates response ids, answers the sidecar's reverse requests and reports
-- a sidecar that exits while requests are pending.
local M = {}

local Client = {}
Client.__index = Client

local function is_nil(value)
  return value == nil or value == vim.NIL
end

--- opts: cmd (list), on_request(method, params, id) -> result | nil, err (nil, nil: answered later with
--- Client:respond(id, …)), on_notification(method, params),
--- on_exit(code, signal, expected), on_stderr(line)
function M.new(opts)
  return setmetatable({
    cmd = opts.cmd,
    on_request = opts.on_request,
    on_notification = opts.on_notification,
    on_exit = opts.on_exit,
    on_stderr = opts.on_stderr,
    pending = {},
    next_id = 1,
    buffer = '',
    err_buffer = '',
    running = false,
    stopping = false,
  }, Client)
end

function Client:start()
  self.stopping = false
  if vim.system then
    local ok, proc = pcall(vim.system, self.cmd, {
      stdin = true,
      stdout = function(_, data)
        if data then
          vim.schedule(function() self:_feed(data) end)
        end
      end,
      stderr = function(_, data)
        if data then
          vim.schedule(function() self:_feed_stderr(data) end)
        end
      end,
    }, function(obj)
      vim.schedule(function() self:_exited(obj.code, obj.signal) end)
    end)
    if not ok then
      return nil, 'cannot start ' .. tostring(self.cmd[1]) .. ': ' .. tostring(proc):gsub('^.-:%d+: ', '')
    end
    self.proc = proc
    self.pid = proc.pid
  else
    local ok, job = pcall(vim.fn.jobstart, self.cmd, {
      on_stdout = function(_, data) self:_feed_lines(data) end,
      on_stderr = function(_, data)
        for i, chunk in ipairs(data) do
          self:_feed_stderr((i > 1 and '\n' or '') .. chunk)
        end
      end,
      on_exit = function(_, code) self:_exited(code, 0) end,
    })
    if not ok or job <= 0 then
      return nil, 'cannot start ' .. tostring(self.cmd[1]) .. ': ' .. tostring(job):gsub('^.-:%d+: ', '')
    end
    self.job = job
    self.pid = vim.fn.jobpid(job)
  end
  self.running = true
  return true
end

function Client:_write(text)
  if not self.running then
    return
  end
  if self.proc then
    pcall(self.proc.write, self.proc, text)
  else
    pcall(vim.fn.chansend, self.job, text)
  end
end

function Client:send(message)
  message.jsonrpc = '2.0'
  self:_write(vim.json.encode(message) .. '\n')
end

-- Append a chunk to a buffer and call on_line for every complete line; returns the rest.
local function split_lines(buffer, chunk, on_line)
  buffer = buffer .. chunk
  while true do
    local newline = buffer:find('\n', 1, true)
    if not newline then
      return buffer
    end
    local line = buffer:sub(1, newline - 1)
    buffer = buffer:sub(newline + 1)
    on_line(line)
  end
end

-- vim.system: raw chunks; a line may be split across chunks.
function Client:_feed(chunk)
  self.buffer = split_lines(self.buffer, chunk, function(line) self:_line(line) end)
end

-- jobstart: a list whose first item continues the last partial line and whose last item
-- is the new partial line ('' when the chunk ended with a newline).
function Client:_feed_lines(data)
  self.buffer = self.buffer .. data[1]
  for i = 2, #data do
    self:_line(self.buffer)
    self.buffer = data[i]
  end
end

function Client:_feed_stderr(chunk)
  self.err_buffer = split_lines(self.err_buffer, chunk, function(line)
    if self.on_stderr then
      self.on_stderr(line)
    end
  end)
end

function Client:_line(line)
  if line:match('^%s*$') then
    return
  end
  local ok, message = pcall(vim.json.decode, line)
  if not ok or type(message) ~= 'table' then
    if self.on_stderr then
      self.on_stderr('unparsable line from the sidecar: ' .. line:sub(1, 200))
    end
    return
  end
  if not is_nil(message.method) and not is_nil(message.id) then
    self:_answer(message)
  elseif not is_nil(message.method) then
    if self.on_notification then
      self.on_notification(message.method, message.params)
    end
  else
    local waiting = self.pending[message.id]
    if not waiting then
      return -- a response to a request we gave up on
    end
    self.pending[message.id] = nil
    if not is_nil(message.error) then
      local data = is_nil(message.error.data) and {} or message.error.data
      waiting.callback({ code = message.error.code, message = message.error.message, kind = data.kind, data = data }, nil)
    else
      waiting.callback(nil, message.result)
    end
  end
end

function Client:_answer(message)
  local result, err
  if self.on_request then
    local ok, r, e = pcall(self.on_request, message.method, message.params, message.id)
    if not ok then
      err = { code = -32000, message = tostring(r) }
    elseif r == nil and e == nil then
      return -- the handler answers later (or never), through Client:respond
    else
      result, err = r, e
    end
  else
    err = { code = -32601, message = 'this editor serves no ' .. message.method }
  end
  if err then
    self:send({ id = message.id, error = err })
  else
    self:send({ id = message.id, result = result })
  end
end

--- Answer a reverse request later (for a handler that returned nothing).
function Client:respond(id, result, err)
  if err then
    self:send({ id = id, error = err })
  else
    self:send({ id = id, result = result })
  end
end

--- callback(err, result); returns the request id.
function Client:request(method, params, callback)
  local id = self.next_id
  self.next_id = id + 1
  if not self.running then
    callback({ kind = 'not_running', message = 'the sidecar is not running' }, nil)
    return id
  end
  self.pending[id] = { method = method, callback = callback }
  self:send({ id = id, method = method, params = params or vim.empty_dict() })
  return id
end

--- Wait for the answer (runs the event loop meanwhile). Returns result, err.
function Client:request_sync(method, params, timeout_ms)
  local done, result, err = false, nil, nil
  local id = self:request(method, params, function(e, r)
    done, err, result = true, e, r
  end)
  local ok = vim.wait(timeout_ms or 30000, function() return done end, 10)
  if not ok then
    self.pending[id] = nil
    self:send({ method = '$/cancelRequest', params = { id = id } })
    return nil, { kind = 'timeout', message = method .. ' timed out' }
  end
  return result, err
end

function Client:notify(method, params)
  self:send({ method = method, params = params or vim.empty_dict() })
end

function Client:_exited(code, signal)
  if not self.running then
    return
  end
  self.running = false
  local expected = self.stopping
  local why = (signal and signal ~= 0) and ('signal ' .. signal) or ('status ' .. tostring(code))
  local pending = self.pending
  self.pending = {}
  for _, waiting in pairs(pending) do
    waiting.callback({ kind = 'sidecar_exited', message = 'the sidecar exited (' .. why .. ') before answering ' .. waiting.method }, nil)
  end
  if self.on_exit then
    self.on_exit(code, signal, expected)
  end
end

--- shutdown, then exit. With wait_ms, wait for the process (only when Neovim exits); without,
--- return at once and kill the process if it is still there after 3 s.
function Client:stop(wait_ms)
  if not self.running then
    return
  end
  self.stopping = true
  if wait_ms then
    self:request_sync('shutdown', nil, math.min(wait_ms, 2000))
    self:notify('exit')
    if not vim.wait(wait_ms, function() return not self.running end, 10) then
      self:kill()
    end
    return
  end
  self:request('shutdown', nil, function()
    self:notify('exit')
  end)
  vim.defer_fn(function()
    if self.running then
      self:kill()
    end
  end, 3000)
end

--- Neovim exits: no shutdown round trip (the sidecar may be busy starting a thread); `exit` and end
--- of input, wait at most wait_ms for the process, then SIGTERM (the sidecar ends what it started).
function Client:stop_now(wait_ms)
  if not self.running then
    return
  end
  self.stopping = true
  self:notify('exit')
  if self.proc then
    pcall(self.proc.write, self.proc, nil) -- closes stdin
  elseif self.job then
    pcall(vim.fn.chanclose, self.job, 'stdin')
  end
  if not vim.wait(wait_ms or 200, function() return not self.running end, 5) then
    self:kill(15)
  end
end

function Client:kill(signal)
  if self.proc then
    self.proc:kill(signal or 15)
  elseif self.job then
    vim.fn.jobstop(self.job)
  end
end

M.Client = Client
return M
