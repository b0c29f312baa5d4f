-- A script tool: `run` gets the model's arguments and returns the result (a table becomes JSON).
-- It runs in a sandbox: no files, no network, capped memory and instructions.
function run(args)
  local count = 0
  for _ in string.gmatch(args.text, "%S+") do
    count = count + 1
  end
  return { words = count }
end
