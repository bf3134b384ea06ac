-- Headless test of the plugin against the real sidecar (Neovim 0.7 and 0.11): completion before
-- the sidecar started, the review scenario through the user commands (asynchronous: each waits
-- for what the user would see), pickers, the quickfix list, one reused window, a slow extension
-- that must not block the editor, a killed sidecar, :HarnessStop, :help and :checkhealth.
-- Run (see tests/run.sh):
--   nvim --headless -u NONE -i NONE --cmd 'set rtp^=client-examples/neovim' \
--        -c 'luafile client-examples/neovim/tests/scenario.lua' -c 'cq 2'
local here = debug.getinfo(1, 'S').source:sub(2)
local t = dofile(vim.fn.fnamemodify(here, ':p:h') .. '/harness.lua')
local out, check = t.out, t.check
local contains, wait_for, buffer_text = t.contains, t.wait_for, t.buffer_text
local uv = vim.uv or vim.loop

local plugin = vim.fn.fnamemodify(here, ':p:h:h')
local workspace = vim.fn.fnamemodify(here, ':p:h:h:h') .. '/workspace'
local cmd = t.cmd
out(t.version_line(vim.system and 'vim.system' or 'jobstart'))

local notifications = t.capture_notifications()
local function last_notification()
  return (notifications[#notifications] or {}).message or ''
end

local hs = require('harness_sidecar')
local roots = { workspace .. '/project', workspace .. '/user' }
hs.setup({ cmd = cmd, roots = roots, trusted_extensions = { 'review-extension' } })

--- Run an Ex command and return the text it shows in the output window (once it is shown).
local function shows(command)
  return t.shows(hs, command)
end

local function output_text()
  return hs.output_buf and vim.api.nvim_buf_is_valid(hs.output_buf) and buffer_text(hs.output_buf) or ''
end

check('setup() twice does not repeat the roots', function()
  hs.setup({ cmd = cmd, roots = roots, trusted_extensions = { 'review-extension' } })
  assert(vim.deep_equal(hs.roots(), roots), vim.inspect(hs.roots()))
end)

check('<Tab> before the sidecar is ready never waits for it; names complete once it is', function()
  assert(hs.client == nil, 'the sidecar was already running')
  -- a thread that takes 3 s to start (an extension that sleeps while it activates)
  local slow = vim.fn.tempname()
  vim.fn.mkdir(slow .. '/extensions', 'p')
  vim.fn.writefile({ 'import time', 'def activate(api):', '    time.sleep(3)' }, slow .. '/extensions/slow.py')
  hs.setup({ roots = { roots[1], roots[2], slow }, trusted_extensions = { 'review-extension', 'slow' } })
  local started = uv.hrtime()
  local names = vim.fn.getcompletion('HarnessActivate re', 'cmdline')
  local ms = (uv.hrtime() - started) / 1e6
  assert(ms < 1000, string.format('completion waited %d ms for the sidecar', ms))
  assert(vim.deep_equal(names, {}), vim.inspect(names))
  assert(hs.client ~= nil, 'completion did not start the sidecar')
  wait_for(function() return hs.thread end, 'the thread')
  names = vim.fn.getcompletion('HarnessActivate re', 'cmdline')
  assert(vim.deep_equal(names, { 'review' }), vim.inspect(names))
  hs.stop({ quiet = true })
  hs.setup({ roots = roots, trusted_extensions = { 'review-extension' } })
end)

check('typing :Harness starts the sidecar, so that <Tab> finds it ready', function()
  assert(hs.client == nil or not hs.client.running, 'the sidecar was already running')
  vim.api.nvim_feedkeys(':HarnessAct', 'ntx', false)
  assert(hs.client ~= nil, 'not started while typing')
  wait_for(function() return hs.thread end, 'the thread')
  local names = vim.fn.getcompletion('HarnessActivate re', 'cmdline')
  assert(vim.deep_equal(names, { 'review' }), vim.inspect(names))
end)

check(':HarnessRender completes templates, then the variables not given yet', function()
  local templates = vim.fn.getcompletion('HarnessRender r', 'cmdline')
  assert(vim.deep_equal(templates, { 'review' }), vim.inspect(templates))
  local variables = vim.fn.getcompletion('HarnessRender review ', 'cmdline')
  assert(vim.deep_equal(variables, { 'path=', 'focus=' }), vim.inspect(variables))
  local rest = vim.fn.getcompletion('HarnessRender review path=src/x.ts ', 'cmdline')
  assert(vim.deep_equal(rest, { 'focus=' }), vim.inspect(rest))
end)

check(':HarnessCatalog shows the winners and the shadowed', function()
  local text = shows('HarnessCatalog')
  contains(text, '- review: Use when reviewing code in this repository; not for deploys.')
  contains(text, '- commit-message:')
  contains(text, '- review [path, focus]')
  contains(text, '- review-extension: loaded')
  contains(text, 'shadowed')
end)

check(':HarnessActivate review shows the body, in the same window', function()
  local windows = #vim.api.nvim_list_wins()
  contains(shows('HarnessActivate review'), '# Reviewing in this project')
  assert(#vim.api.nvim_list_wins() == windows, 'a second window was opened')
end)

check(':HarnessRender fills the template', function()
  local text = shows('HarnessRender review path=src/parser.ts focus=error handling')
  assert(text == 'Review src/parser.ts with the review skill. Focus on error handling.\n', vim.inspect(text))
end)

check('a missing template argument is reported, not thrown', function()
  local before = #notifications
  vim.cmd('HarnessRender review path=x')
  wait_for(function() return #notifications > before end, 'the error')
  contains(last_notification(), 'missing_argument')
end)

check(':HarnessContext shows the system prompt with the active skill', function()
  local text = shows('HarnessContext')
  contains(text, '# Active skill: review')
  assert(text:find('User instructions', 1, true) < text:find('Project instructions', 1, true))
end)

check('pickers: :HarnessActivate and :HarnessRender without arguments', function()
  local offered
  local select, input = vim.ui.select, vim.ui.input
  vim.ui.select = function(items, opts, on_choice)
    offered = vim.tbl_map(opts.format_item, items)
    for _, item in ipairs(items) do
      if item.name == 'commit-message' or item.name == 'review' and #items == 1 then
        return on_choice(item)
      end
    end
  end
  vim.ui.input = function(opts, on_confirm) on_confirm('<' .. opts.prompt:match(': (%w+) = $') .. '>') end
  contains(shows('HarnessActivate'), '# commit-message')
  assert(offered[1]:find('commit-message — Use when writing a commit message', 1, true), vim.inspect(offered))
  local text = shows('HarnessRender')
  vim.ui.select, vim.ui.input = select, input
  assert(text == 'Review <path> with the review skill. Focus on <focus>.\n', vim.inspect(text))
end)

check('the output window closes with q', function()
  local win = vim.fn.bufwinid(hs.output_buf)
  assert(win ~= -1)
  vim.api.nvim_set_current_win(win)
  vim.cmd('normal q')
  assert(vim.fn.bufwinid(hs.output_buf) == -1, 'still open')
end)

check('tool calls: review_note allowed, a SECRET note blocked, the selection answered', function()
  local results = {}
  hs.call_tool('review_note', { text = 'parse() drops the last token' }, 'call-1', function(e, r) results[1] = r or e end)
  hs.call_tool('review_note', { text = 'SECRET-1' }, 'call-2', function(e, r) results[2] = r or e end)
  wait_for(function() return results[1] and results[2] end, 'the tool results')
  assert(results[1].result.isError == false, vim.inspect(results[1]))
  assert(results[2].result.toolCallId == 'call-2' and results[2].result.details.blocked.kind == 'deny')
  vim.cmd('enew')
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'first line', 'export function parse(src) {', 'last — ✓ 日本' })
  vim.cmd('normal! 2GVj\27')
  hs.call_tool('editor_selection', {}, 'call-3', function(e, r) results[3] = r or e end)
  wait_for(function() return results[3] end, 'the selection')
  assert(results[3].result.content[1].text == 'export function parse(src) {\nlast — ✓ 日本', vim.inspect(results[3]))
end)

check(':HarnessDiagnostics fills the quickfix list with files and lines', function()
  hs.stop({ quiet = true })
  hs.setup({ cmd = cmd, roots = { workspace .. '/broken', workspace .. '/project' } })
  local before = vim.fn.getqflist({ id = 0 }).id
  vim.cmd('HarnessDiagnostics')
  wait_for(function() return vim.fn.getqflist({ id = 0 }).id ~= before end, 'the quickfix list')
  local found = {}
  for _, item in ipairs(vim.fn.getqflist()) do
    found[vim.api.nvim_buf_get_name(item.bufnr):match('broken/(.*)$') or '?'] = item
  end
  local deploy = found['skills/deploy/SKILL.md']
  assert(deploy and deploy.lnum == 3 and deploy.text:find('^invalid_frontmatter'), vim.inspect(found))
  assert(found['skills/wrong-name/SKILL.md'].text:find('name_mismatch', 1, true))
  assert(vim.bo.buftype == 'quickfix', 'the quickfix window is not open')
  vim.cmd('cclose')
end)

check('a slow extension does not block the editor', function()
  hs.stop({ quiet = true })
  local root = vim.fn.tempname()
  vim.fn.mkdir(root .. '/extensions', 'p')
  vim.fn.writefile({ 'import time', 'def activate(api):', '    time.sleep(3)' }, root .. '/extensions/slow.py')
  hs.setup({ cmd = cmd, roots = { root }, trusted_extensions = { 'slow' } })
  local count = hs.shown_count
  local started = uv.hrtime()
  vim.cmd('HarnessCatalog')
  local returned_ms = (uv.hrtime() - started) / 1e6
  -- Meanwhile the editor evaluates a :lua and runs timers as usual.
  local ticks = 0
  local timer = uv.new_timer()
  timer:start(0, 100, vim.schedule_wrap(function() ticks = ticks + 1 end))
  vim.cmd('lua vim.g.harness_meanwhile = 1 + 1')
  local meanwhile_ms = (uv.hrtime() - started) / 1e6
  wait_for(function() return hs.shown_count > count end, 'the catalog')
  contains(buffer_text(hs.output_buf), '- slow: loaded')
  local total_ms = (uv.hrtime() - started) / 1e6
  timer:stop()
  assert(vim.g.harness_meanwhile == 2)
  assert(total_ms >= 3000, 'the extension did not sleep? ' .. total_ms)
  assert(returned_ms < 1000 and meanwhile_ms < 1000, string.format('blocked: returned after %d ms, :lua ran after %d ms',
    returned_ms, meanwhile_ms))
  assert(ticks >= 10, 'timers did not run while waiting: ' .. ticks)
end)

check('a sidecar killed mid-request is reported, not waited for', function()
  hs.stop({ quiet = true })
  hs.setup({ cmd = cmd, roots = roots, trusted_extensions = { 'review-extension' },
    tools = { editor_wait = { description = 'never answers', handler = function() return nil end } } })
  local ready
  hs.ensure(function(e, r) ready = r or e end)
  wait_for(function() return ready end, 'the start')
  local pid = hs.client.pid
  local timer = uv.new_timer()
  timer:start(300, 0, function() uv.kill(pid, 9) end)
  local answer
  hs.call_tool('editor_wait', {}, 'call-5', function(e, r) answer = { e, r } end)
  wait_for(function() return answer end, 'the failure', 10000)
  assert(answer[2] == nil and answer[1].kind == 'sidecar_exited', vim.inspect(answer))
  wait_for(function() return last_notification():find('stopped unexpectedly', 1, true) end, 'the notice')
  assert(notifications[#notifications].level == vim.log.levels.ERROR)
  contains(shows('HarnessCatalog'), '- review:')
end)

check(':HarnessStop says what is gone, and the next command says it starts anew', function()
  vim.cmd('HarnessActivate review')
  wait_for(function() return output_text():find('# Reviewing', 1, true) end, 'the activation')
  vim.cmd('HarnessStop')
  contains(last_notification(), 'stopped; thread-1 and its activations are gone')
  vim.cmd('HarnessCatalog')
  wait_for(function() return last_notification():find('started a new sidecar', 1, true) end, 'the new start')
  contains(last_notification(), 'activations of thread-1 are gone')
end)

check(':HarnessResume brings the activated skills back in a new sidecar; :HarnessDeactivate ends one', function()
  local shown = hs.shown_count
  vim.cmd('HarnessActivate review')
  wait_for(function() return hs.shown_count > shown end, 'the activation')
  local before = hs.client
  vim.cmd('HarnessResume')
  wait_for(function() return last_notification():find('resumed session nvim:', 1, true) end, 'the resume')
  assert(hs.client ~= before, 'the same sidecar')
  local built
  hs.call('context/build', {}, function(err, result) built = result or err end)
  wait_for(function() return built end, 'context/build')
  assert(built.activeSkills and #built.activeSkills == 1 and built.activeSkills[1].name == 'review',
    vim.inspect(built.activeSkills or built))
  vim.cmd('HarnessDeactivate review')
  wait_for(function() return last_notification():find('deactivated review', 1, true) end, 'the deactivation')
  contains(last_notification(), 'active: none')
end)

check('a command that cannot start says why, without a Lua path', function()
  hs.stop({ quiet = true })
  hs.setup({ cmd = { '/nonexistent/harness-sidecar' }, roots = roots })
  vim.cmd('HarnessCatalog')
  wait_for(function() return last_notification():find('spawn_failed', 1, true) end, 'the error')
  contains(last_notification(), 'cannot start "/nonexistent/harness-sidecar": not an executable')
  assert(not last_notification():find('%.lua:%d'), last_notification())
  hs.setup({ cmd = cmd, roots = roots, trusted_extensions = { 'review-extension' } })
end)

check('a project cannot trust its own extension (attacker test)', function()
  hs.stop({ quiet = true })
  local project = vim.fn.tempname()
  local marker = project .. '/pwned'
  vim.fn.mkdir(project .. '/.agents/extensions', 'p')
  vim.fn.writefile({ 'open(' .. vim.inspect(marker) .. ', "w").close()', 'def activate(api):', '    pass' },
    project .. '/.agents/extensions/evil.py')
  -- What a cloned project might ship to ask for trust: none of it is read.
  vim.fn.writefile({ "require('harness_sidecar').setup({ trusted_extensions = { 'evil' } })" }, project .. '/.nvim.lua')
  vim.fn.writefile({ 'lua require("harness_sidecar").setup({ trusted_extensions = { "evil" } })' }, project .. '/.exrc')
  vim.fn.writefile({ '{"trustedExtensions": ["evil"]}' }, project .. '/.harness-sidecar.json')
  local cwd = vim.fn.getcwd()
  vim.cmd('cd ' .. project)
  hs.reset()
  hs.setup({ cmd = cmd }) -- default roots: <cwd>/.agents, ~/.agents; nothing trusted
  local text = shows('HarnessCatalog')
  vim.cmd('cd ' .. cwd)
  contains(text, '- evil: skipped_untrusted')
  assert(vim.fn.filereadable(marker) == 0, 'the project ran its own code')
  hs.stop({ quiet = true })
  hs.setup({ cmd = cmd, roots = roots, trusted_extensions = { 'review-extension' } })
end)

check(':help harness_sidecar is found as cloned (doc/tags is in git; no :helptags run)', function()
  vim.cmd('help harness_sidecar')
  contains(buffer_text(), '*harness_sidecar-trust*')
  contains(vim.api.nvim_buf_get_name(0), 'doc/harness_sidecar.txt')
  vim.cmd('help :HarnessDiagnostics')
  vim.cmd('close')
end)

check('the language server part says what it needs on this version', function()
  local before = #notifications
  hs.setup({ cmd = cmd, roots = roots, lsp = true })
  if vim.lsp.start then
    assert(#notifications == before, vim.inspect(notifications[#notifications]))
  else
    assert(#notifications == before + 1, vim.inspect(notifications))
    contains(last_notification(), 'needs Neovim 0.8 or newer')
    vim.cmd('edit ' .. workspace .. '/broken/skills/wrong-name/SKILL.md') -- no traceback when a file opens
    hs.setup({ cmd = cmd, roots = roots, lsp = true })
    assert(#notifications == before + 1, 'said twice')
  end
  vim.api.nvim_create_augroup('harness_sidecar_lsp', { clear = true })
  hs.setup({ cmd = cmd, roots = roots, trusted_extensions = { 'review-extension' }, lsp = false })
end)

check(':checkhealth harness_sidecar checks the sidecar, the catalog and the LSP mode', function()
  hs.stop({ quiet = true })
  hs.setup({ cmd = cmd, roots = { workspace .. '/broken', workspace .. '/project' } })
  vim.cmd('checkhealth harness_sidecar')
  local text = buffer_text()
  contains(text, 'harness-sidecar 0.1.0 answers (protocol 4)')
  contains(text, 'catalog: ')
  contains(text, 'name_mismatch')
  contains(text, ':HarnessDiagnostics')
  contains(text, 'the LSP mode starts')
end)

check(':HarnessCatalog lists command hooks with their trust state; trust comes from setup() only', function()
  hs.stop({ quiet = true, wait = true })
  local function declare(matcher)
    local root = vim.fn.tempname()
    vim.fn.mkdir(root, 'p')
    vim.fn.writefile({ vim.fn.json_encode({ hooks = { PreToolUse = { { matcher = matcher,
      hooks = { { type = 'command', command = 'exit 2' } } } } } }) }, root .. '/hooks.json')
    return root
  end
  local mine, theirs = declare('Bash'), declare('Write')
  hs.setup({ cmd = cmd, roots = { mine, theirs }, trusted_hooks = { { path = mine .. '/hooks.json' } } })
  local text = shows('HarnessCatalog')
  contains(text, '- PreToolUse [Bash]: exit 2 — trusted (root:' .. mine .. '/hooks.json)')
  contains(text, '- PreToolUse [Write]: exit 2 — not trusted (root:' .. theirs .. '/hooks.json)')
  hs.stop({ quiet = true, wait = true })
  hs.setup({ cmd = cmd, roots = roots, trusted_extensions = { 'review-extension' }, trusted_hooks = {} })
end)

-- Real plugins used unchanged (tests/fixtures/plugins, each with its SOURCE.md).
local fixtures = vim.fn.fnamemodify(here, ':p:h:h:h:h') .. '/tests/fixtures/plugins'

check(':HarnessPlugins shows plugins with their parts and trust state; a project trusts neither its plugin nor its hooks (attacker test)', function()
  hs.stop({ quiet = true, wait = true })
  -- a project that ships a plugin in its root and asks, in every file a project could, to trust it
  local project = vim.fn.tempname()
  vim.fn.mkdir(project .. '/.agents/plugins', 'p')
  vim.fn.system({ 'cp', '-R', fixtures .. '/explanatory-output-style', project .. '/.agents/plugins/' })
  vim.fn.writefile({ vim.fn.json_encode({ hooks = { PreToolUse = { { matcher = 'Bash',
    hooks = { { type = 'command', command = 'exit 0' } } } } } }) }, project .. '/.agents/hooks.json')
  local asks = "require('harness_sidecar').setup({ trusted_plugins = { 'explanatory-output-style' }, "
    .. "trusted_hooks = { { path = vim.fn.getcwd() .. '/.agents/hooks.json' } } })"
  vim.fn.writefile({ asks }, project .. '/.nvim.lua')
  vim.fn.writefile({ 'lua ' .. asks }, project .. '/.exrc')
  vim.fn.writefile({ '{"trustedPlugins": [{"name": "explanatory-output-style"}], "trustedHooks": [{"path": ".agents/hooks.json"}]}' },
    project .. '/.harness-sidecar.json')
  vim.env.HS_TEST_PLUGINS = fixtures
  local cwd = vim.fn.getcwd()
  vim.cmd('cd ' .. project)
  hs.reset()
  -- plugins written as roots are: $VAR and relative to the cwd
  hs.setup({ cmd = cmd, roots = { '.agents' }, plugins = { '$HS_TEST_PLUGINS/example-plugin',
    vim.fn.fnamemodify(fixtures, ':.') .. '/debugging-toolkit', fixtures .. '/commit-commands' },
    disabled_plugins = { 'commit-commands' }, trusted_plugins = { { name = 'debugging-toolkit' } } })
  local text = shows('HarnessPlugins')
  vim.cmd('cd ' .. cwd)
  contains(text, '## explanatory-output-style 1.0.0 (claude) — not trusted\n' .. project .. '/.agents/plugins/explanatory-output-style')
  contains(text, '- hook SessionStart: bash "${CLAUDE_PLUGIN_ROOT}/hooks-handlers/session-start.sh" — not trusted')
  contains(text, '## example-plugin (claude) — not trusted\n' .. fixtures .. '/example-plugin\n'
    .. '- skill example-plugin:example-command\n- skill example-plugin:example-skill\n'
    .. '- command example-plugin:example-command <required-arg> [optional-arg]\n'
    .. '- MCP server example-server (http https://mcp.example.com/api, not started here) — not trusted')
  contains(text, '## debugging-toolkit 1.2.1 (codex) — data only\n' .. fixtures .. '/debugging-toolkit\n'
    .. '- command debugging-toolkit:smart-debug\n- agent debugging-toolkit-debugger (listed, never run)')
  assert(not text:find('commit-commands', 1, true), 'a disabled plugin is shown')
  local catalog = shows('HarnessCatalog')
  contains(catalog, '- explanatory-output-style: not trusted')
  contains(catalog, '- PreToolUse [Bash]: exit 0 — not trusted (root:' .. project .. '/.agents/hooks.json)')
  -- the user trusts it in setup(): its hook is trusted now
  hs.stop({ quiet = true, wait = true })
  vim.cmd('cd ' .. project)
  hs.setup({ trusted_plugins = { { name = 'explanatory-output-style' } } })
  text = shows('HarnessPlugins')
  vim.cmd('cd ' .. cwd)
  contains(text, '## explanatory-output-style 1.0.0 (claude) — trusted')
  contains(text, '- hook SessionStart: bash "${CLAUDE_PLUGIN_ROOT}/hooks-handlers/session-start.sh" — trusted')
end)

check(':HarnessRender completes command templates and renders one from the rest of the line', function()
  local names = vim.fn.getcompletion('HarnessRender example', 'cmdline')
  assert(vim.deep_equal(names, { 'example-plugin:example-command' }), vim.inspect(names))
  local text = shows('HarnessRender example-plugin:example-command fix "the flaky test"  now')
  contains(text, '# Example Command (Legacy `commands/` Format)')
  contains(text, 'The user invoked this command with: fix "the flaky test"  now\n')
  -- from the picker: the command template, then one free text
  local select, input = vim.ui.select, vim.ui.input
  local offered, asked
  vim.ui.select = function(items, opts, on_choice)
    offered = vim.tbl_map(opts.format_item, items)
    for _, item in ipairs(items) do
      if item.name == 'debugging-toolkit:smart-debug' then
        return on_choice(item)
      end
    end
  end
  vim.ui.input = function(opts, on_confirm)
    asked = opts.prompt
    on_confirm('a crash in parse()')
  end
  text = shows('HarnessRender')
  vim.ui.select, vim.ui.input = select, input
  assert(vim.tbl_contains(offered, 'example-plugin:example-command — An example slash command that demonstrates command '
    .. 'frontmatter options (legacy format)'), vim.inspect(offered))
  contains(asked, 'debugging-toolkit:smart-debug')
  contains(text, 'a crash in parse()')
  hs.stop({ quiet = true, wait = true })
  hs.reset()
  hs.setup({ cmd = cmd, roots = roots, trusted_extensions = { 'review-extension' } })
end)

--- The text of :checkhealth harness_sidecar.
local function health_text()
  vim.cmd('checkhealth harness_sidecar')
  local text = buffer_text()
  vim.cmd('bwipeout!')
  return text
end

--- A plugin whose hooks file is not JSON (invalid_hooks: an error only a start naming the plugin sees).
local function broken_plugin()
  local folder = vim.fn.tempname() .. '/badplug'
  vim.fn.mkdir(folder .. '/.claude-plugin', 'p')
  vim.fn.mkdir(folder .. '/hooks', 'p')
  vim.fn.writefile({ '{"name": "badplug", "version": "0.1.0"}' }, folder .. '/.claude-plugin/plugin.json')
  vim.fn.writefile({ '{"hooks": {' }, folder .. '/hooks/hooks.json')
  return folder
end

check(':checkhealth lists the very diagnostics :HarnessDiagnostics lists (setup()\'s plugins and trust included)', function()
  hs.stop({ quiet = true, wait = true })
  hs.reset()
  hs.setup({ cmd = cmd, roots = { workspace .. '/project' }, plugins = { broken_plugin() },
    trusted_plugins = { { name = 'no-such-plugin' } } })
  -- without a running session: checkhealth starts the session's thread itself
  local text = health_text()
  assert(hs.client == nil, 'checkhealth started the session')
  local before = vim.fn.getqflist({ id = 0 }).id
  vim.cmd('HarnessDiagnostics')
  wait_for(function() return vim.fn.getqflist({ id = 0 }).id ~= before end, 'the quickfix list')
  local items = vim.fn.getqflist()
  local kinds = vim.tbl_map(function(item) return item.text:match('^[%w_]+') end, items)
  assert(vim.tbl_contains(kinds, 'invalid_hooks') and vim.tbl_contains(kinds, 'trust_ignored'), vim.inspect(kinds))
  assert(not text:find('no catalog diagnostics', 1, true), text)
  for _, item in ipairs(items) do
    contains(text, item.text)
  end
  contains(text, string.format('%d catalog diagnostic(s)', #items))
  vim.cmd('cclose')
  -- with the session running: its own thread, the one :HarnessDiagnostics read
  text = health_text()
  contains(text, 'of the running session, ' .. hs.thread.threadId)
  for _, item in ipairs(items) do
    contains(text, item.text)
  end
  contains(text, string.format('%d catalog diagnostic(s)', #items))
end)

check(':checkhealth reports plugins, command templates and hooks with their trust', function()
  hs.stop({ quiet = true, wait = true })
  local mine = vim.fn.tempname()
  vim.fn.mkdir(mine, 'p')
  vim.fn.writefile({ vim.fn.json_encode({ hooks = { PreToolUse = { { matcher = 'Bash',
    hooks = { { type = 'command', command = 'exit 2' } } } } } }) }, mine .. '/hooks.json')
  hs.reset()
  hs.setup({ cmd = cmd, roots = { mine }, trusted_hooks = { { path = mine .. '/hooks.json' } },
    plugins = { fixtures .. '/explanatory-output-style', fixtures .. '/example-plugin', fixtures .. '/debugging-toolkit' },
    trusted_plugins = { { name = 'debugging-toolkit' } } })
  local text = health_text()
  contains(text, 'plugin explanatory-output-style 1.0.0 (claude): 0 skill(s), 0 command(s), 1 hook(s), 0 MCP server(s), 0 extension(s) — not trusted')
  contains(text, 'plugin debugging-toolkit 1.2.1 (codex): 0 skill(s), 1 command(s)')
  contains(text, '— data only')
  contains(text, 'command template(s), data that needs no trust: ')
  contains(text, 'example-plugin:example-command')
  contains(text, 'debugging-toolkit:smart-debug')
  contains(text, 'hook SessionStart: bash "${CLAUDE_PLUGIN_ROOT}/hooks-handlers/session-start.sh" (plugin:explanatory-output-style) — not trusted: never runs')
  contains(text, 'hook PreToolUse [Bash]: exit 2 (root:' .. mine .. '/hooks.json) — trusted: runs')
  contains(text, '1 of 2 hook(s) trusted')
  hs.reset()
  hs.setup({ cmd = cmd, roots = roots, trusted_extensions = { 'review-extension' } })
end)

hs.stop({ quiet = true, wait = true })
t.finish()
