-- harness-sidecar for Neovim: the catalog, skill activation, template rendering and the
-- system prompt of an agent harness, served by a harness-sidecar child process.
--
--   require('harness_sidecar').setup({
--     cmd = { 'harness-sidecar' },                        -- the sidecar's argv
--     roots = { vim.fn.getcwd() .. '/.agents', vim.fn.expand('~/.agents') },  -- earlier wins
--     trusted_extensions = { 'review-extension' },       -- ids the sidecar may import
--   })
local rpc = require('harness_sidecar.rpc')

local M = {}

M.config = {
  cmd = { 'harness-sidecar' },
  roots = nil, -- default: { <cwd>/.agents, ~/.agents }
  trusted_extensions = {},
  timeout_ms = 30000,
  -- Tools the sidecar may ask the editor to run (item/tool/call): name -> { description, handler(arguments) -> text, ok }
  tools = {},
}

M.client = nil
M.thread = nil -- the thread/start result of this session

local function notify(message, level)
  vim.notify('harness-sidecar: ' .. message, level or vim.log.levels.INFO)
end

--- The text of the last visual selection in the current buffer.
function M.selection_text()
  local start_pos, end_pos = vim.fn.getpos("'<"), vim.fn.getpos("'>")
  if start_pos[2] == 0 then
    return nil
  end
  local lines = vim.api.nvim_buf_get_lines(0, start_pos[2] - 1, end_pos[2], false)
  if #lines == 0 then
    return nil
  end
  if vim.fn.visualmode() ~= 'V' then
    lines[#lines] = lines[#lines]:sub(1, end_pos[3])
    lines[1] = lines[1]:sub(start_pos[3])
  end
  return table.concat(lines, '\n')
end

local default_tools = {
  editor_selection = {
    description = 'The text of the last visual selection in the current Neovim buffer.',
    handler = function()
      local text = M.selection_text()
      if not text then
        return 'nothing is selected', false
      end
      return text, true
    end,
  },
}

local function tools()
  return vim.tbl_extend('force', default_tools, M.config.tools or {})
end

local function on_request(method, params)
  if method ~= 'item/tool/call' then
    return nil, { code = -32601, message = 'unknown method ' .. method }
  end
  local tool = tools()[params.tool]
  if not tool then
    return { contentItems = { { type = 'inputText', text = 'no editor tool ' .. tostring(params.tool) } }, success = false }
  end
  local ok, text, success = pcall(tool.handler, params.arguments)
  if not ok then
    return { contentItems = { { type = 'inputText', text = tostring(text) } }, success = false }
  end
  if text == nil then
    return nil -- the handler answers later through M.client:respond
  end
  return { contentItems = { { type = 'inputText', text = tostring(text) } }, success = success ~= false }
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', M.config, opts or {})
  local group = vim.api.nvim_create_augroup('harness_sidecar', { clear = true })
  vim.api.nvim_create_autocmd('VimLeavePre', { group = group, callback = function() M.stop() end })
end

local function default_roots()
  return { vim.fn.getcwd() .. '/.agents', vim.fn.expand('~/.agents') }
end

--- Start the sidecar and a thread if needed; returns the thread/start result or nil, err.
function M.ensure()
  if M.client and M.client.running and M.thread then
    return M.thread
  end
  local client = rpc.new({
    cmd = M.config.cmd,
    on_request = on_request,
    on_notification = function(method, params)
      if method == 'thread/diagnostic' then
        notify(string.format('[%s] %s %s: %s', params.extensionId, params.hook, params.kind, params.message),
          vim.log.levels.WARN)
      end
    end,
    on_stderr = function(line)
      M.log = M.log or {}
      table.insert(M.log, line)
    end,
    on_exit = function(code, signal, expected)
      M.thread = nil
      if not expected then
        local why = (signal and signal ~= 0) and ('signal ' .. signal) or ('status ' .. tostring(code))
        notify('the sidecar stopped unexpectedly (' .. why .. ')', vim.log.levels.ERROR)
      end
    end,
  })
  local ok, err = client:start()
  if not ok then
    return nil, { kind = 'spawn_failed', message = err }
  end
  M.client = client
  local _, init_err = client:request_sync('initialize', { clientInfo = { name = 'neovim' }, protocolVersion = '2' },
    M.config.timeout_ms)
  if init_err then
    return nil, init_err
  end
  local dynamic = {}
  for name, tool in pairs(tools()) do
    table.insert(dynamic, { name = name, description = tool.description or '', inputSchema = { type = 'object' } })
  end
  local started, start_err = client:request_sync('thread/start', {
    roots = M.config.roots or default_roots(),
    trustedExtensions = M.config.trusted_extensions,
    dynamicTools = dynamic,
  }, M.config.timeout_ms)
  if start_err then
    return nil, start_err
  end
  M.thread = started
  return started
end

local function call(method, params)
  local thread, err = M.ensure()
  if not thread then
    return nil, err
  end
  params.threadId = thread.threadId
  return M.client:request_sync(method, params, M.config.timeout_ms)
end

function M.activate(name, resources)
  return call('skills/activate', { name = name, resources = resources or {} })
end

function M.render(name, arguments)
  return call('templates/render', { name = name, arguments = next(arguments or {}) and arguments or vim.empty_dict() })
end

function M.context()
  return call('context/build', {})
end

function M.call_tool(name, arguments, call_id)
  M.call_count = (M.call_count or 0) + 1
  return call('tools/call', { call = { id = call_id or ('nvim-' .. M.call_count), name = name,
    arguments = next(arguments or {}) and arguments or vim.empty_dict() } })
end

function M.stop()
  if M.client then
    M.client:stop()
  end
  M.client, M.thread = nil, nil
end

--- Show text in a scratch buffer (a new split).
function M.show(text, filetype)
  vim.cmd('new')
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, '\n', { plain = true }))
  vim.bo[buf].filetype = filetype or 'markdown'
  vim.bo[buf].modifiable = false
  return buf
