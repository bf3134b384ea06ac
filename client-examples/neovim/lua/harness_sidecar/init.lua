-- harness-sidecar for Neovim: the catalog, skill activation, template rendering, the system
-- prompt and catalog diagnostics of an agent harness, served by a harness-sidecar child process.
-- Every command is asynchronous: the editor never waits for the sidecar. See :help harness_sidecar.
--
--   require('harness_sidecar').setup({
--     cmd = { 'harness-sidecar' },                        -- the sidecar's argv
--     roots = { '.agents', '~/.agents' },          -- earlier wins; ~, $VAR and cwd-relative paths
--     trusted_extensions = { 'review-extension' },       -- ids the sidecar may import
--     trusted_hooks = { { path = '/home/me/.agents/hooks.json' } },  -- hooks files whose command hooks run
--     lsp = true,                                        -- also the language server (Neovim 0.8+)
--     mcp_servers = { { name = 'files', command = { 'mcp-server-files' } } },  -- thread/start.mcpServers
--     plugins = { '~/.claude/plugins/cache/official/commit-commands/1.0.0' },  -- plugin folders, as roots
--     disabled_plugins = { 'some-plugin' },              -- plugins left out
--     trusted_plugins = { { name = 'commit-commands', hooks = true, mcpServers = false } },  -- whose code runs
--   })
--
-- Trusted extensions ask the user through vim.ui.select / vim.ui.input / vim.notify and set status
-- items shown by require('harness_sidecar').statusline() (harness_sidecar.ui); their commands run
-- with :HarnessCommand.
--
-- Trust comes from setup() only: nothing is read from the project (no exrc, no project file).
local rpc = require('harness_sidecar.rpc')
local ui = require('harness_sidecar.ui')

local M = {}

local DEFAULTS = {
  cmd = { 'harness-sidecar' },
  roots = nil, -- default: { '.agents', '~/.agents' } (made absolute when a thread starts)
  trusted_extensions = {},
  -- Hooks files (a root's hooks.json: Claude Code's command hooks) the sidecar may run:
  -- { { path = '/abs/hooks.json', sha256 = '…' (optional pin) }, ... }; from setup() only.
  trusted_hooks = {},
  timeout_ms = 30000,
  -- Tools the sidecar may ask the editor to run (item/tool/call):
  -- name -> { description, handler(arguments) -> text, ok, input_schema?, hook_as? }  (return nil to
  -- answer later). hook_as = { name = 'Bash', input = { command = 'cmd' } }: how command hooks written
  -- for Claude Code see the tool (thread/start.dynamicTools[i].hookAs).
  tools = {},
  lsp = false, -- true or a table of LSP options (see harness_sidecar.lsp)
  -- MCP servers each thread starts (thread/start.mcpServers): a list of
  -- { name, command = { argv... }, env?, cwd?, required?, startupTimeoutMs?, tools? = { allow?, deny? } }
  mcp_servers = {},
  -- Plugins (Claude Code's .claude-plugin or Codex's .codex-plugin folders) besides each root's
  -- plugins/<name>/: folders written as roots are (~, $VAR, relative to the cwd). From setup() only.
  plugins = {},
  disabled_plugins = {}, -- plugin names left out
  -- Plugins whose code may run, in parts: { { name, sha256?, hooks? = true, mcpServers? = true | false |
  -- { server... }, extensions? = true | false | { id... } } } (mcp_servers is read as mcpServers too).
  -- Without it a plugin brings its skills, command templates and agents, never its code.
  trusted_plugins = {},
  -- The session the threads' extension state and activated skills are saved under (thread/start.sessionId,
  -- 1-128 of A-Za-z0-9._:-); default: one per working directory. :HarnessResume brings it back.
  session_id = nil,
  resume = false, -- true: the first thread of this Neovim resumes the session (as :HarnessResume does)
  -- thread/start.limits, e.g. { deferToolsOver = 20 } (tools past the first 20 are deferred: :HarnessTools)
  limits = nil,
}

