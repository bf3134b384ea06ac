-- The editor's side of ctx.ui (:help harness_sidecar-ui): what a trusted extension asks the user
-- through the sidecar, shown with Neovim's own interfaces, so that a UI plugin that replaces them
-- (telescope, dressing, fzf-lua, snacks, mini.pick…) shows them too.
--
--   ui/confirm → vim.ui.select({'Allow', 'Deny'}) naming the extension, the tool and its arguments
--   ui/select  → vim.ui.select over the options      ui/input → vim.ui.input
--   ui/notify  → vim.notify with the level           ui/status → require('harness_sidecar').statusline()
--
-- Every question is answered asynchronously (the editor never waits for the sidecar, nor the
-- sidecar for a blocked editor). Closing a picker without a choice answers "no" (confirmed: false,
-- value: null). When the sidecar stops waiting ($/cancelRequest: its uiTimeoutMs ran out or the
-- tool call was cancelled), the question is withdrawn: answered at once as cancelled, the user told
-- so, and a choice made later is dropped (vim.ui offers no way to close a picker from outside).
local M = {}

--- What this client answers: sent as initialize.capabilities.ui.
M.capabilities = { confirm = true, select = true, input = true, notify = true, status = true }

M.questions = {} -- the sidecar's ui/* requests waiting for the user: id -> { method, params, client }
M.items = {} -- status items: '<extension>\0<key>' -> { extension, key, text }

local function is_nil(value)
  return value == nil or value == vim.NIL
end

local function one_line(text)
  return (tostring(text or ''):gsub('%s*\n%s*', ' '))
end

local function tell(message, level)
  vim.notify('harness-sidecar: ' .. message, level or vim.log.levels.INFO)
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

local function ask_confirm(params, reply)
  vim.ui.select({ 'Allow', 'Deny' }, { prompt = M.confirm_prompt(params), kind = 'harness_sidecar.confirm' },
    function(choice)
      reply({ confirmed = choice == 'Allow' })
    end)
end

local function ask_select(params, reply)
  vim.ui.select(params.options, {
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
  local prompt = params.extensionId .. ': ' .. one_line(params.title)
  if not is_nil(params.placeholder) then
    prompt = prompt .. ' (' .. params.placeholder .. ')'
  end
  vim.ui.input({ prompt = prompt .. ': ' }, function(value)
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
  tell(string.format('%s no longer waits for an answer to "%s"', question.params.extensionId,
    one_line(question.params.title)), vim.log.levels.WARN)
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
  M.questions = {}
  if next(M.items) then
    M.items = {}
    redraw()
  end
end

return M
