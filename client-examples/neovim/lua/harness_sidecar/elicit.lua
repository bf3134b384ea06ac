-- ui/elicit (:help harness_sidecar-ui): an MCP server's elicitation/create, relayed by the sidecar,
-- shown as a form of the requested schema's flat fields, one question at a time, in the schema's
-- order: vim.ui.select for an enum (or oneOf) field and for a boolean (Yes / No), vim.ui.input for a
-- string, number or integer field (a number that does not parse is asked again). Through
-- harness_sidecar.ui, so a replaced vim.ui shows them, and the stock one never blocks the editor.
--
-- Answered with MCP's ElicitResult: {action = 'accept', content = {...}} once every field is
-- answered; closing any question (no choice, <Esc>) is {action = 'decline'}, as is a required field
-- left empty (an empty optional one is left out).
local M = {}

local function is_nil(value)
  return value == nil or value == vim.NIL
end

local function one_line(text)
  return (tostring(text or ''):gsub('%s*\n%s*', ' '))
end

--- The fields of `schema` in order: { name, field, required }. JSON objects lose their key order in
--- Lua; the order is that of `schema.required` first, then the other names sorted.
function M.fields(schema)
  local properties = type(schema) == 'table' and type(schema.properties) == 'table' and schema.properties or {}
  local required, seen, out = {}, {}, {}
  for _, name in ipairs(type(schema.required) == 'table' and schema.required or {}) do
    required[name] = true
    if properties[name] ~= nil and not seen[name] then
      seen[name] = true
      table.insert(out, { name = name, field = properties[name], required = true })
    end
  end
  local rest = {}
  for name in pairs(properties) do
    if not seen[name] then
      table.insert(rest, name)
    end
  end
  table.sort(rest)
  for _, name in ipairs(rest) do
    table.insert(out, { name = name, field = properties[name], required = required[name] == true })
  end
  return out
end

--- The choices of an enum, oneOf or boolean field ({ label, value }), or nil for a typed one.
function M.choices(field)
  if type(field.enum) == 'table' then
    local out = {}
    for i, value in ipairs(field.enum) do
      local names = type(field.enumNames) == 'table' and field.enumNames or {}
      table.insert(out, { label = tostring(is_nil(names[i]) and value or names[i]), value = value })
    end
    return out
  end
  if type(field.oneOf) == 'table' then
    local out = {}
    for _, option in ipairs(field.oneOf) do
      table.insert(out, { label = tostring(is_nil(option.title) and option.const or option.title), value = option.const })
    end
    return out
  end
  if field.type == 'boolean' then
    return { { label = 'Yes', value = true }, { label = 'No', value = false } }
  end
end

--- A typed answer as the field's value: a number for number/integer (nil when it does not parse).
function M.parse(field, text)
  if field.type == 'integer' then
    return text:match('^%s*-?%d+%s*$') and math.floor(tonumber(text)) or nil
  end
  if field.type == 'number' then
    return tonumber(text)
  end
  return text
end

--- Ask `params` (ui/elicit) with `ui` (harness_sidecar.ui: its select and input); `reply(result)` once.
--- Returns a function that closes the question on screen (the sidecar stopped waiting).
function M.ask(ui, params, reply)
  local fields = M.fields(params.requestedSchema)
  local content, closed, close_current = vim.empty_dict(), false, nil
  local head = string.format('%s asks — %s', tostring(params.server or params.extensionId), one_line(params.message))
  local function decline()
    closed = true
    reply({ action = 'decline' })
  end
  local step
  step = function(i, again)
    if closed then
      return
    end
    local entry = fields[i]
    if not entry then
      closed = true
      return reply({ action = 'accept', content = content })
    end
    local field = type(entry.field) == 'table' and entry.field or {}
    local label = tostring(is_nil(field.title) and entry.name or field.title)
    if not is_nil(field.description) then
      label = label .. ' (' .. one_line(field.description) .. ')'
    end
    local choices = M.choices(field)
    if choices then
      close_current = ui.select(choices, {
        prompt = head .. ': ' .. label,
        kind = 'harness_sidecar.elicit',
        format_item = function(choice) return choice.label end,
      }, function(choice)
        if closed then
          return
        end
        if not choice then
          return decline()
        end
        content[entry.name] = choice.value
        step(i + 1)
      end)
      return
    end
    local text = head .. ': ' .. label .. (entry.required and '' or ' [optional]')
    if again then
      text = text .. ' — a ' .. tostring(field.type) .. ', please'
    end
    close_current = ui.input({ prompt = text .. ': ', default = is_nil(field.default) and nil or tostring(field.default) },
      function(value)
        if closed then
          return
        end
        if value == nil then
          return decline()
        end
        if value == '' then
          if entry.required then
            return decline()
          end
          return step(i + 1)
        end
        local parsed = M.parse(field, value)
        if parsed == nil then
          return step(i, true)
        end
        content[entry.name] = parsed
        step(i + 1)
      end)
  end
  step(1)
  return function()
    closed = true
    if type(close_current) == 'function' then
      close_current()
    end
  end
end

return M