M.config = vim.deepcopy(DEFAULTS)
M.client = nil
M.thread = nil -- the thread/start result of this session (thread/refresh's answer once the catalog changed)
M.log = {} -- the sidecar's stderr, line by line (the last LOG_LINES): :HarnessLog
local LOG_LINES = 5000
M.stopped_thread = nil -- what :HarnessStop ended, to say so when a command starts a new one

local waiting = {} -- callbacks waiting for the thread while it starts
local starting = false

local function notify(message, level)
  ui.tell(message, level)
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

--- read_file: a buffer's lines when Neovim has the file loaded (unsaved changes included), else the
--- file's; from line `offset` (1-based), `limit` lines.
local function read_file(arguments)
  local path = vim.fn.fnamemodify(arguments.path or '', ':p')
  local lines
  local buf = vim.fn.bufnr(path)
  if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  elseif vim.fn.filereadable(path) == 1 then
    lines = vim.fn.readfile(path)
  else
    return 'cannot read ' .. path, false
  end
  local from = math.max(tonumber(arguments.offset) or 1, 1)
  local to = arguments.limit and (from + tonumber(arguments.limit) - 1) or #lines
  return table.concat(vim.list_slice(lines, from, to), '\n'), true
end

local default_tools = {
  -- Declared to command hooks as Claude Code's Read {file_path, offset?, limit?} (protocol-v4 §3): a hook
  -- or an `if: "Read(...)"` rule written for Claude Code guards it.
  read_file = {
    description = 'Read a file as Neovim has it (unsaved changes included): its text, or `limit` lines from '
      .. 'line `offset` (1-based).',
    input_schema = {
      type = 'object',
      properties = {
        path = { type = 'string', description = 'Absolute, or relative to the current directory.' },
        offset = { type = 'integer', minimum = 1 },
        limit = { type = 'integer', minimum = 1 },
      },
      required = { 'path' },
      additionalProperties = false,
    },
    hook_as = { name = 'Read', input = { file_path = 'path' } },
    handler = read_file,
  },
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

--- Requests the sidecar sends the editor, by method: handler(params, id, client) -> result | nil, err
--- (nil, nil: answered later with client:respond(id, …)).
M.reverse_requests = {
  ['ui/confirm'] = function(params, id, client) ui.ask(client, id, 'ui/confirm', params) end,
  ['ui/select'] = function(params, id, client) ui.ask(client, id, 'ui/select', params) end,
  ['ui/input'] = function(params, id, client) ui.ask(client, id, 'ui/input', params) end,
  ['ui/elicit'] = function(params, id, client) ui.ask(client, id, 'ui/elicit', params) end,
  ['ui/openUrl'] = function(params, id, client)
    ui.open_url(params, function(result) client:respond(id, result) end)
  end,
  ['item/tool/call'] = function(params)
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
  end,
}

--- Notifications from the sidecar, by method.
M.notifications = {
  ['ui/notify'] = ui.notify,
  ['ui/status'] = ui.status,
  ['$/cancelRequest'] = function(params)
    ui.withdraw(params.id)
  end,
  ['thread/diagnostic'] = function(params)
    local text = string.format('[%s] %s%s: %s', tostring(params.extensionId or params.threadId),
      params.hook and (tostring(params.hook) .. ' ') or '', params.kind, params.message)
    table.insert(M.log, 'diagnostic ' .. text)
    if params.severity ~= 'info' then
      notify(text, vim.log.levels.WARN)
    end
  end,
  ['catalog/changed'] = function(params)
    if M.thread and params.threadId == M.thread.threadId then
      M.schedule_refresh()
      if M.output_what == 'tools' and M.output_buf and vim.fn.bufwinid(M.output_buf) ~= -1 then
        M.redraw_tools() -- the tools that left or came back (ctx.tools.set_active), or a new MCP server's
      end
    end
  end,
}

local function on_request(client, method, params, id)
  local handler = M.reverse_requests[method]
  if not handler then
    return nil, { code = -32601, message = 'Neovim serves no ' .. method }
  end
  return handler(params, id, client)
end

--- setup()'s mcp_servers as thread/start.mcpServers: an empty `env` or `tools` table is an object
--- (vim.json.encode would write `[]`, which the sidecar refuses).
function M.mcp_servers()
  local servers = {}
  for _, server in ipairs(M.config.mcp_servers or {}) do
    server = vim.deepcopy(server)
    for _, key in ipairs({ 'env', 'tools' }) do
      if type(server[key]) == 'table' and next(server[key]) == nil then
        server[key] = vim.empty_dict()
      end
    end
    table.insert(servers, server)
  end
  return servers
end

--- The status items that trusted extensions set (ui/status), for your 'statusline':
---   set statusline=%f\ %{v:lua.require'harness_sidecar'.statusline()}
function M.statusline()
  return ui.statusline()
end

--- setup(opts): merges with what earlier calls set: an option a call names replaces its value (a list
--- such as roots is replaced, never appended to), an option it does not name keeps its value.
--- M.reset() forgets every option.
function M.setup(opts)
  opts = opts or {}
  local config = vim.deepcopy(M.config)
  for key, value in pairs(opts) do
    config[key] = value
  end
  M.config = config
  local group = vim.api.nvim_create_augroup('harness_sidecar', { clear = true })
  vim.api.nvim_create_autocmd('VimLeavePre', { group = group, callback = function() M.stop({ quiet = true, exiting = true }) end })
  -- Start the sidecar while a :Harness command is being typed, so that <Tab> finds the names
  -- (completion itself never waits for it).
  vim.api.nvim_create_autocmd('CmdlineChanged', { group = group, pattern = ':', callback = function()
    if not M.thread and not starting and vim.fn.getcmdline():match('^%s*Harness%a') then
      M.ensure()
    end
  end })
  if config.lsp then
    require('harness_sidecar.lsp').setup(type(config.lsp) == 'table' and config.lsp or {})
  end
end

--- Forget every setup() option (the defaults again).
function M.reset()
  M.config = vim.deepcopy(DEFAULTS)
end

--- A root as a user writes it, as the absolute path thread/start needs: `~` and `~/x` are under
--- $HOME, `$NAME` and `${NAME}` are environment variables, and a relative path (`.agents`) is
--- relative to the current directory.
function M.expand_root(root)
  root = tostring(root)
  local home = os.getenv('HOME') or vim.fn.expand('~')
  if root == '~' then
    root = home
  elseif root:sub(1, 2) == '~/' then
    root = home .. root:sub(2)
  end
  root = root:gsub('%${([%w_]+)}', function(name) return os.getenv(name) end)
  root = root:gsub('%$([%a_][%w_]*)', function(name) return os.getenv(name) end)
  if root:sub(1, 1) ~= '/' then
    root = vim.fn.getcwd() .. '/' .. root
  end
  root = vim.fn.simplify(root)
  if #root > 1 then
    root = root:gsub('/+$', '')
  end
  return root
end

function M.roots()
  return vim.tbl_map(M.expand_root, M.config.roots or { '.agents', '~/.agents' })
end

--- setup()'s plugins as thread/start.plugins: absolute folders, expanded as roots are.
function M.plugin_paths()
  return vim.tbl_map(M.expand_root, type(M.config.plugins) == 'table' and M.config.plugins or {})
end

--- setup()'s trusted_plugins as thread/start.trustedPlugins (`mcp_servers` accepted for `mcpServers`).
function M.trusted_plugins()
  local out = {}
  for _, entry in ipairs(type(M.config.trusted_plugins) == 'table' and M.config.trusted_plugins or {}) do
    if type(entry) == 'string' then
      entry = { name = entry }
    end
    entry = vim.deepcopy(entry)
    if entry.mcp_servers ~= nil and entry.mcpServers == nil then
      entry.mcpServers, entry.mcp_servers = entry.mcp_servers, nil
    end
    table.insert(out, entry)
  end
  return out
end

--- The thread/start params this session sends (its roots, trust, plugins, MCP servers and editor
--- tools): :checkhealth starts the very same thread when none is running.
function M.thread_start_params()
  local dynamic = {}
  for name, tool in pairs(tools()) do
    local entry = { name = name, description = tool.description or '', inputSchema = tool.input_schema or { type = 'object' } }
    if type(tool.hook_as) == 'table' then
      entry.hookAs = tool.hook_as
    end
    table.insert(dynamic, entry)
  end
  local start = { roots = M.roots(), trustedExtensions = M.config.trusted_extensions, dynamicTools = dynamic }
  if type(M.config.mcp_servers) == 'table' and #M.config.mcp_servers > 0 then
    start.mcpServers = M.mcp_servers()
  end
  if type(M.config.trusted_hooks) == 'table' and #M.config.trusted_hooks > 0 then
    start.trustedHooks = M.config.trusted_hooks
  end
  local plugins, trusted_plugins = M.plugin_paths(), M.trusted_plugins()
  if #plugins > 0 then
    start.plugins = plugins
  end
  if type(M.config.disabled_plugins) == 'table' and #M.config.disabled_plugins > 0 then
    start.disabledPlugins = M.config.disabled_plugins
  end
  if #trusted_plugins > 0 then
    start.trustedPlugins = trusted_plugins
  end
  if type(M.config.limits) == 'table' and next(M.config.limits) ~= nil then
    start.limits = M.config.limits
  end
  start.sessionId = M.session_id()
  if M.resume_next == nil then
    M.resume_next = M.config.resume == true
  end
  if M.resume_next then
    start.resume = true
  end
  return start
end

--- The session this editor's threads are saved under: setup()'s session_id, else one per working
--- directory ('nvim:' and the start of the sha256 of the cwd: never a path).
function M.session_id()
  local id = M.config.session_id
  if type(id) == 'string' and id ~= '' then
    return id
  end
  return 'nvim:' .. vim.fn.sha256(vim.fn.getcwd()):sub(1, 32)
end

local function flush(err, thread)
  local callbacks = waiting
  waiting = {}
  starting = false
  for _, callback in ipairs(callbacks) do
    callback(err, thread)
  end
end

--- Start the sidecar and a thread if needed, then callback(err, thread). Never blocks.
function M.ensure(callback)
  callback = callback or function() end
  if M.client and M.client.running and M.thread then
    return callback(nil, M.thread)
  end
  table.insert(waiting, callback)
  if starting then
    return
  end
  starting = true
  local cmd = M.config.cmd
  if type(cmd) ~= 'table' or vim.fn.executable(cmd[1] or '') ~= 1 then
    return flush({ kind = 'spawn_failed', message = string.format(
      "cannot start %s: not an executable (set cmd in require('harness_sidecar').setup, see :help harness_sidecar-setup)",
      vim.inspect(type(cmd) == 'table' and cmd[1] or cmd)) })
  end
  local client
  client = rpc.new({
    cmd = cmd,
    on_request = function(method, params, id)
      return on_request(client, method, params, id)
    end,
    on_notification = function(method, params)
      local handler = M.notifications[method]
      if handler then
        handler(params)
      end
    end,
    on_stderr = function(line)
      table.insert(M.log, line)
      if #M.log > LOG_LINES then
        table.remove(M.log, 1)
      end
    end,
    on_exit = function(code, signal, expected)
      if M.client == client then
        M.thread = nil
        ui.clear()
      end
      if not expected then
        local why = (signal and signal ~= 0) and ('signal ' .. signal) or ('status ' .. tostring(code))
        notify('the sidecar stopped unexpectedly (' .. why .. '); the next command starts a new one',
          vim.log.levels.ERROR)
      end
    end,
  })
  local ok, err = client:start()
  if not ok then
    return flush({ kind = 'spawn_failed', message = err })
  end
  M.client = client
  client:request('initialize', { clientInfo = { name = 'neovim' }, protocolVersion = '4',
    capabilities = { ui = ui.capabilities } }, function(init_err)
    if init_err then
      return flush(init_err)
    end
    local start = M.thread_start_params()
    client:request('thread/start', start, function(start_err, started)
      if start_err then
        return flush(start_err)
      end
      M.thread = started
      M.commands(function() end) -- for :HarnessCommand's completion, which never waits
      if start.resume then
        M.resume_next = false
        M.stopped_thread = nil
        notify(string.format('resumed session %s in %s', start.sessionId, started.threadId))
      elseif M.stopped_thread then
        notify(string.format('started a new sidecar (%s); activations of %s are gone', started.threadId,
          M.stopped_thread))
        M.stopped_thread = nil
      end
      flush(nil, started)
    end)
  end)
end

-- The live catalog: on catalog/changed the thread is refreshed (thread/refresh: the same thread, so
-- its activated skills stay) at the next idle moment, and every view follows: completion and
-- pickers read M.thread, the quickfix list and a shown catalog are redrawn, and the User autocmd
-- HarnessSidecarCatalog fires for your own views.
M.refresh_count = 0 -- how many refreshes were applied (tests wait on it)
local refresh = { scheduled = false, running = false, again = false }

local function apply_refresh(state)
  M.thread = vim.tbl_extend('force', M.thread or {}, state)
  M.refresh_count = M.refresh_count + 1
  M.commands(function() end)
  if M.quickfix_id and vim.fn.getqflist({ id = M.quickfix_id }).id == M.quickfix_id then
    vim.fn.setqflist({}, 'r', { id = M.quickfix_id, title = QF_TITLE, items = M.quickfix_items(M.thread) })
  end
  local view = ({ catalog = M.catalog_text, plugins = M.plugins_text })[M.output_what or '']
  if view and M.output_buf and vim.fn.bufwinid(M.output_buf) ~= -1 then
    local buf = M.output_buf
    vim.bo[buf].modifiable = true
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(view(M.thread), '\n', { plain = true }))
    vim.bo[buf].modifiable = false
    vim.bo[buf].modified = false
  end
  pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'HarnessSidecarCatalog', modeline = false })