end

local function report(err)
  notify((err.kind and (err.kind .. ': ') or '') .. tostring(err.message), vim.log.levels.ERROR)
end

function M.catalog_text(started)
  local lines = { '# Harness catalog', '', '## Skills' }
  for _, s in ipairs(started.catalog.skills) do
    table.insert(lines, string.format('- %s: %s (%s)', s.name, s.description, s.source))
  end
  table.insert(lines, '')
  table.insert(lines, '## Templates')
  for _, t in ipairs(started.catalog.templates) do
    table.insert(lines, string.format('- %s [%s]', t.name, table.concat(t.variables, ', ')))
  end
  table.insert(lines, '')
  table.insert(lines, '## Extensions')
  for _, e in ipairs(started.catalog.extensions) do
    table.insert(lines, string.format('- %s: %s', e.id, e.status))
  end
  table.insert(lines, '')
  table.insert(lines, '## Diagnostics')
  for _, d in ipairs(started.diagnostics) do
    table.insert(lines, string.format('- %s: %s', d.kind, d.message))
  end
  return table.concat(lines, '\n')
end

-- The user commands' actions (plugin/harness_sidecar.lua defines the commands).
function M.cmd_catalog()
  local started, err = M.ensure()
  if not started then
    return report(err)
  end
  M.show(M.catalog_text(started))
end

function M.cmd_activate(name)
  local result, err = M.activate(name)
  if not result then
    return report(err)
  end
  M.show('# ' .. result.skill.name .. '\n\n' .. result.skill.body)
end

--- :HarnessRender {template} key=value ...; a word without '=' continues the previous value,
--- so `focus=error handling` is one argument.
function M.cmd_render(name, words)
  local arguments, last = {}, nil
  for _, word in ipairs(words) do
    local key, value = word:match('^([%a_][%w_]*)=(.*)$')
    if key then
      arguments[key], last = value, key
    elseif last then
      arguments[last] = arguments[last] .. ' ' .. word
    else
      return report({ kind = 'usage', message = 'arguments are key=value, not ' .. word })
    end
  end
  local result, err = M.render(name, arguments)
  if not result then
    return report(err)
  end
  M.show(result.message.content)
end

function M.cmd_context()
  local result, err = M.context()
  if not result then
    return report(err)
  end
  M.show(result.systemPrompt)
end

local function names_of(kind)
  local names = {}
  if M.thread then
    for _, entry in ipairs(M.thread.catalog[kind]) do
      table.insert(names, entry.name)
    end
  end
  return names
end

function M.skill_names()
  return names_of('skills')
end

function M.template_names()
  return names_of('templates')
end

return M
