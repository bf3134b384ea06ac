-- The editor's side of ctx.ui (:help harness_sidecar-ui): what a trusted extension asks the user
-- through the sidecar, shown with Neovim's own interfaces, so that a UI plugin that replaces them
-- (telescope, dressing, fzf-lua, snacks, mini.pick…) shows them too.
--
--   ui/confirm → vim.ui.select({'Allow', 'Deny'}) naming the extension, the tool and its arguments
--   ui/select  → vim.ui.select over the options      ui/input → vim.ui.input
--   ui/notify  → vim.notify with the level           ui/status → require('harness_sidecar').statusline()
--   ui/openUrl → vim.ui.open (0.10+; else, or when it fails, a message with the URL to open)
--
-- Every question is answered asynchronously (the editor never waits for the sidecar, nor the
-- sidecar for a blocked editor). While vim.ui.select / vim.ui.input are Neovim's stock ones (which
-- block the editor: inputlist(), input()), the plugin asks in floating windows of its own instead
-- (harness_sidecar.prompt), which never block. Closing a prompt without a choice answers "no"
-- (confirmed: false, value: null). When the sidecar stops waiting ($/cancelRequest: its uiTimeoutMs
-- ran out or the tool call was cancelled), the question is withdrawn: answered at once as
-- cancelled, its floating window closed, the user told so; with a replaced vim.ui (which offers no
-- way to close a picker from outside) a choice made later is dropped.
--
-- Messages (M.tell): with the stock vim.notify, one line at a time that fits the command line (the
-- last of those arriving together, with how many more), never while you type a command (shown after
-- it) — no hit-enter prompt that nobody asked for; every message in full in :HarnessLog. A replaced
-- vim.notify (nvim-notify, noice…) gets every message as it is.
local prompt = require('harness_sidecar.prompt')
local M = {}

--- What this client answers: sent as initialize.capabilities.ui.
M.capabilities = { confirm = true, select = true, input = true, notify = true, status = true, openUrl = true }

M.questions = {} -- the sidecar's ui/* requests waiting for the user: id -> { method, params, client }
M.items = {} -- status items: '<extension>\0<key>' -> { extension, key, text }

local function is_nil(value)
  return value == nil or value == vim.NIL
end

local function one_line(text)
  return (tostring(text or ''):gsub('%s*\n%s*', ' '))
end

--- Whether `fn` is Neovim's own (defined in its runtime's lua/vim/), not a plugin's replacement.
function M.is_stock(fn)
  local info = type(fn) == 'function' and debug.getinfo(fn, 'S')
  local source = info and info.source or ''
  return source:find('vim/_editor.lua', 1, true) ~= nil or source:find('/lua/vim/ui.lua', 1, true) ~= nil
end

M.history = {} -- every message told, for the tests and :HarnessLog
local queue, flushing = {}, false

