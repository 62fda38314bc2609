-- Ground truth for benchmarks/check_corpus.py: whether a Lua source parses, by Lua's own compiler (`load`
-- compiles the chunk as `luac -p` does, and runs nothing).
-- Protocol (stdin, stdout): a line "LENGTH" (bytes), then the source; the answer is one line: "ok", or
-- "error LINE MESSAGE". Usage: lua5.4 parse_lua.lua
io.stdout:setvbuf("line")
while true do
  local header = io.stdin:read("l")
  if not header then break end
  local source = io.stdin:read(tonumber(header)) or ""
  local chunk, message = load(source, "=source", "t")
  if chunk then
    io.stdout:write("ok\n")
  else
    local line = message:match(":(%d+):") or "0"
    io.stdout:write("error " .. line .. " " .. message:gsub("\n", " ") .. "\n")
  end
end
