-- Headless test of the plugin as people use it (protocol v3 § 3), against the real sidecar, on
-- Neovim 0.7 and 0.11: a second setup() merges, roots as users write them, the live catalog
-- (catalog/changed → thread/refresh, every view follows, activations kept), :HarnessLog, and the
-- plugin's own floating prompts while vim.ui is the stock one (answered with keys; a question the
-- sidecar withdraws closes its prompt). vim.notify and vim.ui stay Neovim's own here.
-- Run: tests/run.sh NVIM live.lua
local here = debug.getinfo(1, 'S').source:sub(2)
local t = dofile(vim.fn.fnamemodify(here, ':p:h') .. '/harness.lua')
local out, check = t.out, t.check
local contains, wait_for, buffer_text = t.contains, t.wait_for, t.buffer_text
local uv = vim.uv or vim.loop

local repo = t.repo
local workspace = repo .. '/client-examples/workspace'
local cmd = t.cmd
out(t.version_line('live'))

local hs = require('harness_sidecar')
local ui = require('harness_sidecar.ui')
local prompt = require('harness_sidecar.prompt')
assert(ui.is_stock(vim.ui.select) and ui.is_stock(vim.ui.input) and ui.is_stock(vim.notify), 'vim.ui is not stock here')

local function told(needle)
  for _, m in ipairs(ui.history) do
    if m.message:find(needle, 1, true) then
      return m
    end
  end
end

local function skill(root, name, description)
  vim.fn.mkdir(root .. '/skills/' .. name, 'p')
  vim.fn.writefile({ '---', 'name: ' .. name, 'description: ' .. description, '---', '', '# ' .. name .. ' body' },
    root .. '/skills/' .. name .. '/SKILL.md')
end

local function keys(text)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(text, true, false, true), 'mx', false)
end

--- The one prompt window open now (waits for it), as { win, buf, kind, text }.
local function open_prompt(kind)
  wait_for(function() return next(prompt.open) ~= nil end, 'a ' .. kind .. ' prompt')
  local win, p = next(prompt.open)
  assert(p.kind == kind, 'a ' .. p.kind .. ' prompt, not ' .. kind)
  assert(vim.api.nvim_win_get_config(win).relative ~= '', 'not a floating window')
  return { win = win, buf = p.buf, text = buffer_text(p.buf) }
end

check('a second setup() merges: options it does not name keep their values', function()
  hs.reset()
  hs.setup({ cmd = cmd, trusted_extensions = { 'review-extension' }, timeout_ms = 1234 })
  hs.setup({ roots = { workspace .. '/project' } })
  assert(vim.deep_equal(hs.config.cmd, cmd), vim.inspect(hs.config.cmd))
  assert(vim.deep_equal(hs.config.trusted_extensions, { 'review-extension' }), vim.inspect(hs.config))
  assert(hs.config.timeout_ms == 1234)
  hs.setup({ roots = { workspace .. '/user' } }) -- a list is replaced, never appended to
  assert(vim.deep_equal(hs.roots(), { workspace .. '/user' }), vim.inspect(hs.roots()))
end)

check('roots as users write them: ~, $VAR, ${VAR} and relative paths reach thread/start as absolute paths', function()
  local home = os.getenv('HOME')
  local cwd = vim.fn.getcwd()
  vim.cmd('cd ' .. workspace)
  vim.env.HS_TEST_ROOT = workspace .. '/user'
  hs.setup({ roots = { 'project', '$HS_TEST_ROOT', '${HS_TEST_ROOT}/', '~/.agents-none', './broken/../project/' } })
  local roots = hs.roots()
  assert(vim.deep_equal(roots, { workspace .. '/project', workspace .. '/user', workspace .. '/user',
    home .. '/.agents-none', workspace .. '/project' }), vim.inspect(roots))
  local started
  hs.ensure(function(e, r) started = r or e end)
  wait_for(function() return started end, 'the thread')
  vim.cmd('cd ' .. cwd)
  assert(started.catalog, vim.inspect(started))
  local names = vim.tbl_map(function(s) return s.name end, started.catalog.skills)
  assert(vim.deep_equal(names, { 'commit-message', 'review' }), vim.inspect(names))
  local missing
  for _, d in ipairs(started.diagnostics) do
    if d.path == home .. '/.agents-none' then
      missing = d
    end
  end
  assert(missing, 'no diagnostic for the missing root: ' .. vim.inspect(started.diagnostics))
  local item = hs.quickfix_items({ diagnostics = { missing } })[1]
  assert(item.text:find("check roots in require('harness_sidecar').setup()", 1, true) and not item.text:find('thread/start'),
    item.text)
  hs.stop({ quiet = true })
end)