end

local function run_refresh()
  refresh.scheduled = false
  local client, thread = M.client, M.thread
  if not (client and client.running and thread) then
    return
  end
  if refresh.running then
    refresh.again = true
    return
  end
  refresh.running = true
  client:request('thread/refresh', { threadId = thread.threadId }, function(err, state)
    refresh.running = false
    if M.client ~= client or not M.thread or M.thread.threadId ~= thread.threadId then
      return -- stopped or restarted meanwhile
    end
    if err then
      table.insert(M.log, 'thread/refresh failed: ' .. tostring(err.message))
    else
      apply_refresh(state)
    end
    if refresh.again then
      refresh.again = false
      M.schedule_refresh()
    end
  end)
end

--- Refresh the thread at the next idle moment (changes arriving together are one refresh).
function M.schedule_refresh()
  if refresh.scheduled then
    return
  end
  refresh.scheduled = true
  vim.defer_fn(run_refresh, 30)
end

local function report(err)
  notify((err.kind and (err.kind .. ': ') or '') .. tostring(err.message), vim.log.levels.ERROR)
end

--- call(method, params, callback(err, result)) on the session's thread.
function M.call(method, params, callback)
  M.ensure(function(err, thread)
    if err then
      return callback(err)
    end
    params.threadId = thread.threadId
    M.client:request(method, params, callback)
  end)
end

function M.activate(name, resources, callback)
  M.call('skills/activate', { name = name, resources = resources or {} }, callback)
end

--- skills/deactivate: callback(err, {activeSkills}).
function M.deactivate(name, callback)
  M.call('skills/deactivate', { name = name }, callback)
end

--- :HarnessResume: a new sidecar whose thread resumes this session (protocol-v4 §5): the extensions
--- get their saved ctx.state back (thread_start reason "resume") and the activated skills come back.
function M.cmd_resume()
  M.stop({ quiet = true })
  M.stopped_thread = nil
  M.resume_next = true
  M.ensure(function(err)
    if err then
      return report(err)
    end
  end)
