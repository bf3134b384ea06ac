-- The plugin's own prompts: a select (confirm is a select of Allow / Deny) and an input, each a
-- floating window that never blocks the editor (Neovim's stock vim.ui.select and vim.ui.input
-- wait in inputlist() / input() until the user answers). Used by harness_sidecar.ui while
-- vim.ui.select / vim.ui.input are the stock ones; a UI plugin's replacements are used as they are.
--
-- select: <CR> takes the entry under the cursor, 1-9 the entry of that number; q, <Esc> or closing
-- the window answers nothing (nil). input: <CR> answers the text, <Esc> or closing answers nil.
-- Each returns close(), which closes the prompt without an answer (a withdrawn question).
-- While you type a command line the prompt waits for it to end, then opens.
local M = {}

M.open = {} -- the prompts now open: win -> { buf, kind } (tests and :HarnessLog look at it)

local function width_of(lines)
  local width = 0
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  return width
end

--- Split text into lines of at most `width` display cells, at spaces where possible.
local function wrap(text, width)
  local lines, line = {}, ''
  for word in tostring(text):gmatch('%S+') do
    if line == '' then
      line = word
    elseif vim.fn.strdisplaywidth(line .. ' ' .. word) <= width then
      line = line .. ' ' .. word
    else
      table.insert(lines, line)
      line = word
    end
  end
  table.insert(lines, line)
  return lines
end

--- A scratch buffer in a centred float of `width` x `height`; returns buf, win.
local function float(buf, width, height)
  width = math.min(width, math.max(10, vim.o.columns - 4))
  height = math.min(height, math.max(1, vim.o.lines - 4))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor', style = 'minimal', border = 'rounded', width = width, height = height,
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1), col = math.max(0, math.floor((vim.o.columns - width) / 2)),
  })
  vim.wo[win].wrap = true
  return win
end

--- Run `open()` now, or once the command line the user is typing is done. Returns cancel().
local function when_free(open)
  local cancelled, close = false, nil
  local function run()
    if not cancelled then
      close = open()
    end
  end
  if vim.api.nvim_get_mode().mode:sub(1, 1) == 'c' then
    vim.api.nvim_create_autocmd('CmdlineLeave', { once = true, callback = function() vim.schedule(run) end })
  else
    run()
  end
  return function()
    cancelled = true
    if close then
      close()
    end
  end
end

--- Open the float, call `answer(value)` at most once, and return close() (no answer).
local function prompt_window(kind, buf, width, height, on_close)
  local previous = vim.api.nvim_get_current_win()
  local win = float(buf, width, height)
  M.open[win] = { buf = buf, kind = kind }
  local done = false
  local function finish(answer, ...)
    if done then
      return
    end
    done = true
    M.open[win] = nil
    if vim.api.nvim_win_is_valid(win) then
      pcall(vim.api.nvim_win_close, win, true)
    end
    if vim.api.nvim_buf_is_valid(buf) then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
    if vim.api.nvim_win_is_valid(previous) then
      pcall(vim.api.nvim_set_current_win, previous)
    end
    if answer then
      answer(...)
    end
  end
  -- closed another way (:q, <C-w>c): no answer
  vim.api.nvim_create_autocmd({ 'BufWipeout', 'BufHidden' }, { buffer = buf, once = true, callback = function()
    vim.schedule(function() finish(on_close) end)
  end })
  return win, finish
end

local function map(buf, modes, lhs, fn)
  for _, mode in ipairs(modes) do
    vim.api.nvim_buf_set_keymap(buf, mode, lhs, '', { noremap = true, nowait = true, silent = true, callback = fn })
  end
end

--- vim.ui.select's interface in a float; returns close().
function M.select(items, opts, on_choice)
  opts = opts or {}
  local format = opts.format_item or tostring
  return when_free(function()
    local width = math.max(40, math.min(100, vim.o.columns - 4))
    local lines = wrap(opts.prompt or 'Select one of:', width - 2)
    local header = #lines
    table.insert(lines, string.rep('─', math.min(width - 2, math.max(width_of(lines), 10))))
    for i, item in ipairs(items) do
      table.insert(lines, string.format('%d. %s', i, (tostring(format(item)):gsub('\n', ' '))))
    end
    local first = header + 2
    local buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].modifiable = false
    vim.bo[buf].bufhidden = 'wipe'
    vim.bo[buf].filetype = 'harness_sidecar_prompt'
    local win, finish = prompt_window('select', buf, math.max(width_of(lines), 20) + 2, #lines,
      function() on_choice(nil, nil) end)
    pcall(vim.api.nvim_win_set_cursor, win, { first, 0 })
    local function choose(index)
      if items[index] ~= nil then
        finish(on_choice, items[index], index)
      end
    end
    map(buf, { 'n' }, '<CR>', function() choose(vim.api.nvim_win_get_cursor(0)[1] - first + 1) end)
    for i = 1, math.min(#items, 9) do
      map(buf, { 'n' }, tostring(i), function() choose(i) end)
    end
    for _, key in ipairs({ 'q', '<Esc>' }) do
      map(buf, { 'n' }, key, function() finish(on_choice, nil, nil) end)
    end
    return function() finish(nil) end
  end)
end

--- vim.ui.input's interface in a float (a prompt buffer); returns close().
function M.input(opts, on_confirm)
  opts = opts or {}
  return when_free(function()
    local text = opts.prompt or 'Input: '
    local buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].buftype = 'prompt'
    vim.bo[buf].bufhidden = 'wipe'
    vim.bo[buf].filetype = 'harness_sidecar_prompt'
    vim.fn.prompt_setprompt(buf, text)
    local width = math.max(40, math.min(100, vim.fn.strdisplaywidth(text) + 30))
    local height = math.max(1, math.ceil((vim.fn.strdisplaywidth(text) + 30) / width))
    local _, finish = prompt_window('input', buf, width, height, function() on_confirm(nil) end)
    vim.fn.prompt_setcallback(buf, function(value)
      vim.cmd('stopinsert')
      finish(on_confirm, value)
    end)
    map(buf, { 'i', 'n' }, '<Esc>', function()
      vim.cmd('stopinsert')
      finish(on_confirm, nil)
    end)
    if opts.default and opts.default ~= '' then
      vim.api.nvim_buf_set_lines(buf, -2, -1, false, { text .. opts.default })
    end
    vim.cmd('startinsert!')
    return function()
      if vim.api.nvim_get_current_buf() == buf then
        vim.cmd('stopinsert')
      end
      finish(nil)
    end
  end)
end

return M