check('default roots you never made are quiet: no diagnostic in the quickfix list or the catalog', function()
  local cwd, home = vim.fn.getcwd(), vim.env.HOME
  local empty, fresh_home = vim.fn.tempname(), vim.fn.tempname()
  vim.fn.mkdir(empty, 'p')
  vim.fn.mkdir(fresh_home, 'p')
  vim.cmd('cd ' .. empty)
  vim.env.HOME = fresh_home
  hs.reset()
  hs.setup({ cmd = cmd })
  local ok, err = pcall(function()
    assert(vim.deep_equal(hs.roots(), { empty .. '/.agents', fresh_home .. '/.agents' }), vim.inspect(hs.roots()))
    local started
    hs.ensure(function(e, r) started = r or e end)
    wait_for(function() return started end, 'the thread')
    assert(#started.diagnostics == 2, 'the sidecar did report both: ' .. vim.inspect(started.diagnostics))
    vim.cmd('HarnessDiagnostics')
    wait_for(function() return told('the catalog has no diagnostics') end, 'the answer')
    assert(#vim.fn.getqflist() == 0, vim.inspect(vim.fn.getqflist()))
    vim.cmd('HarnessCatalog')
    wait_for(function() return hs.output_what == 'catalog' end, 'the catalog')
    assert(not buffer_text(hs.output_buf):find('root_', 1, true), buffer_text(hs.output_buf))
    vim.cmd('close')
  end)
  vim.cmd('cd ' .. cwd)
  vim.env.HOME = home
  hs.stop({ quiet = true })
  hs.setup({ roots = { workspace .. '/project' } })
  assert(ok, err)
end)

check('diagnostics of severity info (a root you never made) are not problems', function()
  local info = { kind = 'root_missing', severity = 'info', path = '/nowhere', message = 'root /nowhere does not exist' }
  local warning = { kind = 'description_too_long', severity = 'warning', path = '/x/SKILL.md', message = 'long' }
  local bad = { kind = 'invalid_frontmatter', path = '/x/SKILL.md', message = 'bad' }
  assert(not hs.is_problem(info) and not hs.is_problem({ kind = 'root_missing', path = '/n', message = 'm' }))
  assert(hs.is_problem(warning) and hs.is_problem(bad))
  local items = hs.quickfix_items({ diagnostics = { info, warning, bad } })
  assert(items[1].type == 'I' and items[2].type == 'W' and items[3].type == 'E', vim.inspect(items))
end)

check('catalog/changed: the same thread is refreshed; completion, pickers, quickfix and the catalog window follow; activations stay',
  function()
  local root = vim.fn.tempname()
  skill(root, 'alpha', 'Use when testing the live catalog.')
  hs.setup({ roots = { root }, trusted_extensions = {} })
  local activated
  hs.activate('alpha', nil, function(e, r) activated = r or e end)
  wait_for(function() return activated end, 'the activation')
  assert(activated.skill, vim.inspect(activated))
  local thread_id = hs.thread.threadId
  vim.cmd('HarnessDiagnostics')
  wait_for(function() return vim.fn.getqflist({ title = 0 }).title:find('harness%-sidecar') end, 'the quickfix list')
  assert(#vim.fn.getqflist() == 0)
  vim.cmd('HarnessCatalog')
  wait_for(function() return hs.output_buf and buffer_text(hs.output_buf):find('- alpha:', 1, true) end, 'the catalog')
  local refreshes = hs.refresh_count

  skill(root, 'gamma', 'Use when a skill appears while the editor runs.')
  vim.fn.mkdir(root .. '/skills/broken', 'p')
  vim.fn.writefile({ '---', 'name: broken', '---', 'no description' }, root .. '/skills/broken/SKILL.md')
  wait_for(function()
    return hs.refresh_count > refreshes and vim.tbl_contains(hs.skill_names(), 'gamma')
      and #vim.fn.getqflist() > 0
  end, 'the refreshed catalog', 10000)
  assert(hs.thread.threadId == thread_id, 'a new thread was started')
  assert(vim.deep_equal(vim.fn.getcompletion('HarnessActivate g', 'cmdline'), { 'gamma' }))
  contains(buffer_text(hs.output_buf), '- gamma: Use when a skill appears while the editor runs.')
  local qf = vim.fn.getqflist()
  assert(vim.api.nvim_buf_get_name(qf[1].bufnr):find('skills/broken/SKILL.md', 1, true), vim.inspect(qf))
  local context
  hs.context(function(e, r) context = r or e end)
  wait_for(function() return context end, 'the context')
  contains(context.systemPrompt, '# alpha body') -- still active after the refresh
  local offered
  local select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    offered = vim.tbl_map(function(i) return i.name end, items)
    on_choice(nil)
  end
  vim.cmd('HarnessActivate')
  wait_for(function() return offered end, 'the picker')
  vim.ui.select = select
  assert(vim.deep_equal(offered, { 'alpha', 'gamma' }), vim.inspect(offered))
  vim.cmd('cclose')
  hs.stop({ quiet = true })
end)

check('a plugin changing under a root: a shown :HarnessPlugins and :HarnessRender completion follow', function()
  hs.stop({ quiet = true })
  local root = vim.fn.tempname()
  local plugin = root .. '/plugins/mine'
  vim.fn.mkdir(plugin .. '/.claude-plugin', 'p')
  vim.fn.mkdir(plugin .. '/commands', 'p')
  vim.fn.writefile({ '{"name": "mine", "version": "0.1.0"}' }, plugin .. '/.claude-plugin/plugin.json')
  vim.fn.writefile({ '---', 'description: Say hello', '---', 'Hello $ARGUMENTS' }, plugin .. '/commands/hello.md')
  hs.setup({ roots = { root }, trusted_extensions = {} })
  vim.cmd('HarnessPlugins')
  wait_for(function() return hs.output_buf and buffer_text(hs.output_buf):find('- command mine:hello', 1, true) end,
    'the plugins view')
  contains(buffer_text(hs.output_buf), '## mine 0.1.0 (claude) — data only')
  local refreshes = hs.refresh_count
  -- The sidecar arms its watch after thread/start's answer (protocol.md), so a file written at once
  -- may come before it: written again (as a user saves again) until a refresh comes. What is tested
  -- here is the view following the refresh.
  for attempt = 1, 5 do
    vim.fn.writefile({ '---', 'argument-hint: <who>', '---', 'Bye $1', string.rep(' ', attempt) }, plugin .. '/commands/bye.md')
    if vim.wait(2000, function() return hs.refresh_count > refreshes end, 10) then
      break
    end
  end
  wait_for(function()
    return hs.refresh_count > refreshes and buffer_text(hs.output_buf):find('- command mine:bye <who>', 1, true)
  end, 'the refreshed plugins view', 10000)
  local names = vim.fn.getcompletion('HarnessRender mine:', 'cmdline')
  assert(vim.deep_equal(names, { 'mine:bye', 'mine:hello' }), vim.inspect(names))
  hs.stop({ quiet = true })
end)

check(':HarnessLog shows what the sidecar wrote to stderr', function()
  local root = vim.fn.tempname()
  vim.fn.mkdir(root .. '/extensions', 'p')
  vim.fn.writefile({ 'import sys', 'def activate(api):', '    print("talkative extension says hello", file=sys.stderr, flush=True)' },
    root .. '/extensions/talkative.py')
  hs.setup({ roots = { root }, trusted_extensions = { 'talkative' } })
  local ready
  hs.ensure(function(e, r) ready = r or e end)
  wait_for(function() return ready end, 'the thread')
  wait_for(function() return table.concat(hs.log, '\n'):find('talkative extension says hello', 1, true) end, 'the line')
  vim.cmd('HarnessLog')
  contains(buffer_text(hs.output_buf), 'talkative extension says hello')
  assert(vim.bo[hs.output_buf].filetype == 'log')
  vim.cmd('close')
  hs.stop({ quiet = true })
end)

-- The floating prompts: the example permission-gate asks ui/confirm, an extension asks select and input.
local root = vim.fn.tempname()
vim.fn.mkdir(root .. '/extensions', 'p')
vim.fn.writefile(vim.fn.readfile(repo .. '/client-examples/extensions/permission-gate.py'), root .. '/extensions/permission-gate.py')
vim.fn.writefile({
  'def ask(arguments, ctx):',
  '    colour = ctx.ui.select("Colour", [{"value": "b", "label": "Blue"}, "red"])',
  '    name = ctx.ui.input("Name")',
  '    return f"{colour} {name}"',
  '',
  'def activate(api):',
  '    api.register_command("ask", "Ask for a colour and a name", ask)',
}, root .. '/extensions/asker.py')
local ran = {}
local function setup_prompts(limits)
  hs.stop({ quiet = true })
  hs.setup({ roots = { root }, trusted_extensions = { 'permission-gate', 'asker' },
    tools = { bash = { description = 'Run a shell command.', handler = function(arguments)
      table.insert(ran, arguments.command)
      return 'ran ' .. arguments.command, true
    end } } })
end
setup_prompts()

check('ui/confirm with the stock vim.ui.select: a floating prompt that does not block; 1 allows, 2 denies', function()
  local result
  hs.call_tool('bash', { command = 'rm -rf build/' }, 'f1', function(e, r) result = r or e end)
  local p = open_prompt('select')
  contains(p.text, 'permission-gate asks — Dangerous command: rm -rf build/')
  contains(p.text, '1. Allow')
  contains(p.text, '2. Deny')
  -- meanwhile the editor works: timers run, commands answer
  local ticks = 0
  local timer = uv.new_timer()
  timer:start(0, 20, vim.schedule_wrap(function() ticks = ticks + 1 end))
  local listed
  hs.client:request('commands/list', { threadId = hs.thread.threadId }, function(e, r) listed = r or e end)
  wait_for(function() return listed and ticks >= 5 end, 'the editor while the prompt is open')
  timer:stop()
  assert(result == nil, 'answered without the user')
  assert(vim.api.nvim_get_current_win() == p.win, 'the prompt does not have the focus')
  keys('1')
  wait_for(function() return result end, 'the result')
  assert(result.result.isError == false and ran[#ran] == 'rm -rf build/', vim.inspect(result))
  assert(next(prompt.open) == nil and not vim.api.nvim_win_is_valid(p.win), 'the prompt stayed open')

  result = nil
  hs.call_tool('bash', { command = 'sudo reboot' }, 'f2', function(e, r) result = r or e end)
  open_prompt('select')
  keys('2')
  wait_for(function() return result end, 'the result')
  assert(result.result.details.blocked.kind == 'deny', vim.inspect(result))
  result = nil
  hs.call_tool('bash', { command = 'sudo reboot' }, 'f3', function(e, r) result = r or e end)
  open_prompt('select')
  keys('<Esc>') -- no answer is "no"
  wait_for(function() return result end, 'the result')
  assert(result.result.details.blocked.kind == 'deny', vim.inspect(result))
  assert(ran[#ran] == 'rm -rf build/', vim.inspect(ran))
end)

check('ui/select and ui/input with the stock vim.ui: <CR> on an entry, then text typed in a prompt buffer', function()
  local result
  hs.run_command('ask', {}, function(e, r) result = r or e end)
  local p = open_prompt('select')
  contains(p.text, 'asker: Colour')
  contains(p.text, '2. red')
  keys('j<CR>')
  p = open_prompt('input')
  assert(vim.bo[p.buf].buftype == 'prompt')
  keys('AAda Lovelace<CR>')
  wait_for(function() return result end, 'the result')
  assert(result.content and result.content[1].text == 'red Ada Lovelace', vim.inspect(result))
  assert(next(prompt.open) == nil, 'a prompt stayed open')
end)

check('a question the sidecar withdraws (uiTimeoutMs) closes its prompt and says so; the editor goes on', function()
  local started
  hs.client:request('thread/start', { roots = { root }, trustedExtensions = { 'asker' }, limits = { uiTimeoutMs = 600 } },
    function(e, r) started = r or e end)
  wait_for(function() return started end, 'the thread')
  local result
  hs.client:request('commands/run', { threadId = started.threadId, name = 'ask', arguments = vim.empty_dict() },
    function(e, r) result = r or e end)
  local p = open_prompt('select')
  wait_for(function() return not vim.api.nvim_win_is_valid(p.win) end, 'the prompt to close')
  local q = open_prompt('input') -- the extension asks the next question; it is withdrawn too
  wait_for(function() return result end, 'the result')
  assert(result.content[1].text == 'None None', vim.inspect(result))
  assert(not vim.api.nvim_win_is_valid(q.win) and next(prompt.open) == nil, 'a withdrawn prompt stayed open')
  assert(told('asker no longer waits for an answer to "Colour" (its prompt is closed)'), vim.inspect(ui.history))
  assert(told('asker no longer waits for an answer to "Name" (its prompt is closed)'), vim.inspect(ui.history))
  assert(next(ui.questions) == nil, 'questions left')
end)

check('a prompt asked around a command line being typed opens and is answered', function()
  local result
  vim.api.nvim_feedkeys(':echo', 'n', false) -- the user is typing a command
  vim.schedule(function()
    hs.call_tool('bash', { command = 'rm -rf build/' }, 'f4', function(e, r) result = r or e end)
  end)
  keys('') -- run the typeahead: the command line is open while the request arrives
  wait_for(function() return next(prompt.open) ~= nil or result end, 'the prompt')
  local p = open_prompt('select')
  keys('2')
  wait_for(function() return result end, 'the result')
  assert(result.result.details.blocked.kind == 'deny', vim.inspect(result))
  assert(not vim.api.nvim_win_is_valid(p.win))
end)

check(':HarnessTools lists the active, deferred and inactive tools and follows ctx.tools.set_active', function()
  hs.stop({ quiet = true, wait = true })
  local root = vim.fn.tempname()
  vim.fn.mkdir(root .. '/extensions', 'p')
  vim.fn.writefile({
    'def focus(call_id, arguments, ctx):',
    '    return ",".join(ctx.tools.set_active(arguments["names"]))',
    'def activate(api):',
    '    for name in ("alpha", "beta", "gamma"):',
    '        api.register_tool(name=name, description="Tool " + name + ".", input_schema={},',
    '                          execute=lambda call_id, arguments, ctx: "ran")',
    '    api.register_tool(name="focus", description="Choose the active tools.", input_schema={}, execute=focus)',
  }, root .. '/extensions/toolbox.py')
  hs.setup({ roots = { root }, trusted_extensions = { 'toolbox' }, limits = { deferToolsOver = 2 } })
  local text = t.shows(hs, 'HarnessTools')
  contains(text, '## Active (')
  contains(text, '## Deferred (')
  contains(text, '- gamma\n') -- past the first 2: by name only
  contains(text, 'tool_search')
  assert(not text:find('## Inactive', 1, true), text)
  local drawn, result = hs.tools_count, nil
  hs.call_tool('focus', { names = { 'alpha', 'focus' } }, 'tools-1', function(e, r) result = r or e end)
  wait_for(function() return result end, 'the focus call')
  assert(result.result and not result.result.isError, vim.inspect(result))
  wait_for(function() return hs.tools_count > drawn and buffer_text(hs.output_buf):find('## Inactive', 1, true) end,
    'the tools view redrawn on catalog/changed')
  text = buffer_text(hs.output_buf)
  contains(text, '- beta (extension toolbox)')
  contains(text, '- gamma (extension toolbox)')
  contains(text, '- alpha (extension toolbox): Tool alpha.')
  assert(not text:find('## Deferred', 1, true), text) -- two active tools: none past the first 2
end)

hs.stop({ quiet = true, wait = true })
t.finish()