end

function M.cmd_deactivate(name)
  if not name or name == '' then
    return M.call('context/build', {}, function(err, built)
      if err then
        return report(err)
      end
      local names = {}
      for _, skill in ipairs(built.activeSkills or {}) do
        table.insert(names, skill.name)
      end
      if #names == 0 then
        return notify('no skill is active')
      end
      vim.ui.select(names, { prompt = 'Skill to deactivate' }, function(choice)
        if choice then
          M.cmd_deactivate(choice)
        end
      end)
    end)
  end
  M.deactivate(name, function(err, result)
    if err then
      return report(err)
    end
    local names = {}
    for _, skill in ipairs(result.activeSkills or {}) do
      table.insert(names, skill.name)
    end
    notify(string.format('deactivated %s; active: %s', name, #names > 0 and table.concat(names, ', ') or 'none'))
  end)
end

function M.render(name, arguments, callback)
  M.call('templates/render', { name = name, arguments = next(arguments or {}) and arguments or vim.empty_dict() }, callback)
end

--- A command template (commands/*.md) rendered from free text, as typed after /<name>.
function M.render_text(name, text, callback)
  M.call('templates/render', { name = name, text = text or '' }, callback)
end

function M.context(callback)
  M.call('context/build', {}, callback)
end

function M.call_tool(name, arguments, call_id, callback)
  M.call_count = (M.call_count or 0) + 1
  M.call('tools/call', { call = { id = call_id or ('nvim-' .. M.call_count), name = name,
    arguments = next(arguments or {}) and arguments or vim.empty_dict() } }, callback)
end

--- Stop the sidecar. opts.quiet: say nothing; opts.exiting: Neovim exits (ask the sidecar to exit, wait
--- at most 200 ms, then end it: quitting never waits for a thread that is still starting).
function M.stop(opts)
  opts = opts or {}
  local client, thread = M.client, M.thread
  M.client, M.thread = nil, nil
  if not client or not client.running then
    if not opts.quiet then
      notify('the sidecar is not running')
    end
    return
  end
  if thread then
    M.stopped_thread = thread.threadId
  end
  ui.clear()
  if opts.exiting or opts.wait then
    client:stop_now(200)
  else
    client:stop()
  end
  if not opts.quiet then
    notify(thread and string.format('stopped; %s and its activations are gone (the next command starts a new sidecar)',
      thread.threadId) or 'stopped')
  end
end

-- The one output window: a scratch buffer reused by every command, `q` closes it.
local OUTPUT_NAME = 'harness-sidecar://output'

M.shown_count = 0 -- how many results were shown (tests wait on it)

function M.show(text, filetype, what)
  M.shown_count = M.shown_count + 1
  M.output_what = what -- 'catalog' is shown again when the catalog changes
  local buf = M.output_buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = vim.api.nvim_create_buf(false, true)
    M.output_buf = buf
    vim.api.nvim_buf_set_name(buf, OUTPUT_NAME)
    vim.bo[buf].bufhidden = 'hide'
    vim.bo[buf].swapfile = false
    vim.api.nvim_buf_set_keymap(buf, 'n', 'q', '<cmd>close<cr>', { noremap = true, silent = true, desc = 'Close' })
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, '\n', { plain = true }))
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  vim.bo[buf].filetype = filetype or 'markdown'
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    vim.cmd('botright split')
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
  else
    vim.api.nvim_set_current_win(win)
  end
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  return buf
end

local ROOT_KINDS = { root_missing = true, root_not_found = true, root_not_directory = true }

--- The diagnostics to show: all, except, with the default roots, those about a root you never made.
function M.shown_diagnostics(started)
  if M.config.roots ~= nil then
    return started.diagnostics
  end
  return vim.tbl_filter(function(d) return not ROOT_KINDS[d.kind] end, started.diagnostics)
end


--- What a catalog.hooks entry runs, for a person: its command, or (protocol v4) the type of a handler the
--- sidecar lists but does not run (supported = false; it may have no command).
function M.hook_what(h)
  if h.supported == false then
    return string.format('(%s handler, not supported: never runs)', tostring(h.type or 'untyped'))
  end
  return tostring(h.command)
end

function M.catalog_text(started)
  local lines = { '# Harness catalog', '', '## Skills' }
  for _, s in ipairs(started.catalog.skills) do
    table.insert(lines, string.format('- %s: %s (%s)', s.name, s.description, s.path))
  end
  table.insert(lines, '')
  table.insert(lines, '## Templates')
  for _, t in ipairs(started.catalog.templates) do
    table.insert(lines, string.format('- %s [%s]', t.name, table.concat(t.variables, ', ')))
  end
  for _, c in ipairs(started.catalog.commandTemplates or {}) do
    table.insert(lines, string.format('- %s (command%s)', c.name, c.argumentHint and (' ' .. c.argumentHint) or ''))
  end
  table.insert(lines, '')
  table.insert(lines, '## Extensions')
  for _, e in ipairs(started.catalog.extensions) do
    table.insert(lines, string.format('- %s: %s', e.id, e.status))
  end
  local hooks = started.catalog.hooks or {}
  if #hooks > 0 then
    table.insert(lines, '')
    table.insert(lines, '## Command hooks')
    for _, h in ipairs(hooks) do
      local matcher = (type(h.matcher) == 'string' and h.matcher ~= '') and (' [' .. h.matcher .. ']') or ''
      table.insert(lines, string.format('- %s%s: %s — %s (%s)', h.event, matcher, M.hook_what(h),
        h.trusted and 'trusted' or 'not trusted', h.source))
    end
  end
  if #(started.catalog.plugins or {}) > 0 then
    table.insert(lines, '')
    table.insert(lines, '## Plugins (:HarnessPlugins for their parts)')
    for _, p in ipairs(started.catalog.plugins) do
      table.insert(lines, string.format('- %s: %s', p.name, M.plugin_trust(p)))
    end
  end
  table.insert(lines, '')
  table.insert(lines, '## Diagnostics (:HarnessDiagnostics for the quickfix list)')
  for _, d in ipairs(M.shown_diagnostics(started)) do
    table.insert(lines, string.format('- %s: %s', d.kind, d.message))
  end
  return table.concat(lines, '\n')
end

--- What of a plugin's code may run, in words: 'data only' (it brings no code), 'trusted', 'not
--- trusted', or 'partly trusted: ...' naming what is granted (its catalog entry's `trusted`).
function M.plugin_trust(p)
  local code = (p.hooks > 0 and 1 or 0) + #p.mcpServers + #p.extensions
  if code == 0 then
    return 'data only'
  end
  local granted = {}
  if p.hooks > 0 and p.trusted.hooks then
    table.insert(granted, 'hooks')
  end
  if #p.trusted.mcpServers > 0 then
    table.insert(granted, 'MCP ' .. table.concat(p.trusted.mcpServers, ', '))
  end
  if #p.trusted.extensions > 0 then
    table.insert(granted, 'extensions ' .. table.concat(p.trusted.extensions, ', '))
  end
  if #granted == 0 then
    return 'not trusted'
  end
  local all = (p.hooks == 0 or p.trusted.hooks) and #p.trusted.mcpServers == #p.mcpServers
    and #p.trusted.extensions == #p.extensions
  return all and 'trusted' or ('partly trusted: ' .. table.concat(granted, '; '))
end

local function trust_word(trusted)
  return trusted and 'trusted' or 'not trusted'
end

--- :HarnessPlugins: each plugin with its parts (skills, command templates, agents, hooks, MCP servers,
--- extensions) and what of its code may run.
function M.plugins_text(started)
  local catalog = started.catalog
  local lines = { '# Harness plugins', '',
    "Trust comes from setup({ trusted_plugins = ... }) only; skills, commands and agents need none." }
  local plugins = catalog.plugins or {}
  if #plugins == 0 then
    table.insert(lines, '')
    table.insert(lines, "(no plugins: a root's plugins/<name>/, or setup({ plugins = { folder } }))")
  end
  local function find(list, pred)
    for _, e in ipairs(list or {}) do
      if pred(e) then
        return e
      end
    end
  end
  for _, p in ipairs(plugins) do
    table.insert(lines, '')
    table.insert(lines, string.format('## %s%s (%s) — %s', p.name, p.version and (' ' .. p.version) or '', p.dialect,
      M.plugin_trust(p)))
    table.insert(lines, p.path)
    for _, name in ipairs(p.skills) do
      table.insert(lines, '- skill ' .. name)
    end
    for _, name in ipairs(p.commands) do
      local c = find(catalog.commandTemplates, function(e) return e.name == name end)
      table.insert(lines, '- command ' .. name .. ((c and c.argumentHint) and (' ' .. c.argumentHint) or ''))
    end
    for _, name in ipairs(p.agents) do
      table.insert(lines, '- agent ' .. name .. ' (listed, never run)')
    end
    local listed = 0
    for _, h in ipairs(catalog.hooks or {}) do
      if h.source == 'plugin:' .. p.name then
        listed = listed + 1
        local matcher = (type(h.matcher) == 'string' and h.matcher ~= '') and (' [' .. h.matcher .. ']') or ''
        table.insert(lines, string.format('- hook %s%s: %s — %s', h.event, matcher, M.hook_what(h), trust_word(h.trusted)))
      end
    end
    if listed == 0 and p.hooks > 0 then
      table.insert(lines, string.format('- hooks: %d — %s', p.hooks, trust_word(p.trusted.hooks)))
    end
    for _, server in ipairs(p.mcpServers) do
      local m = find(catalog.mcpServers, function(e) return e.plugin == p.name and e.server == server end)
      local how = ''
      if m and m.transport == 'stdio' then
        how = ' (' .. table.concat(vim.list_extend({ m.command }, m.args or {}), ' ') .. ')'
      elseif m then
        how = string.format(' (%s %s, not started here)', m.transport, m.url or '')
      end
      table.insert(lines, string.format('- MCP server %s%s — %s', server, how,
        trust_word(vim.tbl_contains(p.trusted.mcpServers, server))))
    end
    for _, id in ipairs(p.extensions) do
      local bare = id:sub(1, #p.name + 1) == p.name .. ':' and id:sub(#p.name + 2) or id
      local trusted = vim.tbl_contains(p.trusted.extensions, id) or vim.tbl_contains(p.trusted.extensions, bare)
      table.insert(lines, string.format('- extension %s — %s', id, trust_word(trusted)))
    end
  end
  return table.concat(lines, '\n')
end

function M.cmd_plugins()
  M.ensure(function(err, started)
    if err then
      return report(err)
    end
    M.show(M.plugins_text(started), 'markdown', 'plugins')
  end)
end

-- The user commands' actions (plugin/harness_sidecar.lua defines the commands). Each returns at
-- once; the result is shown when the sidecar answers.
function M.cmd_catalog()
  M.ensure(function(err, started)
    if err then
      return report(err)
    end
    M.show(M.catalog_text(started), 'markdown', 'catalog')
  end)
end

--- :HarnessLog: what the sidecar wrote to stderr (its log) and the diagnostics it sent, then every
--- message the plugin told you, in full.
function M.cmd_log()
  local lines = { '# the sidecar\'s stderr' }
  vim.list_extend(lines, #M.log > 0 and M.log or { '(nothing yet)' })
  table.insert(lines, '')
  table.insert(lines, '# messages')
  for _, m in ipairs(ui.history) do
    table.insert(lines, (m.message:gsub('\n', ' ')))
  end
  M.show(table.concat(lines, '\n'), 'log', 'log')
  vim.cmd('normal! G')
end

local function pick(kind, prompt, callback)
  M.ensure(function(err, started)
    if err then
      return report(err)
    end
    local entries = started.catalog[kind]
    if kind == 'templates' then -- and the command templates (commands/*.md), one free text each
      entries = vim.list_extend(vim.list_extend({}, entries), started.catalog.commandTemplates or {})
    end
    if #entries == 0 then
      return notify('the catalog has no ' .. kind, vim.log.levels.WARN)
    end
    ui.select(entries, {
      prompt = prompt,
      format_item = function(entry)
        return entry.name .. ' — ' .. (entry.description or entry.argumentHint or table.concat(entry.variables or {}, ', '))
      end,
    }, function(choice)
      if choice then
        callback(choice.name)
      end
    end)
  end)
end

-- The words of :HarnessRender and :HarnessCommand: a template's variables and a command's argument keys.
local TEMPLATE_KEY = '[%a_][%w_]*'
local COMMAND_KEY = '[%a_][%w_%-]*'

local function starting_with(list, lead)
  return vim.tbl_filter(function(item) return item:sub(1, #lead) == lead end, list)
end

--- The entry of list whose name is `name` (the last one, should two share it), or nil.
local function named(list, name)
  local found
  for _, entry in ipairs(list) do
    if entry.name == name then
      found = entry
    end
  end
  return found
end

--- A command line being completed: its words, and how many are complete (the command included).
local function completed_words(line)
  local words = vim.split(line, '%s+', { trimempty = true })
  return words, line:match('%s$') and #words or #words - 1
end

--- `key=` for each of keys that the words after the name (words[3], ...) do not give yet as key=...
local function not_given(keys, words, key_pattern)
  local given = {}
  for i = 3, #words do
    local key = words[i]:match('^(' .. key_pattern .. ')=')
    if key then
      given[key] = true
    end
  end
  local out = {}
  for _, key in ipairs(keys) do
    if not given[key] then
      table.insert(out, key .. '=')
    end
  end
  return out
end

--- key=value words as { key = text } and the keys in the order first given; a word without '=' continues
--- the previous value, so `focus=error handling` is one argument. nil and the usage message otherwise.
local function key_values(words, key_pattern)
  local texts, order, last = {}, {}, nil
  for _, word in ipairs(words or {}) do
    local key, value = word:match('^(' .. key_pattern .. ')=(.*)$')
    if key then
      if texts[key] == nil then
        table.insert(order, key)
      end
      texts[key], last = value, key
    elseif last then
      texts[last] = texts[last] .. ' ' .. word
    else
      return nil, 'arguments are key=value, not ' .. word
    end
  end
  return texts, order
end

function M.cmd_activate(name)
  if not name or name == '' then
    return pick('skills', 'Skill to activate', M.cmd_activate)
  end
  M.activate(name, nil, function(err, result)
    if err then
      return report(err)
    end
    M.show('# ' .. result.skill.name .. '\n\n' .. result.skill.body)
  end)
end

local function render_and_show(name, arguments)
  M.render(name, arguments, function(err, result)
    if err then
      return report(err)
    end
    M.show(result.message.content)
  end)
end

local function show_rendered(name)
  return function(err, result)
    if err then
      return report(err)
    end
    M.show(result.message.content)
    for _, d in ipairs(result.diagnostics or {}) do
      notify(name .. ': ' .. d.kind .. ': ' .. d.message, vim.log.levels.WARN)
    end
  end
end

--- The command template named `name` (and no {{variable}} template of that name, which wins), or nil.
local function command_template(name)
  local catalog = M.thread and M.thread.catalog or {}
  if named(catalog.templates or {}, name) then
    return nil
  end
  return named(catalog.commandTemplates or {}, name)
end

--- Ask for the variables not given yet, one vim.ui.input each, then render.
local function ask_variables(name, arguments)
  local command = command_template(name)
  if command then
    return ui.input({ prompt = name .. (command.argumentHint and (' ' .. command.argumentHint) or '') .. ': ' },
      function(text)
        if text ~= nil then
          M.render_text(name, text, show_rendered(name))
        end
      end)
  end
  local entry = named(M.thread and M.thread.catalog.templates or {}, name)
  for _, variable in ipairs(entry and entry.variables or {}) do
    if arguments[variable] == nil then
      return ui.input({ prompt = name .. ': ' .. variable .. ' = ' }, function(value)
        if value ~= nil then
          arguments[variable] = value
          ask_variables(name, arguments)
        end
      end)
    end
  end
  render_and_show(name, arguments)
end

--- :HarnessRender {template} key=value ...; a word without '=' continues the previous value,
--- so `focus=error handling` is one argument. Without a template: a picker, then a prompt per variable.
--- A command template (commands/*.md) takes the rest of the line as typed (`raw`: the whole argument
--- text), as after /<name>: :HarnessRender commit-commands:commit fix "the bug".
function M.cmd_render(name, words, raw)
  if not name or name == '' then
    return pick('templates', 'Template to render', function(choice)
      ask_variables(choice, {})
    end)
  end
  M.ensure(function(err)
    if err then
      return report(err)
    end
    if command_template(name) then
      local text = raw and raw:match('^%s*%S+%s*(.-)%s*$') or table.concat(words or {}, ' ')
      return M.render_text(name, text, show_rendered(name))
    end
    local arguments, usage = key_values(words, TEMPLATE_KEY)
    if not arguments then
      return report({ kind = 'usage', message = usage })
    end
    render_and_show(name, arguments)
  end)
end

function M.cmd_context()
  M.context(function(err, result)
    if err then
      return report(err)
    end
    M.show(result.systemPrompt)
  end)
end

-- Extension commands (commands/list, commands/run): :HarnessCommand {name} [key=value ...].

--- callback(err, commands): the commands the thread's trusted extensions registered.
function M.commands(callback)
  M.call('commands/list', {}, function(err, result)
    if err then
      return callback(err)
    end
    M.command_cache = { client = M.client, thread = M.thread and M.thread.threadId, list = result.commands }
    callback(nil, result.commands)
  end)
end

function M.run_command(name, arguments, callback)
  M.call('commands/run', { name = name, arguments = next(arguments or {}) and arguments or vim.empty_dict() }, callback)
end

local function properties_of(command)
  local schema = type(command) == 'table' and command.inputSchema
  local properties = type(schema) == 'table' and schema.properties
  return type(properties) == 'table' and properties or {}
end

--- A typed value for property `key` of `command`: text for a "string" property (or an unknown one),
--- else the value read as JSON when it is JSON (`3`, `true`, `["a"]`), else the text as typed.
local function typed(command, key, text)
  local spec = properties_of(command)[key]
  local kind = type(spec) == 'table' and spec.type or nil
  if kind == nil or kind == 'string' or (type(kind) == 'table' and vim.tbl_contains(kind, 'string')) then
    return text
  end
  local ok, value = pcall(vim.json.decode, text)
  if ok and value ~= nil then
    return value
  end
  return text
end

--- key=value words as the command's arguments; a word without '=' continues the previous value.
function M.command_arguments(command, words)
  local texts, order = key_values(words, COMMAND_KEY)
  if not texts then
    return nil, order -- the usage message
  end
  local arguments = {}
  for _, key in ipairs(order) do
    arguments[key] = typed(command, key, texts[key])
  end
  return arguments
end

function M.command_result_text(name, result)
  local texts = {}
  for _, item in ipairs(result.content or {}) do
    table.insert(texts, item.text)
  end
  return '# ' .. name .. (result.isError and ' (failed)' or '') .. '\n\n' .. table.concat(texts, '\n')
end

local function run_and_show(name, arguments)
  M.run_command(name, arguments, function(err, result)
    if err then
      return report(err)
    end
    M.show(M.command_result_text(name, result))
    if result.isError then
      notify(name .. ' failed (see the output window)', vim.log.levels.WARN)
    end
  end)
end

--- One vim.ui.input per property of the command's inputSchema; an empty optional one is left out.
local function ask_arguments(command, keys, arguments)
  local key = table.remove(keys, 1)
  if not key then
    return run_and_show(command.name, arguments)
  end
  local required = vim.tbl_contains(type(command.inputSchema) == 'table' and type(command.inputSchema.required) == 'table'
    and command.inputSchema.required or {}, key)
  ui.input({ prompt = command.name .. ': ' .. key .. (required and '' or ' (optional)') .. ' = ' }, function(value)
    if value == nil then
      return -- Escape: nothing runs
    end
    if value ~= '' or required then
      arguments[key] = typed(command, key, value)
    end
    ask_arguments(command, keys, arguments)
  end)
end

--- :HarnessCommand {name} key=value ...; without a name: a picker, then a prompt per argument.
function M.cmd_command(name, words)
  M.commands(function(err, commands)
    if err then
      return report(err)
    end
    if not name or name == '' then
      if #commands == 0 then
        return notify('no trusted extension registers a command', vim.log.levels.WARN)
      end
      return ui.select(commands, {
        prompt = 'Extension command to run',
        format_item = function(c) return c.name .. ' — ' .. c.description .. ' (' .. c.origin.id .. ')' end,
      }, function(choice)
        if choice then
          local keys = vim.tbl_keys(properties_of(choice))
          table.sort(keys)
          ask_arguments(choice, keys, {})
        end
      end)
    end
    local command = named(commands, name)
    local arguments, usage = M.command_arguments(command, words)
    if not arguments then
      return report({ kind = 'usage', message = usage })
    end
    run_and_show(name, arguments) -- an unknown name is the sidecar's command_not_found
  end)
end

local function commands_now()
  local cache = M.command_cache
  if cache and cache.client == M.client and M.thread and cache.thread == M.thread.threadId then
    return cache.list
  end
  M.commands(function() end) -- for the next <Tab>; this one never waits
  return {}
end

--- :HarnessCommand completion: a command name first, then `key=` for the arguments not given yet.
function M.complete_command(lead, line)
  local words, finished = completed_words(line)
  local commands = commands_now()
  if finished <= 1 then
    return starting_with(vim.tbl_map(function(c) return c.name end, commands), lead)
  end
  local out = not_given(vim.tbl_keys(properties_of(named(commands, words[2]))), words, COMMAND_KEY)
  table.sort(out)
  return starting_with(out, lead)
end

local QF_TYPE = { shadowed = 'I', root_missing = 'I', duplicate_root = 'W', root_not_found = 'W',
  root_not_directory = 'W', extension_not_found = 'W' }
local QF_TITLE = 'harness-sidecar: catalog diagnostics'

--- Whether a diagnostic is a problem: `severity: "info"` ones (a default root you never made) are not.
function M.is_problem(d)
  return d.severity ~= 'info' and d.kind ~= 'shadowed' and d.kind ~= 'root_missing'
end

--- The catalog's diagnostics as quickfix items: file, line, column, kind and message.
function M.quickfix_items(started)
  local items = {}
  for _, d in ipairs(M.shown_diagnostics(started)) do
    local hint = d.hint
    if d.kind == 'root_missing' or d.kind == 'root_not_found' or d.kind == 'root_not_directory' then
      hint = "check roots in require('harness_sidecar').setup()" -- this editor's words, not the protocol's
    end
    table.insert(items, {
      filename = d.path, lnum = d.line or 1, col = d.column or 1,
      type = d.severity == 'info' and 'I' or d.severity == 'warning' and 'W' or QF_TYPE[d.kind] or 'E',
      text = d.kind .. ': ' .. d.message .. (hint and (' (' .. hint .. ')') or ''),
    })
  end
  return items
end

function M.cmd_diagnostics()
  M.ensure(function(err, started)
    if err then
      return report(err)
    end
    local items = M.quickfix_items(started)
    vim.fn.setqflist({}, ' ', { title = QF_TITLE, items = items })
    M.quickfix_id = vim.fn.getqflist({ id = 0 }).id
    if #items == 0 then
      return notify('the catalog has no diagnostics')
    end
    vim.cmd('copen')
  end)
end

-- Completion. A completion function must answer now and never waits for the sidecar: before the
-- thread is ready it offers nothing (and starts the sidecar; typing `:Harness` already did), and
-- <Tab> again completes once it is ready — usually before the command name is typed out.
local function catalog_now()
  if not M.thread then
    M.ensure()
  end
  return M.thread and M.thread.catalog
end

local function names_of(kind)
  local names = {}
  local catalog = catalog_now()
  for _, entry in ipairs(catalog and catalog[kind] or {}) do
    table.insert(names, entry.name)
  end
  return names
end

function M.skill_names()
  return names_of('skills')
end

function M.template_names()
  return vim.list_extend(names_of('templates'), names_of('commandTemplates'))
end

function M.complete_activate(lead)
  return starting_with(M.skill_names(), lead)
end

--- :HarnessRender completion: a template name first, then `variable=` for the ones not given yet.
function M.complete_render(lead, line)
  local words, finished = completed_words(line)
  if finished <= 1 then
    return starting_with(M.template_names(), lead)
  end
  local catalog = catalog_now()
  local entry = named(catalog and catalog.templates or {}, words[2])
  return starting_with(not_given(entry and entry.variables or {}, words, TEMPLATE_KEY), lead)
end

-- :HarnessTools: the tools the model may use now (tools/list: the active ones, the deferred among them
-- by name only) and those an extension made inactive (in the thread's tools, not in tools/list). Shown
-- in the output window and redrawn there on every catalog/changed while it is open.
M.tools_count = 0 -- how many tool lists were shown (tests wait on it)

local function tool_origin(tool)
  local origin = tool.origin or {}
  return origin.id and (tostring(origin.kind) .. ' ' .. tostring(origin.id)) or tostring(origin.kind or '?')
end

--- The text :HarnessTools shows for a tools/list answer (`listed`) and the thread's tools (`all`).
function M.tools_text(listed, all)
  local active, deferred, listed_names = {}, {}, {}
  for _, tool in ipairs(listed.tools or {}) do
    listed_names[tool.name] = true
    if tool.deferred then
      table.insert(deferred, '- ' .. tool.name)
    else
      local description = (tool.description or ''):gsub('%s+', ' ')
      table.insert(active, string.format('- %s (%s)%s', tool.name, tool_origin(tool),
        description ~= '' and (': ' .. description) or ''))
    end
  end
  local inactive = {}
  for _, tool in ipairs(all or {}) do
    if not listed_names[tool.name] then
      table.insert(inactive, string.format('- %s (%s)', tool.name, tool_origin(tool)))
    end
  end
  local lines = { string.format('# Tools of %s (revision %s)', tostring(M.thread and M.thread.threadId),
    tostring(listed.revision)), '', string.format('## Active (%d)', #active + #deferred) }
  vim.list_extend(lines, active)
  if #deferred > 0 then
    vim.list_extend(lines, { '', string.format('## Deferred (%d): listed by name, found with tool_search', #deferred) })
    vim.list_extend(lines, deferred)
  end
  if #inactive > 0 then
    vim.list_extend(lines, { '', string.format('## Inactive (%d): an extension took them away', #inactive) })
    vim.list_extend(lines, inactive)
  end
  return table.concat(lines, '\n')
end

local function with_tools(callback)
  M.call('tools/list', {}, function(err, listed)
    if err then
      return report(err)
    end
    M.tools_count = M.tools_count + 1
    callback(M.tools_text(listed, M.thread and M.thread.tools or {}))
  end)
end

function M.cmd_tools()
  with_tools(function(text) M.show(text, 'markdown', 'tools') end)
end

--- The tools view again, in place (catalog/changed), if it is still the window's.
function M.redraw_tools()
  with_tools(function(text)
    local buf = M.output_buf
    if M.output_what ~= 'tools' or not (buf and vim.api.nvim_buf_is_valid(buf)) then
      return
    end
    vim.bo[buf].modifiable = true
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, '\n', { plain = true }))
    vim.bo[buf].modifiable = false
    vim.bo[buf].modified = false
  end)
end

-- :HarnessCall {tool} {json}: a tool of the thread called by hand (tools/call), as the model would
-- call it: the extensions' tool_call hooks, command hooks and confirm prompts all run.

--- The thread's tool names (thread/start's `tools`, thread/refresh's once the catalog changed), now.
function M.tool_names()
  if not M.thread then
    M.ensure()
  end
  local names = {}
  for _, tool in ipairs(M.thread and M.thread.tools or {}) do
    table.insert(names, tool.name)
  end
  return names
end

--- :HarnessCall completion: a tool name (the JSON arguments are typed).
function M.complete_call(lead, line)
  local _, finished = completed_words(line)
  if finished > 1 then
    return {}
  end
  return starting_with(M.tool_names(), lead)
end

--- JSON text as tools/call arguments: an object (empty text is `{}`), or nil and why not.
function M.call_arguments(text)
  text = vim.trim(text or '')
  if text == '' then
    return vim.empty_dict()
  end
  local ok, value = pcall(vim.json.decode, text)
  if not ok then
    return nil, 'invalid JSON arguments (' .. tostring(value):gsub('^.-:%d+: ', '') .. '): ' .. text
  end
  if type(value) ~= 'table' or text:sub(1, 1) ~= '{' then
    return nil, 'the arguments must be a JSON object such as {"command": "ls"}, not ' .. text
  end
  return next(value) and value or vim.empty_dict()
end

--- JSON for a person (vim.fn.json_encode: Neovim 0.7's vim.json writes `/` as `\/`).
local function json_text(value)
  return vim.fn.json_encode(value)
end

--- A tools/call result for a person: its text, then why it was blocked or withheld, what hooks said,
--- and its details as JSON.
function M.call_result_text(name, arguments, result)
  local lines = { '# ' .. name .. (result.isError and ' (failed)' or ''), '',
    'arguments: ' .. json_text(arguments), '' }
  for _, item in ipairs(result.content or {}) do
    vim.list_extend(lines, vim.split(tostring(item.text or json_text(item)), '\n', { plain = true }))
  end
  local details = type(result.details) == 'table' and result.details or {}
  for _, key in ipairs({ 'blocked', 'withheld' }) do
    local why = details[key]
    if type(why) == 'table' then
      table.insert(lines, '')
      local by = why.extensionId or why.by or why.source or '?'
      if type(by) == 'table' then -- a command hook's block: `by` lists its sources
        by = table.concat(vim.tbl_map(tostring, by), ', ')
      end
      table.insert(lines, string.format('%s by %s (%s): %s', key, tostring(by), tostring(why.kind), tostring(why.reason)))
    end
  end
  for _, key in ipairs({ 'hookMessages', 'hookContext' }) do
    if type(details[key]) == 'table' and #details[key] > 0 then
      table.insert(lines, '')
      table.insert(lines, '## ' .. (key == 'hookMessages' and 'what the hooks said' or 'context the hooks added'))
      for _, text in ipairs(details[key]) do
        table.insert(lines, '- ' .. tostring(text))
      end
    end
  end
  if next(details) then
    table.insert(lines, '')
    table.insert(lines, 'details: ' .. json_text(details))
  end
  return table.concat(lines, '\n')
end

local function call_and_show(name, arguments)
  M.call_tool(name, arguments, nil, function(err, answer)
    if err then
      return report(err)
    end
    local result = answer.result or answer
    M.show(M.call_result_text(name, arguments, result), 'markdown', 'call')
    if result.isError then
      notify(name .. ' failed (see the output window)', vim.log.levels.WARN)
    end
  end)
end

--- :HarnessCall {tool} {json}; a tool without arguments is called with {}. Without a tool: a picker of
--- the thread's tools, then an input for the JSON arguments (default {}).
function M.cmd_call(name, text)
  M.ensure(function(err, started)
    if err then
      return report(err)
    end
    if name and name ~= '' then
      local arguments, why = M.call_arguments(text)
      if not arguments then
        return report({ kind = 'usage', message = why })
      end
      return call_and_show(name, arguments) -- an unknown name is the sidecar's tool_not_found result
    end
    local list = started.tools or {}
    if #list == 0 then
      return notify('the thread has no tools', vim.log.levels.WARN)
    end
    ui.select(list, {
      prompt = 'Tool to call',
      format_item = function(tool)
        local origin = type(tool.origin) == 'table' and (tool.origin.id or tool.origin.kind) or nil
        return tool.name .. ' — ' .. tostring(tool.description or '') .. (origin and (' (' .. origin .. ')') or '')
      end,
    }, function(choice)
      if not choice then
        return
      end
      ui.input({ prompt = choice.name .. ' arguments (JSON): ', default = '{}' }, function(typed_text)
        if typed_text == nil then
          return -- Escape: nothing runs
        end
        local arguments, why = M.call_arguments(typed_text)
        if not arguments then
          return report({ kind = 'usage', message = why })
        end
        call_and_show(choice.name, arguments)
      end)
    end)
  end)
end

return M
