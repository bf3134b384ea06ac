-- Headless test of asking the user, extension commands and MCP servers, against the real sidecar
-- and real extensions (the example permission-gate, and an extension written here that asks through
-- every ctx.ui call), on Neovim 0.7 and 0.11. vim.ui.select / vim.ui.input are replaced by a user
-- who answers as each check says. Run: tests/run.sh NVIM ui.lua
local here = debug.getinfo(1, 'S').source:sub(2)
local t = dofile(vim.fn.fnamemodify(here, ':p:h') .. '/harness.lua')
local out, check = t.out, t.check
local contains, wait_for = t.contains, t.wait_for

local plugin = vim.fn.fnamemodify(here, ':p:h:h')
local repo = vim.fn.fnamemodify(plugin, ':h:h')
local cmd = t.cmd
local python = t.python
out(t.version_line('ui'))

local notifications = t.capture_notifications()
local function notified(needle)
  for _, n in ipairs(notifications) do
    if n.message:find(needle, 1, true) then
      return n
    end
  end
end

-- The user: each question goes to the answer function the check set (nil: never answers).
local asked = {}
local answer = {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(asked, { how = 'select', items = items, opts = opts, on_choice = on_choice })
  if answer.select then
    answer.select(items, opts, on_choice)
  end
end
vim.ui.input = function(opts, on_confirm)
  table.insert(asked, { how = 'input', opts = opts, on_confirm = on_confirm })
  if answer.input then
    answer.input(opts, on_confirm)
  end
end
local function choose(label)
  return function(items, opts, on_choice)
    for _, item in ipairs(items) do
      local text = type(item) == 'table' and (item.label or item.name) or item
      if text == label then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
end

local root = vim.fn.tempname()
vim.fn.mkdir(root .. '/extensions', 'p')
vim.fn.writefile(vim.fn.readfile(repo .. '/client-examples/extensions/permission-gate.py'),
  root .. '/extensions/permission-gate.py')
vim.fn.writefile({
  'def ask(arguments, ctx):',
  '    colour = ctx.ui.select("Colour", [{"value": "b", "label": "Blue", "description": "calm"}, "red"])',
  '    name = ctx.ui.input("Name", "your name")',
  '    ctx.ui.notify(f"chose {colour} for {name}", level="warning")',
  '    ctx.ui.set_status("mood", f"feeling {colour}")',
  '    return f"{colour} {name} x{arguments[\'times\']!r}"',
  '',
  'def clear(arguments, ctx):',
  '    ctx.ui.set_status("mood", None)',
  '    return "cleared"',
  '',
  'def activate(api):',
  '    api.register_command("ask", "Ask for a colour and a name", ask, {"type": "object", "required": ["times"],',
  '        "properties": {"times": {"type": "integer"}, "why": {"type": "string"}}})',
  '    api.register_command("clear", "Clear the mood", clear)',
}, root .. '/extensions/asker.py')

local ran = {}
local hs = require('harness_sidecar')
local function setup(extra)
  hs.stop({ quiet = true })
  hs.setup(vim.tbl_extend('force', {
    cmd = cmd, roots = { root }, trusted_extensions = { 'permission-gate', 'asker' },
    tools = { bash = { description = 'Run a shell command in the editor.', handler = function(arguments)
      table.insert(ran, arguments.command)
      return 'ran ' .. arguments.command, true
    end } },
  }, extra or {}))
end
setup()

local function call(command, id)
  local result
  hs.call_tool('bash', { command = command }, id, function(e, r) result = r or e end)
  wait_for(function() return result end, 'the result of ' .. id)
  return result.result or result
end

check('ui/confirm: vim.ui.select Allow / Deny naming the extension, the tool and its arguments', function()
  answer.select = choose('Allow')
  local allowed = call('rm -rf build/', 'c1')
  local question = asked[#asked]
  assert(vim.deep_equal(question.items, { 'Allow', 'Deny' }), vim.inspect(question.items))
  assert(question.opts.kind == 'harness_sidecar.confirm')
  contains(question.opts.prompt, 'permission-gate asks — Dangerous command: rm -rf build/ This looks like recursive delete.')
  contains(question.opts.prompt, '[bash {"command":"rm -rf build/"}]')
  assert(allowed.isError == false and allowed.content[1].text == 'ran rm -rf build/', vim.inspect(allowed))

  answer.select = choose('Deny')
  local denied = call('sudo reboot', 'c2')
  assert(denied.details.blocked.kind == 'deny' and denied.details.blocked.reason == 'the user did not allow it (sudo)',
    vim.inspect(denied))
  answer.select = function(_, _, on_choice) on_choice(nil) end -- Escape
  local dismissed = call('sudo reboot', 'c3')
  assert(dismissed.details.blocked.kind == 'deny', vim.inspect(dismissed))
  assert(vim.deep_equal(ran, { 'rm -rf build/' }), vim.inspect(ran))
end)

check(':HarnessCommand completes names, then the arguments not given yet', function()
  local names = vim.fn.getcompletion('HarnessCommand ', 'cmdline')
  assert(vim.deep_equal(names, { 'ask', 'clear' }), vim.inspect(names))
  assert(vim.deep_equal(vim.fn.getcompletion('HarnessCommand a', 'cmdline'), { 'ask' }))
  local keys = vim.fn.getcompletion('HarnessCommand ask ', 'cmdline')
  assert(vim.deep_equal(keys, { 'times=', 'why=' }), vim.inspect(keys))
  keys = vim.fn.getcompletion('HarnessCommand ask times=2 ', 'cmdline')
  assert(vim.deep_equal(keys, { 'why=' }), vim.inspect(keys))
end)

check(':HarnessCommand ask times=3: select, input, notify and status answered; the result shown', function()
  answer.select = choose('Blue')
  answer.input = function(_, on_confirm) on_confirm('Ada') end
  local first = #asked
  local text = t.shows(hs, 'HarnessCommand ask times=3')
  assert(text == '# ask\n\nb Ada x3', vim.inspect(text)) -- times=3 was sent as the integer 3
  local select, input = asked[first + 1], asked[first + 2]
  assert(select.opts.prompt == 'asker: Colour', vim.inspect(select.opts))
  assert(vim.deep_equal(vim.tbl_map(select.opts.format_item, select.items), { 'Blue — calm', 'red' }))
  assert(input.opts.prompt == 'asker: Name (your name): ', vim.inspect(input.opts))
  local n = notified('[asker] chose b for Ada')
  assert(n and n.level == vim.log.levels.WARN, vim.inspect(notifications))
  assert(hs.statusline() == 'feeling b', hs.statusline())
  vim.o.statusline = "%{v:lua.require'harness_sidecar'.statusline()}"
  vim.cmd('redrawstatus')

  t.shows(hs, 'HarnessCommand clear')
  assert(hs.statusline() == '', hs.statusline())
end)

check(':HarnessCommand without a name: a picker, then a prompt per argument', function()
  answer.select = choose('ask')
  local prompts = {}
  answer.input = function(opts, on_confirm)
    table.insert(prompts, opts.prompt)
    if opts.prompt:find('times', 1, true) then
      return on_confirm('2')
    end
    if opts.prompt:find('why', 1, true) then
      return on_confirm('')
    end
    on_confirm('Bo')
  end
  local offered
  local pick = choose('ask')
  answer.select = function(items, opts, on_choice)
    if opts.prompt == 'Extension command to run' then
      offered = vim.tbl_map(opts.format_item, items)
      return pick(items, opts, on_choice)
    end
    choose('red')(items, opts, on_choice)
  end
  local text = t.shows(hs, 'HarnessCommand')
  assert(vim.deep_equal(offered, { 'ask — Ask for a colour and a name (asker)', 'clear — Clear the mood (asker)' }),
    vim.inspect(offered))
  assert(vim.deep_equal(prompts, { 'ask: times = ', 'ask: why (optional) = ', 'asker: Name (your name): ' }),
    vim.inspect(prompts))
  assert(text == '# ask\n\nred Bo x2', vim.inspect(text))
end)

check('bad command input is reported: an unknown name, arguments that break the schema', function()
  local before = #notifications
  vim.cmd('HarnessCommand nope')
  wait_for(function() return #notifications > before end, 'the error')
  contains(notifications[#notifications].message, 'command_not_found')
  before = #notifications
  vim.cmd('HarnessCommand ask times=many')
  wait_for(function() return #notifications > before end, 'the error')
  contains(notifications[#notifications].message, 'invalid_arguments')
end)

check('when the sidecar stops waiting ($/cancelRequest) the question is withdrawn and a late answer dropped', function()
  answer.select, answer.input = nil, nil -- a user who does not answer
  local started
  hs.client:request('thread/start', { roots = { root }, trustedExtensions = { 'asker' }, limits = { uiTimeoutMs = 500 } },
    function(e, r) started = r or e end)
  wait_for(function() return started end, 'the thread')
  local first, result = #asked, nil
  hs.client:request('commands/run', { threadId = started.threadId, name = 'ask', arguments = { times = 1 } },
    function(e, r) result = r or e end)
  wait_for(function() return result end, 'the result')
  assert(result.content[1].text == 'None None x1', vim.inspect(result))
  assert(#asked == first + 2, 'not asked twice')
  contains(notified('no longer waits for an answer to "Colour"').message, 'asker')
  assert(notified('no longer waits for an answer to "Name"'))
  assert(next(require('harness_sidecar.ui').questions) == nil, 'questions left')
  asked[first + 1].on_choice(asked[first + 1].items[1]) -- the user answers late: nothing is sent
  asked[first + 2].on_confirm('late')
  local pong
  hs.client:request('commands/list', { threadId = started.threadId }, function(e, r) pong = r or e end)
  wait_for(function() return pong end, 'the sidecar still serving')
  assert(#pong.commands == 2)
end)

check('mcp_servers: the MCP servers of setup() are the thread\'s', function()
  setup({ mcp_servers = { { name = 'sdk', command = { python, repo .. '/tests/mcp_servers/sdk_server.py' },
    env = {}, tools = { deny = { 'exit' } } } } }) -- env = {} is sent as {}, not []
  local ready
  hs.ensure(function(e, r) ready = r or e end)
  wait_for(function() return ready end, 'the thread')
  local names = vim.tbl_map(function(tool) return tool.name end, ready.tools)
  assert(vim.tbl_contains(names, 'mcp__sdk__echo') and not vim.tbl_contains(names, 'mcp__sdk__exit'), vim.inspect(names))
  local result
  hs.call_tool('mcp__sdk__echo', { text = 'héllo ✓' }, 'm1', function(e, r) result = r or e end)
  wait_for(function() return result end, 'the MCP result')
  assert(result.result.content[1].text == 'héllo ✓', vim.inspect(result))
end)

check('the status items go with the sidecar', function()
  setup()
  answer.select = choose('Blue')
  answer.input = function(_, on_confirm) on_confirm('Cy') end
  t.shows(hs, 'HarnessCommand ask times=1')
  assert(hs.statusline() == 'feeling b')
  hs.stop({ quiet = true })
  assert(hs.statusline() == '', hs.statusline())
end)

check(':HarnessCall completes the thread\'s tool names', function()
  setup()
  local ready
  hs.ensure(function(e, r) ready = r or e end)
  wait_for(function() return ready end, 'the thread')
  local names = vim.fn.getcompletion('HarnessCall ', 'cmdline')
  for _, name in ipairs({ 'bash', 'editor_selection', 'load_skill' }) do
    assert(vim.tbl_contains(names, name), vim.inspect(names))
  end
  assert(vim.deep_equal(vim.fn.getcompletion('HarnessCall ba', 'cmdline'), { 'bash' }))
  assert(vim.deep_equal(vim.fn.getcompletion('HarnessCall bash ', 'cmdline'), {}))
end)

check(':HarnessCall bash {json}: the confirm prompt asks; allowed it runs, denied it is blocked, both shown', function()
  ran = {}
  answer.select = choose('Allow')
  local text = t.shows(hs, 'HarnessCall bash {"command": "rm -rf build/"}')
  contains(asked[#asked].opts.prompt, 'permission-gate asks — Dangerous command: rm -rf build/')
  assert(text == '# bash\n\narguments: {"command": "rm -rf build/"}\n\nran rm -rf build/', vim.inspect(text))
  answer.select = choose('Deny')
  text = t.shows(hs, 'HarnessCall bash {"command": "sudo reboot"}')
  contains(text, '# bash (failed)')
  contains(text, 'blocked by permission-gate (deny): the user did not allow it (sudo)')
  assert(notified('bash failed (see the output window)'), vim.inspect(notifications))
  assert(vim.deep_equal(ran, { 'rm -rf build/' }), vim.inspect(ran))
  text = t.shows(hs, 'HarnessCall nope')
  contains(text, '# nope (failed)')
  contains(text, '"kind": "tool_not_found"')
end)

check(':HarnessCall without arguments: a picker of the tools, then the JSON (default {}); invalid JSON says so', function()
  ran = {}
  local offered
  answer.select = function(items, opts, on_choice)
    offered = vim.tbl_map(opts.format_item, items)
    choose('bash')(items, opts, on_choice)
  end
  local prompted
  answer.input = function(opts, on_confirm)
    prompted = opts
    on_confirm('{"command": "ls -l"}')
  end
  local text = t.shows(hs, 'HarnessCall')
  assert(vim.tbl_contains(offered, 'bash — Run a shell command in the editor. (dynamic)'), vim.inspect(offered))
  assert(prompted.prompt == 'bash arguments (JSON): ' and prompted.default == '{}', vim.inspect(prompted))
  contains(text, 'ran ls -l')
  local shown = hs.shown_count
  answer.input = function(_, on_confirm) on_confirm('{command: ls') end
  vim.cmd('HarnessCall')
  wait_for(function() return notified('invalid JSON arguments') end, 'the invalid JSON message')
  vim.cmd('HarnessCall bash ["ls"]')
  wait_for(function() return notified('must be a JSON object') end, 'the not-an-object message')
  answer.input = function(_, on_confirm) on_confirm(nil) end -- Escape: nothing runs
  vim.cmd('HarnessCall')
  assert(hs.shown_count == shown, 'a result was shown')
  assert(vim.deep_equal(ran, { 'ls -l' }), vim.inspect(ran))
  answer.select, answer.input = nil, nil
end)

check(':HarnessCall shows a trusted command hook\'s block, its reason and its message', function()
  local hooked = vim.fn.tempname()
  vim.fn.mkdir(hooked, 'p')
  local says = vim.fn.json_encode({ systemMessage = 'hook says: use the trash instead',
    hookSpecificOutput = { hookEventName = 'PreToolUse', permissionDecision = 'deny',
      permissionDecisionReason = 'no rm in this repository' } })
  vim.fn.writefile({ vim.fn.json_encode({ hooks = { PreToolUse = { { matcher = 'bash',
    hooks = { { type = 'command', command = "printf '%s' '" .. says .. "'" } } } } } }) }, hooked .. '/hooks.json')
  setup({ roots = { root, hooked }, trusted_hooks = { { path = hooked .. '/hooks.json' } } })
  ran = {}
  local text = t.shows(hs, 'HarnessCall bash {"command": "ls"}')
  contains(text, '# bash (failed)')
  contains(text, 'blocked by root:' .. hooked .. '/hooks.json (hook): no rm in this repository')
  contains(text, '## what the hooks said\n- hook says: use the trash instead')
  assert(vim.deep_equal(ran, {}), vim.inspect(ran))
  setup()
end)

check('ui/openUrl opens the sign-in page with vim.ui.open (0.10+), else tells the URL; answers opened', function()
  local hs_ui = require('harness_sidecar.ui')
  local handler = hs.reverse_requests['ui/openUrl']
  local answers = {}
  local client = { respond = function(_, id, result) answers[id] = result end }
  local params = { threadId = 'thread-1', url = 'https://auth.example.com/authorize?x=1', reason = 'sign in to linear' }
  local real_open = vim.ui.open
  local opened_with
  if real_open then
    vim.ui.open = function(url) opened_with = url; return { pid = 1 }, nil end
  end
  assert(handler(params, 7, client) == nil) -- answered later, from the main loop
  wait_for(function() return answers[7] ~= nil end, 'the answer')
  if real_open then
    assert(answers[7].opened == true and opened_with == params.url, vim.inspect(answers[7]))
    vim.ui.open = function() return nil, 'no browser' end
    handler(params, 8, client)
    wait_for(function() return answers[8] ~= nil end, 'the second answer')
    assert(answers[8].opened == false, vim.inspect(answers[8]))
    vim.ui.open = real_open
  else
    assert(answers[7].opened == false, vim.inspect(answers[7]))
  end
  local last = hs_ui.history[#hs_ui.history].message
  contains(last, 'sign in to linear: open https://auth.example.com/authorize?x=1')
  assert(hs_ui.capabilities.openUrl == true)
end)

check(':help covers asking, :HarnessCommand, :HarnessCall, the statusline and mcp_servers', function()
  for _, tag in ipairs({ 'harness_sidecar-ui', ':HarnessCommand', 'harness_sidecar.statusline()', 'harness_sidecar-mcp', ':HarnessCall' }) do
    vim.cmd('help ' .. tag)
    vim.cmd('close')
  end
end)

hs.stop({ quiet = true, wait = true })
t.finish()