local function echo_queued()
  flushing = false
  if vim.api.nvim_get_mode().mode:sub(1, 1) == 'c' then
    -- the user is typing a command line: show it when they are done
    flushing = true
    vim.api.nvim_create_autocmd('CmdlineLeave', { once = true, callback = function() vim.schedule(echo_queued) end })
    return
  end
  local messages = queue
  queue = {}
  local last = messages[#messages]
  if not last then
    return
  end
  local text = last.text:gsub('%s*\n%s*', ' ')
  if #messages > 1 then
    text = string.format('%s (+%d more: :HarnessLog)', text, #messages - 1)
  end
  local room = math.max(10, (vim.v.echospace or (vim.o.columns - 12)) - 1)
  if vim.fn.strdisplaywidth(text) > room then
    text = vim.fn.strcharpart(text, 0, room - 1) .. '…'
    while vim.fn.strdisplaywidth(text) > room do
      text = vim.fn.strcharpart(text, 0, vim.fn.strchars(text) - 2) .. '…'
    end
  end
  local hl = last.level >= vim.log.levels.ERROR and 'ErrorMsg' or last.level >= vim.log.levels.WARN and 'WarningMsg' or 'None'
  vim.api.nvim_echo({ { text, hl } }, true, {}) -- this line in :messages, every message in full in :HarnessLog
end

--- Tell the user something: see the header (no hit-enter prompt with the stock vim.notify).
function M.tell(message, level)
  level = level or vim.log.levels.INFO
  local text = 'harness-sidecar: ' .. message
  table.insert(M.history, { message = text, level = level })
  if #M.history > 1000 then
    table.remove(M.history, 1)
  end
  if not M.is_stock(vim.notify) then
    return vim.notify(text, level)
  end
  table.insert(queue, { text = text, level = level })
  if not flushing then
    flushing = true
    vim.schedule(echo_queued)
  end
end

local tell = M.tell

--- ui/openUrl: a remote MCP server's sign-in page. vim.ui.open (Neovim 0.10+) opens it in the browser;
--- otherwise, or when that fails, the user is told the URL to open. Answers { opened = bool } later,
--- through `reply` (called from the main loop, not from the RPC callback).
function M.open_url(params, reply)
  vim.schedule(function()
    local opened = false
    if type(vim.ui.open) == 'function' then
      local ok, cmd, err = pcall(vim.ui.open, params.url)
      opened = ok and cmd ~= nil and err == nil
    end
    if opened then
      tell(one_line(params.reason) .. ': opened in your browser', vim.log.levels.INFO)
    else
      tell(one_line(params.reason) .. ': open ' .. params.url, vim.log.levels.WARN)
    end
    reply({ opened = opened })
  end)
end

--- The question of a ui/confirm as one line: who asks, what, and about which tool call.
function M.confirm_prompt(params)
  local prompt = string.format('%s asks — %s: %s', params.extensionId, one_line(params.title), one_line(params.message))
  if not is_nil(params.tool) then
    local call = params.tool
    if not is_nil(params.arguments) then
      call = call .. ' ' .. vim.json.encode(params.arguments):gsub('\\/', '/') -- Neovim 0.7 writes '\/'
    end
    prompt = prompt .. ' [' .. call .. ']'
  end
  return prompt
end

--- vim.ui.select, or the plugin's floating prompt while vim.ui.select is the stock one; returns a
--- function that closes the prompt (nil when it cannot be closed from outside).
local function select(items, opts, on_choice)
  if M.is_stock(vim.ui.select) then
    return prompt.select(items, opts, on_choice)
  end
  vim.ui.select(items, opts, on_choice)
end

local function input(opts, on_confirm)
  if M.is_stock(vim.ui.input) then
    return prompt.input(opts, on_confirm)
  end
  vim.ui.input(opts, on_confirm)
end

M.select, M.input = select, input

local function ask_confirm(params, reply)
  return select({ 'Allow', 'Deny' }, { prompt = M.confirm_prompt(params), kind = 'harness_sidecar.confirm' },
    function(choice)
      reply({ confirmed = choice == 'Allow' })
    end)
end

local function ask_select(params, reply)
  return select(params.options, {
    prompt = params.extensionId .. ': ' .. one_line(params.title),
    kind = 'harness_sidecar.select',
    format_item = function(option)
      return is_nil(option.description) and option.label or (option.label .. ' — ' .. option.description)
    end,
  }, function(choice)
    reply({ value = choice and choice.value or vim.NIL })
  end)
end

local function ask_input(params, reply)
  local text = params.extensionId .. ': ' .. one_line(params.title)
  if not is_nil(params.placeholder) then
    text = text .. ' (' .. params.placeholder .. ')'
  end
  return input({ prompt = text .. ': ' }, function(value)
    reply({ value = value == nil and vim.NIL or value })
  end)
end

M.askers = { ['ui/confirm'] = ask_confirm, ['ui/select'] = ask_select, ['ui/input'] = ask_input }

--- Ask the user the sidecar's request `id` (one of M.askers) and answer it with `client`, later.
function M.ask(client, id, method, params)
  M.questions[id] = { method = method, params = params, client = client }
  vim.schedule(function()
    if not M.questions[id] then
      return -- withdrawn before it was shown
    end
    local ok, err = pcall(M.askers[method], params, function(result)
      local question = M.questions[id]
      if not question then
        return -- withdrawn: the sidecar no longer waits; this late answer is dropped
      end
      M.questions[id] = nil
      client:respond(id, result)
    end)
    if ok and type(err) == 'function' and M.questions[id] then
      M.questions[id].close = err
    end
    if not ok and M.questions[id] then
      M.questions[id] = nil
      client:respond(id, nil, { code = -32000, message = 'the editor could not ask: ' .. tostring(err) })
    end
  end)
end

--- $/cancelRequest from the sidecar: withdraw the question (answered at once as cancelled).
function M.withdraw(id)
  local question = M.questions[id]
  if not question then
    return
  end
  M.questions[id] = nil
  question.client:respond(id, nil, { code = -32800, message = question.method .. ' was cancelled' })
  if question.close then
    question.close()
  end
  tell(string.format('%s no longer waits for an answer to "%s"%s', question.params.extensionId,
    one_line(question.params.title), question.close and ' (its prompt is closed)' or ''), vim.log.levels.WARN)
end

local LEVELS = { info = vim.log.levels.INFO, warning = vim.log.levels.WARN, error = vim.log.levels.ERROR }

function M.notify(params)
  tell('[' .. tostring(params.extensionId) .. '] ' .. tostring(params.message), LEVELS[params.level] or vim.log.levels.INFO)
end

local function redraw()
  pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'HarnessSidecarStatus', modeline = false })
  pcall(vim.cmd, 'redrawstatus!')
end

function M.status(params)
  local key = tostring(params.extensionId) .. '\0' .. tostring(params.key)
  if is_nil(params.text) then
    M.items[key] = nil
  else
    M.items[key] = { extension = params.extensionId, key = params.key, text = params.text }
  end
  redraw()
end

--- The status items, sorted by extension and key, joined with ' · ' ('' when there are none).
function M.statusline()
  local keys = vim.tbl_keys(M.items)
  table.sort(keys)
  local texts = {}
  for _, key in ipairs(keys) do
    table.insert(texts, M.items[key].text)
  end
  return table.concat(texts, ' · ')
end

--- The sidecar is gone: its status items and questions with it.
function M.clear()
  for _, question in pairs(M.questions) do
    if question.close then
      question.close()
    end
  end
  M.questions = {}
  if next(M.items) then
    M.items = {}
    redraw()
  end
end

return M
